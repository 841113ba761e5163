/** The wire shapes of the audit trail's routes. */
import { Type, type Static } from '@sinclair/typebox';

export const AuditQuery = Type.Object(
  {
    offset: Type.Optional(Type.String()),
    limit: Type.Optional(Type.String()),
    sort: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
    filter: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
    from: Type.Optional(Type.String({ description: 'ISO time or epoch milliseconds, inclusive' })),
    to: Type.Optional(Type.String({ description: 'ISO time or epoch milliseconds, inclusive' })),
    action: Type.Optional(Type.String()),
    module: Type.Optional(Type.String()),
    origin: Type.Optional(Type.String()),
    actor: Type.Optional(Type.String()),
    projectId: Type.Optional(Type.String()),
    companyId: Type.Optional(Type.String()),
    outcome: Type.Optional(Type.String()),
    text: Type.Optional(Type.String()),
    format: Type.Optional(Type.String({ description: 'export: csv (default) or pdf' })),
  },
  { additionalProperties: true },
);
export type AuditQuery = Static<typeof AuditQuery>;

export const SettingsBody = Type.Object(
  { retentionDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 3650 })) },
  { additionalProperties: false },
);
export type SettingsBody = Static<typeof SettingsBody>;

export const ApiActivityBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    retentionDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  },
  { additionalProperties: false },
);
export type ApiActivityBody = Static<typeof ApiActivityBody>;
