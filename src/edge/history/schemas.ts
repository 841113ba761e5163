/** Wire shapes of `/history` (REST). Times are epoch milliseconds or RFC 3339 in query strings. */
import { Type, type Static } from '@sinclair/typebox';
import { ListQuerySchema, ListResponseSchema } from '../../kernel/paging.js';

// Optional in the schema (a missing tag is the route's 400, after the paging checks).
const tags = Type.Optional(
  Type.Union([Type.String(), Type.Array(Type.String())], {
    description: 'a tag as Device.Tag; repeat for several (or separate with commas)',
  }),
);
const time = (what: string) => Type.Optional(Type.String({ description: `${what}: epoch ms or RFC 3339` }));

export const RangeQuerySchema = Type.Object(
  {
    tag: tags,
    from: time('start (inclusive); default an hour before to'),
    to: time('end (exclusive); default now'),
  },
  { additionalProperties: true },
);

export const ValuesQuerySchema = Type.Object(
  { ...RangeQuerySchema.properties, ...ListQuerySchema.properties },
  { additionalProperties: true },
);
export type ValuesQuery = Static<typeof RangeQuerySchema> & Record<string, unknown>;

export const AggregateQuerySchema = Type.Object(
  {
    tag: tags,
    from: time('start (inclusive); default an hour before to'),
    to: time('end (exclusive); default now'),
    points: Type.Optional(
      Type.String({ description: 'point budget: buckets per tag at most (default 1000)' }),
    ),
    bucket: Type.Optional(Type.String({ description: 'bucket width in ms (instead of points)' })),
  },
  { additionalProperties: true },
);
export type AggregateQueryString = Static<typeof AggregateQuerySchema>;

export const LastQuerySchema = Type.Object(
  { tag: tags, at: time('the time (default now)') },
  { additionalProperties: true },
);
export type LastQueryString = Static<typeof LastQuerySchema>;

export const HistoryValueSchema = Type.Object({
  tag: Type.String(),
  ts: Type.Number({ description: 'epoch ms' }),
  value: Type.Union([Type.Number(), Type.String(), Type.Null()]),
});

export const ValuesReplySchema = ListResponseSchema(HistoryValueSchema);

export const BucketSchema = Type.Object({
  ts: Type.Number({ description: 'start of the bucket, epoch ms' }),
  first: Type.Number(),
  last: Type.Number(),
  min: Type.Number(),
  max: Type.Number(),
  mean: Type.Number(),
  count: Type.Integer(),
  twa: Type.Union([Type.Number(), Type.Null()], { description: 'time-weighted mean' }),
});

export const AggregateReplySchema = Type.Object({
  bucketMs: Type.Integer(),
  series: Type.Array(Type.Object({ tag: Type.String(), buckets: Type.Array(BucketSchema) })),
});

export const LastReplySchema = Type.Object({ items: Type.Array(HistoryValueSchema) });

export const StatusReplySchema = Type.Object({
  engine: Type.String(),
  bytes: Type.Number(),
  values: Type.Number(),
  tags: Type.Number(),
  oldest: Type.Union([Type.Number(), Type.Null()]),
  newest: Type.Union([Type.Number(), Type.Null()]),
  deletedByAge: Type.Number(),
  deletedBySize: Type.Number(),
  received: Type.Number(),
  kept: Type.Number(),
  skipped: Type.Number(),
  dropped: Type.Number(),
  written: Type.Number(),
  failedWrites: Type.Number(),
  lastFlushMs: Type.Number(),
  retention: Type.Object({ maxAgeMs: Type.Number(), maxBytes: Type.Number() }),
});

export const PoliciesReplySchema = Type.Object({
  policies: Type.Array(
    Type.Object({
      tag: Type.String(),
      mode: Type.String(),
      deadband: Type.Number(),
      minIntervalMs: Type.Number(),
    }),
  ),
});

export const TagsReplySchema = Type.Object({ tags: Type.Array(Type.String()) });
