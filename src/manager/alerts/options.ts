/** The alerts module's settings: how often the rules are evaluated and how notifications are sent. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const alertsOptions = Type.Object({
  alertEvaluationInterval: Option.int({
    minimum: 100,
    maximum: 3_600_000,
    default: 5000,
    description: 'milliseconds between two evaluations of the platform rules over the fleet',
  }),
  alertNotificationLease: Option.int({
    minimum: 1000,
    maximum: 3_600_000,
    default: 30_000,
    description:
      'milliseconds a notification being sent stays claimed by this process; a stopped manager’s claims are taken over after it',
  }),
  alertNotificationAttempts: Option.int({
    minimum: 1,
    maximum: 100,
    default: 10,
    description: 'attempts to send one notification (retried with backoff) before it is marked FAILED',
  }),
  alertNotificationBackoffMax: Option.int({
    minimum: 100,
    maximum: 86_400_000,
    default: 300_000,
    description: 'longest wait between two attempts to send a notification, milliseconds',
  }),
});
