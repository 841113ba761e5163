/**
 * `GET /logs/hits` (counts per time bucket and level) and `GET /logs/statistics` (counts per
 * level and component) over the log store: what the manager's fleet-wide `/api/v1/edge-logs/hits`
 * and `/statistics` gather from each edge. Filters as `/logs/query`; `from` exclusive and `to`
 * inclusive, RFC 3339.
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { badRequest } from '../../kernel/errors.js';
import {
  formatLogTime,
  LOG_LEVEL_NAMES,
  parseLevelName,
  parseLogTime,
  type LogAggregateParams,
  type LogStore,
} from '../../kernel/logging/log-store.js';

/** Most buckets in one `/logs/hits` answer. */
export const LOG_HITS_MAX_BUCKETS = 1000;

const AggregateQuery = Type.Object(
  {
    level: Type.Optional(Type.String({ description: 'minimum severity' })),
    component: Type.Optional(Type.String()),
    search: Type.Optional(Type.String()),
    from: Type.Optional(Type.String({ description: 'RFC 3339, exclusive; default: an hour before `to`' })),
    to: Type.Optional(Type.String({ description: 'RFC 3339, inclusive; default: now' })),
    bucket: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 31 * 86400, description: 'bucket seconds (hits)' }),
    ),
  },
  { additionalProperties: true },
);
type AggregateQuery = Static<typeof AggregateQuery>;

function time(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const micros = parseLogTime(text);
  if (micros === undefined) throw badRequest(`${name} "${text}" is not an RFC 3339 timestamp`);
  return micros;
}

/** The query string as aggregate parameters (a 400 for what is wrong). */
export function aggregateParams(
  q: AggregateQuery,
): Required<Pick<LogAggregateParams, 'from' | 'to'>> & LogAggregateParams {
  const to = time('to', q.to, Date.now() * 1000);
  const from = time('from', q.from, to - 3600 * 1_000_000);
  if (from >= to) throw badRequest('from must be before to');
  const p: LogAggregateParams & { from: number; to: number } = { from, to };
  if (q.level) {
    const level = parseLevelName(q.level);
    if (!level) throw badRequest(`unknown level "${q.level}": expected one of ${LOG_LEVEL_NAMES.join(', ')}`);
    p.level = level;
  }
  if (q.component) p.component = q.component;
  if (q.search) p.search = q.search;
  return p;
}

export async function logAggregateRoutes(
  app: FastifyInstance,
  options: { store: Pick<LogStore, 'hits' | 'statistics'> },
) {
  const { store } = options;
  app.get<{ Querystring: AggregateQuery }>(
    '/logs/hits',
    { config: { permission: 'read' }, schema: { querystring: AggregateQuery } },
    async (request) => {
      const p = aggregateParams(request.query);
      const bucket = request.query.bucket ?? 60;
      const span = (p.to - p.from) / 1_000_000;
      if (span / bucket > LOG_HITS_MAX_BUCKETS)
        throw badRequest(
          `${Math.ceil(span / bucket)} buckets of ${bucket} s between from and to: at most ${LOG_HITS_MAX_BUCKETS}; widen bucket`,
        );
      const buckets = await store.hits({ ...p, bucketUs: bucket * 1_000_000 });
      return {
        from: formatLogTime(p.from),
        to: formatLogTime(p.to),
        bucketSeconds: bucket,
        buckets: buckets.map((b) => ({ start: formatLogTime(b.start), counts: b.counts })),
      };
    },
  );
  app.get<{ Querystring: AggregateQuery }>(
    '/logs/statistics',
    { config: { permission: 'read' }, schema: { querystring: AggregateQuery } },
    async (request) => {
      const p = aggregateParams(request.query);
      const s = await store.statistics(p);
      return {
        from: formatLogTime(p.from),
        to: formatLogTime(p.to),
        count: s.count,
        oldest: s.oldest === null ? null : formatLogTime(s.oldest),
        newest: s.newest === null ? null : formatLogTime(s.newest),
        byLevel: s.byLevel,
        components: s.components,
      };
    },
  );
}
