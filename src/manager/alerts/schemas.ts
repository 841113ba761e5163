/** Wire shapes of the alert routes: platform rules, alert triggers, incident settings, incidents. */
import { Type, type Static } from '@sinclair/typebox';
import { SEVERITIES } from './catalog.js';
import { CHANNELS, MAX_RECIPIENTS, MAX_WEBHOOKS } from './settings.js';
import { SCOPE_TYPES } from './service.js';

const Strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 100 });
const Severity = Type.Union(SEVERITIES.map((s) => Type.Literal(s)));
const Channel = Type.Union(CHANNELS.map((c) => Type.Literal(c)));
const Secret = Type.Union([Type.String({ minLength: 1, maxLength: 1000 }), Type.Null()]);
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const RuleParams = Type.Object({ ruleKey: Type.String({ minLength: 1, maxLength: 100 }) });
export type RuleParams = Static<typeof RuleParams>;
export const ProjectParams = Type.Object({ projectId: Id });
export type ProjectParams = Static<typeof ProjectParams>;
export const TriggerParams = Type.Object({ triggerId: Id });
export type TriggerParams = Static<typeof TriggerParams>;
export const IncidentParams = Type.Object({ incidentId: Id });
export type IncidentParams = Static<typeof IncidentParams>;

export const UpdateRuleBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    severity: Type.Optional(Severity),
    params: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Number(), { maxProperties: 20 })),
  },
  Strict,
);
export type UpdateRuleBody = Static<typeof UpdateRuleBody>;

export const RuleNotificationsBody = Type.Object(
  {
    projectId: Id,
    notify: Type.Boolean(),
    channels: Type.Optional(Type.Array(Channel, { maxItems: CHANNELS.length })),
  },
  Strict,
);
export type RuleNotificationsBody = Static<typeof RuleNotificationsBody>;

export const CreateTriggerBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    scopeType: Type.Union(SCOPE_TYPES.map((s) => Type.Literal(s))),
    scopeId: Type.Optional(Id),
    ruleKey: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
    severity: Severity,
    enabled: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type CreateTriggerBody = Static<typeof CreateTriggerBody>;

export const DestinationsBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    minSeverity: Type.Optional(Severity),
    emails: Type.Optional(
      Type.Array(Type.String({ minLength: 3, maxLength: 320 }), { maxItems: MAX_RECIPIENTS }),
    ),
    webhooks: Type.Optional(
      Type.Array(
        Type.Object(
          { url: Type.String({ minLength: 1, maxLength: 2000 }), secret: Type.Optional(Secret) },
          Strict,
        ),
        { maxItems: MAX_WEBHOOKS },
      ),
    ),
    mqtt: Type.Optional(Type.Boolean()),
    mqttTopic: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 500 }))),
  },
  Strict,
);
export type DestinationsBody = Static<typeof DestinationsBody>;

export const InstanceSettingsBody = Type.Object(
  {
    autoResolve: Type.Optional(Type.Boolean()),
    rateLimitPerMinute: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
    smtp: Type.Optional(
      Type.Union([
        Type.Object(
          {
            host: Type.String({ minLength: 1, maxLength: 253 }),
            port: Type.Integer({ minimum: 1, maximum: 65_535 }),
            security: Type.Optional(
              Type.Union([Type.Literal('none'), Type.Literal('starttls'), Type.Literal('tls')]),
            ),
            username: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 320 }))),
            password: Type.Optional(Secret),
            from: Type.String({ minLength: 3, maxLength: 400 }),
            rejectUnauthorized: Type.Optional(Type.Boolean()),
          },
          Strict,
        ),
        Type.Null(),
      ]),
    ),
    mqtt: Type.Optional(
      Type.Union([
        Type.Object(
          {
            url: Type.String({ minLength: 1, maxLength: 2000 }),
            username: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 320 }))),
            password: Type.Optional(Secret),
            topicPrefix: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
            qos: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)])),
            rejectUnauthorized: Type.Optional(Type.Boolean()),
          },
          Strict,
        ),
        Type.Null(),
      ]),
    ),
    notify: Type.Optional(DestinationsBody),
  },
  Strict,
);
export type InstanceSettingsBody = Static<typeof InstanceSettingsBody>;

/** Incidents to resolve or delete: `ids` in the body, or one `id` in the query string. */
export const IncidentIdsBody = Type.Object({ ids: Type.Array(Id, { minItems: 1, maxItems: 1000 }) }, Strict);
export type IncidentIdsBody = Static<typeof IncidentIdsBody>;
