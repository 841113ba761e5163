/** High availability's settings: the default failover timeout of a pair. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const haOptions = Type.Object({
  haTimeout: Option.int({
    minimum: 2000,
    maximum: 3_600_000,
    default: 15_000,
    description:
      'milliseconds a paired active edge may go without renewing its lease before the standby takes over (a pair configured without timeoutSeconds)',
  }),
});
