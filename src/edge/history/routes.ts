/** HTTP translation of the history: `/history/...` over the history service. */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../kernel/errors.js';
import type { Permission } from '../../kernel/http/auth-types.js';
import { parseListQuery, type ListDefinition } from '../../kernel/paging.js';
import {
  AggregateQuerySchema,
  AggregateReplySchema,
  LastQuerySchema,
  LastReplySchema,
  PoliciesReplySchema,
  RangeQuerySchema,
  StatusReplySchema,
  TagsReplySchema,
  ValuesQuerySchema,
  ValuesReplySchema,
  type AggregateQueryString,
  type LastQueryString,
  type ValuesQuery,
} from './schemas.js';
import { MAX_RAW_LIMIT, type HistoryService, type HistoryValue } from './service.js';

const read: Permission = 'read';
const HOUR = 3_600_000;

/** Raw values: in time order only; `offset` and `limit` page them. */
export const VALUES_LIST: ListDefinition = {
  fields: { ts: { column: 'ts', type: 'integer' } },
  tiebreak: 'ts',
  defaultSort: [{ field: 'ts', order: 'asc' }],
  defaultLimit: 500,
  maxLimit: MAX_RAW_LIMIT,
};

/** A time of a query string: epoch ms or RFC 3339. */
export function parseTime(name: string, text: string | undefined, dflt: number): number {
  if (text === undefined || text === '') return dflt;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Math.trunc(Number(text));
  const t = Date.parse(text);
  if (Number.isNaN(t))
    throw badRequest(`${name} must be epoch milliseconds or an RFC 3339 time, got "${text}"`);
  return t;
}

export function parseTags(v: string | string[] | undefined): string[] {
  const list = (Array.isArray(v) ? v : v === undefined ? [] : [v]).flatMap((s) => s.split(','));
  return list.map((s) => s.trim()).filter((s) => s !== '');
}

function range(q: {
  tag?: string | string[] | undefined;
  from?: string | undefined;
  to?: string | undefined;
}) {
  const to = parseTime('to', q.to, Date.now());
  const from = parseTime('from', q.from, to - HOUR);
  return { tags: parseTags(q.tag), from, to };
}

function optionalInt(name: string, v: string | undefined): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw badRequest(`${name} must be an integer, got "${v}"`);
  return n;
}

const csvText = (v: HistoryValue['value']): string =>
  v === null ? '' : typeof v === 'number' ? String(v) : `"${v.replaceAll('"', '""')}"`;

export async function historyRoutes(
  app: FastifyInstance,
  options: { history: HistoryService },
): Promise<void> {
  const { history } = options;

  app.get(
    '/history/tags',
    { config: { permission: read }, schema: { response: { 200: TagsReplySchema } } },
    async () => ({
      tags: await history.tags(),
    }),
  );

  app.get(
    '/history/status',
    { config: { permission: read }, schema: { response: { 200: StatusReplySchema } } },
    () => history.status(),
  );

  app.get(
    '/history/policies',
    { config: { permission: read }, schema: { response: { 200: PoliciesReplySchema } } },
    () => ({
      policies: history.policies,
    }),
  );

  app.get<{ Querystring: ValuesQuery }>(
    '/history/values',
    {
      config: { permission: read },
      schema: { querystring: ValuesQuerySchema, response: { 200: ValuesReplySchema } },
    },
    async (request) => {
      const spec = parseListQuery(request.query, VALUES_LIST);
      if (spec.sort.some((s) => s.order !== 'asc') || spec.filter.length > 0)
        throw badRequest(
          'values are listed in time order (sort=ts:asc) without filters; narrow them with from and to',
        );
      const page = await history.raw({ ...range(request.query), limit: spec.limit, offset: spec.offset });
      return { items: page.items, total: page.total, offset: spec.offset, limit: spec.limit };
    },
  );

  app.get<{ Querystring: AggregateQueryString }>(
    '/history/aggregate',
    {
      config: { permission: read },
      schema: { querystring: AggregateQuerySchema, response: { 200: AggregateReplySchema } },
    },
    (request) =>
      history.aggregate({
        ...range(request.query),
        points: optionalInt('points', request.query.points),
        bucketMs: optionalInt('bucket', request.query.bucket),
      }),
  );

  app.get<{ Querystring: LastQueryString }>(
    '/history/last',
    {
      config: { permission: read },
      schema: { querystring: LastQuerySchema, response: { 200: LastReplySchema } },
    },
    async (request) => ({
      items: await history.last(parseTags(request.query.tag), parseTime('at', request.query.at, Date.now())),
    }),
  );

  app.get<{ Querystring: ValuesQuery }>(
    '/history/export.csv',
    { config: { permission: read }, schema: { querystring: RangeQuerySchema } },
    async (request, reply) => {
      const pages = history.export(range(request.query));
      // Checks the range before the first byte goes out (a 400, not a cut-off stream).
      const first = await pages.next();
      async function* csv(): AsyncGenerator<string> {
        yield 'tag,timestamp,time,value\n';
        let page = first;
        while (!page.done) {
          yield page.value
            .map((v) => `${v.tag},${v.ts},${new Date(v.ts).toISOString()},${csvText(v.value)}\n`)
            .join('');
          page = await pages.next();
        }
      }
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="history.csv"')
        .send(Readable.from(csv()));
    },
  );
}
