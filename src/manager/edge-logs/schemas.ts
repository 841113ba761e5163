/** Wire shapes of the fleet's edge logs (`/api/v1/edge-logs/*`) and log forwarding routes. */
import { Type, type Static } from '@sinclair/typebox';

export const EDGE_LOGS_MAX_DEVICES = 100;
/** Page size × devices of one query: the entries one page holds in memory at most. */
export const EDGE_LOGS_MAX_FETCH = 50_000;

const Targets = {
  deviceIds: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: EDGE_LOGS_MAX_DEVICES,
      description: 'these devices; or all of `projectId`',
    }),
  ),
  projectId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  level: Type.Optional(
    Type.String({ description: 'minimum severity: trace, debug, info, warn, error, fatal' }),
  ),
  component: Type.Optional(Type.String({ maxLength: 200, description: 'exact component, e.g. edge.auth' })),
  text: Type.Optional(
    Type.String({ maxLength: 500, description: 'case-insensitive substring of the message' }),
  ),
  from: Type.Optional(Type.String({ description: 'RFC 3339, exclusive' })),
  to: Type.Optional(Type.String({ description: 'RFC 3339, inclusive' })),
  deadlineMs: Type.Optional(
    Type.Integer({ minimum: 100, maximum: 30_000, description: 'per-edge deadline (default 5000)' }),
  ),
};

export const QueryBody = Type.Object(
  {
    ...Targets,
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, description: 'entries per page (default 100)' }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 20_000, description: "the previous page's `cursor`" })),
  },
  { additionalProperties: false },
);
export type QueryBody = Static<typeof QueryBody>;

export const HitsBody = Type.Object(
  { ...Targets, bucketSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 31 * 86400 })) },
  { additionalProperties: false },
);
export type HitsBody = Static<typeof HitsBody>;

export const StatisticsBody = Type.Object(Targets, { additionalProperties: false });
export type StatisticsBody = Static<typeof StatisticsBody>;

export const DeviceParams = Type.Object({ deviceId: Type.String({ minLength: 1, maxLength: 100 }) });
export type DeviceParams = Static<typeof DeviceParams>;

export const DeviceAnswer = Type.Object({
  deviceId: Type.String(),
  status: Type.Union([
    Type.Literal('ok'),
    Type.Literal('offline'),
    Type.Literal('timeout'),
    Type.Literal('error'),
  ]),
  message: Type.Optional(Type.String()),
});

export const QueryReply = Type.Object({
  entries: Type.Array(
    Type.Object({
      deviceId: Type.String(),
      timestamp: Type.String(),
      level: Type.String(),
      component: Type.String(),
      message: Type.String(),
      fields: Type.Record(Type.String(), Type.Unknown()),
    }),
    { description: 'oldest first, merged across the devices' },
  ),
  count: Type.Integer(),
  cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'send back for the next page; null: the end',
  }),
  devices: Type.Array(DeviceAnswer),
  unavailable: Type.Array(DeviceAnswer, { description: 'offline, slow or failing edges: not in this page' }),
});
