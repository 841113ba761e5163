/** The audit trail's settings (retention and the request log are runtime settings: `/admin/v1/action-log/settings`). */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const auditOptions = Type.Object({
  auditTrail: Option.bool({
    default: true,
    description:
      'record every mutating call (main and admin APIs, bridged calls, template tasks, token changes) in the hash-chained audit trail; off only to measure its cost',
  }),
  auditHousekeepingInterval: Option.int({
    minimum: 1,
    maximum: 86_400,
    default: 3600,
    description:
      'seconds between two runs of the audit housekeeping job (retention of records and of the request log)',
  }),
});
