/** The log forwarding module's settings: the bounds of its disk queue and of its resend window. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const logForwardingOptions = Type.Object({
  logForwardingQueueMessages: Option.int({
    minimum: 100,
    maximum: 10_000_000,
    default: 100_000,
    description:
      'log entries the forwarding queue (on disk) keeps while the receiver is away; past it new entries are dropped and counted',
  }),
  logForwardingQueueBytes: Option.int({
    minimum: 65_536,
    maximum: 4 * 1024 * 1024 * 1024,
    default: 64 * 1024 * 1024,
    description: 'bytes of log entries the forwarding queue keeps at most (same rule as the message bound)',
  }),
  logForwardingConfirmMs: Option.int({
    minimum: 0,
    maximum: 600_000,
    default: 2000,
    description:
      'syslog over TCP and TLS has no acknowledgement: entries written in this window before a connection drops are sent again',
  }),
});
