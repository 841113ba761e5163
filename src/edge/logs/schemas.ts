/** Wire shapes of the edge's log query (contract 2.8, 4.3): validation, serialisation and types. */
import { Type, type Static } from '@sinclair/typebox';
import { LOG_LEVEL_NAMES, type LogLevelName } from '../../kernel/logging/log-store.js';

const Rfc3339 = 'RFC 3339 timestamp, any fraction length, `Z` or an offset (encode `+` as `%2B`)';

/**
 * Query string of `GET /logs/query`. Lenient like every query string: unknown parameters are
 * ignored, never stripped or refused (`additionalProperties: true`).
 */
export const LogQuerySchema = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'entries per page, 1 to 1000' }),
    ),
    level: Type.Optional(
      Type.String({
        description: `minimum severity, one of ${LOG_LEVEL_NAMES.join(', ')} (case-insensitive): warn returns warn, error and fatal`,
      }),
    ),
    component: Type.Optional(
      Type.String({ description: 'exact component (service or module) name, e.g. edge.auth' }),
    ),
    search: Type.Optional(Type.String({ description: 'case-insensitive substring of the message' })),
    start: Type.Optional(
      Type.String({
        description:
          `${Rfc3339}. Tails forward: the oldest \`limit\` matching entries after this time. ` +
          "Poll with the previous reply's `cursor` to receive every new entry exactly once. `0` or empty: ignored.",
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        description:
          `${Rfc3339}. Pages backwards. The value names the page whose newest entry has this time (the ` +
          'page the client holds): the `limit` newest matching entries at or before it are skipped and the ' +
          "`limit` matching entries before them are returned. Sending back each reply's `cursor` with the " +
          'same `limit` and filters walks through history without overlap or gap; an empty page ends the walk. ' +
          '`0` is refused. Cannot be combined with `start`.',
      }),
    ),
  },
  {
    additionalProperties: true,
    description:
      'Without `start` and `cursor`: the newest `limit` matching entries. Every page is in chronological order.',
  },
);
export type LogQuery = Static<typeof LogQuerySchema>;

export const LogLevelSchema = Type.Unsafe<LogLevelName>({ type: 'string', enum: [...LOG_LEVEL_NAMES] });

export const LogEntrySchema = Type.Object({
  timestamp: Type.String({
    format: 'date-time',
    description: 'RFC 3339 in UTC with microseconds (2026-11-25T22:10:01.123456Z), unique per entry',
  }),
  level: LogLevelSchema,
  message: Type.String(),
  component: Type.String({ description: 'exact service or module name' }),
  fields: Type.Record(Type.String(), Type.Unknown(), { description: 'the remaining structured fields' }),
});
export type LogEntry = Static<typeof LogEntrySchema>;

export const LogQueryReplySchema = Type.Object({
  entries: Type.Array(LogEntrySchema, { description: 'oldest first' }),
  count: Type.Integer({ description: 'number of entries in this page' }),
  cursor: Type.Union([Type.String(), Type.Null()], {
    description:
      'time of the newest entry of the page: send it as `start` to tail forward, as `cursor` to page ' +
      'backwards. On an empty page, the `start` or `cursor` sent (normalised to UTC), else null.',
  }),
});
export type LogQueryReply = Static<typeof LogQueryReplySchema>;
