/** HTTP translation of the log query: `GET /logs/query` over the kernel's log store. */
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../kernel/errors.js';
import type { Permission } from '../../kernel/http/auth-types.js';
import {
  formatLogTime,
  LOG_LEVEL_NAMES,
  parseLevelName,
  parseLogTime,
  type LogLevelName,
  type LogQueryParams,
  type LogReader,
  type LogRecord,
} from '../../kernel/logging/log-store.js';
import {
  LogQueryReplySchema,
  LogQuerySchema,
  type LogEntry,
  type LogQuery,
  type LogQueryReply,
} from './schemas.js';

export interface LogsRoutesOptions {
  store: LogReader;
}

const read: Permission = 'read';
const ZERO = /^0+$/;

export async function logsRoutes(app: FastifyInstance, options: LogsRoutesOptions): Promise<void> {
  const { store } = options;

  app.get<{ Querystring: LogQuery; Reply: LogQueryReply }>(
    '/logs/query',
    {
      config: { permission: read },
      schema: { querystring: LogQuerySchema, response: { 200: LogQueryReplySchema } },
    },
    async (request) => {
      const params = toQueryParams(request.query);
      const page = await store.query(params);
      return {
        entries: page.entries.map(toWire),
        count: page.entries.length,
        cursor: page.cursor === null ? null : formatLogTime(page.cursor),
      };
    },
  );
}

/** The query string as store parameters; a 400 for what the contract refuses. */
export function toQueryParams(query: LogQuery): LogQueryParams {
  const limit = query.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw badRequest(`limit must be an integer from 1 to 1000, got ${String(limit)}`);
  }
  const params: LogQueryParams = { limit };
  if (query.level) params.level = level(query.level);
  if (query.component) params.component = query.component;
  if (query.search) params.search = query.search;
  // `start=0` and an empty start mean "no start" (contract part 7).
  if (query.start !== undefined && query.start !== '' && !ZERO.test(query.start)) {
    params.start = time('start', query.start);
  }
  if (query.cursor !== undefined) {
    if (ZERO.test(query.cursor)) {
      throw badRequest(
        'cursor 0 is not a valid cursor: send the RFC 3339 `cursor` of a previous reply to page backwards, ' +
          'or leave cursor out for the newest entries',
      );
    }
    params.cursor = time('cursor', query.cursor);
  }
  if (params.start !== undefined && params.cursor !== undefined) {
    throw badRequest('start and cursor cannot be combined: start tails forward, cursor pages backwards');
  }
  return params;
}

function level(text: string): LogLevelName {
  const name = parseLevelName(text);
  if (!name) throw badRequest(`unknown level "${text}": expected one of ${LOG_LEVEL_NAMES.join(', ')}`);
  return name;
}

function time(name: 'start' | 'cursor', text: string): number {
  const micros = parseLogTime(text);
  if (micros === undefined) {
    throw badRequest(
      `${name} "${text}" is not an RFC 3339 timestamp (for example 2026-11-25T22:10:01.123456Z)`,
    );
  }
  return micros;
}

function toWire(entry: LogRecord): LogEntry {
  return {
    timestamp: formatLogTime(entry.timestamp),
    level: entry.level,
    message: entry.message,
    component: entry.component,
    fields: entry.fields,
  };
}
