/** Wire shapes of the DataHub's REST routes (TypeBox: validation, serialisation and types). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;

const Pattern = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'NATS subject pattern: tokens separated by ".", "*" one token, ">" the rest',
});
const Patterns = Type.Array(Pattern, { maxItems: 100 });

export const CreateAccessKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    publish: Type.Optional(
      Type.Union([Patterns, Type.Null()], { description: 'subjects it may publish to; absent: any' }),
    ),
    subscribe: Type.Optional(
      Type.Union([Patterns, Type.Null()], { description: 'patterns it may subscribe to; absent: any' }),
    ),
  },
  Strict,
);
export type CreateAccessKeyBody = Static<typeof CreateAccessKeyBody>;

export const AccessKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  /** The first characters of the key, to recognise it. */
  prefix: Type.String(),
  publish: Type.Union([Type.Array(Type.String()), Type.Null()]),
  subscribe: Type.Union([Type.Array(Type.String()), Type.Null()]),
  createdAt: Type.String(),
});
export type AccessKeyView = Static<typeof AccessKeySchema>;

export const AccessKeyWithSecret = Type.Object({
  ...AccessKeySchema.properties,
  key: Type.String({ description: 'the access key itself; shown once' }),
});

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
export type IdParams = Static<typeof IdParams>;

const Counters = {
  msgsIn: Type.Integer(),
  bytesIn: Type.Integer(),
  msgsOut: Type.Integer(),
  bytesOut: Type.Integer(),
};

export const PrefixStatsSchema = Type.Object({
  prefix: Type.String(),
  ...Counters,
  drops: Type.Integer(),
  slowConsumers: Type.Integer(),
});

export const ConnectionSchema = Type.Object({
  cid: Type.Integer(),
  name: Type.String(),
  lang: Type.String(),
  version: Type.String(),
  address: Type.String(),
  local: Type.Boolean(),
  tls: Type.Boolean(),
  accessKey: Type.Union([Type.Object({ id: Type.String(), name: Type.String() }), Type.Null()]),
  connectedAt: Type.String(),
  subscriptions: Type.Array(
    Type.Object({
      sid: Type.String(),
      subject: Type.String(),
      queue: Type.Optional(Type.String()),
      received: Type.Integer(),
    }),
  ),
  ...Counters,
  pendingBytes: Type.Integer(),
});

export const StatsSchema = Type.Object({
  mode: Type.Union([Type.Literal('embedded'), Type.Literal('external')]),
  gateway: Type.Union([
    Type.Object({
      url: Type.String(),
      connections: Type.Integer(),
      connectionsTotal: Type.Integer(),
      slowConsumers: Type.Integer(),
      authFailures: Type.Integer(),
      permissionViolations: Type.Integer(),
      protocolErrors: Type.Integer(),
    }),
    Type.Null(),
  ]),
  external: Type.Union([Type.Object({ url: Type.String(), connected: Type.Boolean() }), Type.Null()]),
  subscriptions: Type.Integer(),
  totals: Type.Object({ ...Counters, drops: Type.Integer(), slowConsumers: Type.Integer() }),
  subjects: Type.Array(PrefixStatsSchema),
  connections: Type.Array(
    Type.Object({
      cid: Type.Integer(),
      name: Type.String(),
      address: Type.String(),
      subscriptions: Type.Integer(),
      ...Counters,
      pendingBytes: Type.Integer(),
    }),
  ),
});
