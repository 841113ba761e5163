/** The wire shapes of `/dm/v2/log-forwarding/*`. Bodies are strict: an unknown field is a 400. */
import { Type, type Static } from '@sinclair/typebox';
import { LOG_LEVEL_NAMES } from '../../kernel/logging/log-store.js';
import { FACILITIES, MAX_COMPONENT_FILTERS } from './config.js';

const Strict = { additionalProperties: false } as const;
const Pem = Type.String({ minLength: 1, maxLength: 64 * 1024 });

export const TlsSchema = Type.Object(
  {
    ca: Type.Optional(Pem),
    cert: Type.Optional(Pem),
    key: Type.Optional(Pem),
    serverName: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
    insecureSkipVerify: Type.Optional(Type.Boolean()),
  },
  Strict,
);

export const SyslogTargetSchema = Type.Object(
  {
    type: Type.Literal('syslog'),
    protocol: Type.Union([Type.Literal('udp'), Type.Literal('tcp'), Type.Literal('tls')]),
    host: Type.String({ minLength: 1, maxLength: 253 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    facility: Type.Optional(Type.Union(FACILITIES.map((f) => Type.Literal(f)))),
    appName: Type.Optional(Type.String({ minLength: 1, maxLength: 48 })),
    hostname: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    maxMessageBytes: Type.Optional(Type.Integer({ minimum: 480, maximum: 65_000 })),
    tls: Type.Optional(TlsSchema),
  },
  Strict,
);

export const HttpTargetSchema = Type.Object(
  {
    type: Type.Literal('http'),
    url: Type.String({ minLength: 1, maxLength: 2000 }),
    headers: Type.Optional(
      Type.Record(Type.String({ maxLength: 200 }), Type.String({ maxLength: 8192 }), { maxProperties: 50 }),
    ),
    batchSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000 })),
    tls: Type.Optional(TlsSchema),
  },
  Strict,
);

export const FiltersSchema = Type.Object(
  {
    level: Type.Optional(Type.Union(LOG_LEVEL_NAMES.map((l) => Type.Literal(l)))),
    components: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: MAX_COMPONENT_FILTERS }),
    ),
  },
  Strict,
);

export const ConfigBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    target: Type.Optional(Type.Union([SyslogTargetSchema, HttpTargetSchema, Type.Null()])),
    filters: Type.Optional(FiltersSchema),
  },
  Strict,
);
export type ConfigBody = Static<typeof ConfigBody>;

export const StatusReply = Type.Object({
  state: Type.Union(
    ['unconfigured', 'stopped', 'connecting', 'running', 'retrying'].map((s) => Type.Literal(s)),
  ),
  target: Type.Union([Type.String(), Type.Null()]),
  sent: Type.Integer(),
  dropped: Type.Integer(),
  queued: Type.Integer(),
  lastError: Type.Union([Type.String(), Type.Null()]),
  lastErrorAt: Type.Union([Type.String(), Type.Null()]),
  lastSentAt: Type.Union([Type.String(), Type.Null()]),
});
