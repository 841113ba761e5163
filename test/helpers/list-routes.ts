/**
 * The guard against a list route that takes bad paging values: every route of a service whose
 * query string schema declares a paging parameter (`limit`, `offset`, `sort`, `filter`, `cursor`;
 * found in the route inventory, so a later list route is covered without being named here) is
 * called with valid credentials and each bad value, and answers 400 with the one error shape and
 * a message naming the parameter.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { listRoutes } from '../../src/kernel/http/server.js';
import { PAGING_PARAMETERS } from '../../src/kernel/paging.js';
import type { HttpReply } from './edge.js';

/** Bad values per paging parameter, as query strings (without the leading `?`). */
export const BAD_PAGING: Record<string, string[]> = {
  limit: [
    'limit=-1',
    'limit=1e309',
    'limit=abc',
    'limit=0',
    'limit=1.5',
    'limit=5&limit=6',
    'limit=99999999999999999999',
  ],
  offset: ['offset=-5', 'offset=1e20', 'offset=abc', 'offset=1&offset=2', 'offset=99999999999999999999'],
  sort: ['sort=name:sideways', 'sort=:asc', 'sort=a:asc:b'],
  filter: ['filter=junk', 'filter=name:like:x', 'filter=name'],
  cursor: ['cursor=a&cursor=b'],
};

export interface ListRouteCheck {
  /** `GET /url` of every list route found. */
  routes: string[];
  /** Bad requests made. */
  calls: number;
}

export async function assertListRoutesRefuseBadPaging(
  app: FastifyInstance,
  call: (path: string) => Promise<HttpReply>,
): Promise<ListRouteCheck> {
  const lists = listRoutes(app).filter(
    (r) => r.method === 'GET' && r.query.some((q) => (PAGING_PARAMETERS as readonly string[]).includes(q)),
  );
  let calls = 0;
  for (const route of lists) {
    const path = route.url.replace(/:[A-Za-z0-9_]+/g, 'x').replace(/\*/g, 'x');
    for (const param of route.query) {
      for (const bad of BAD_PAGING[param] ?? []) {
        const res = await call(`${path}?${bad}&unknownParameter=ignored`);
        const where = `GET ${route.url}?${bad}`;
        assert.equal(res.status, 400, `${where} answered ${res.status}: ${res.text.slice(0, 300)}`);
        assert.equal(res.body?.code, 'bad_request', `${where}: ${res.text.slice(0, 300)}`);
        assert.match(
          String(res.body?.message),
          new RegExp(`\\b${param}\\b`, 'i'),
          `${where}: message names ${param}`,
        );
        calls++;
      }
    }
  }
  return { routes: lists.map((r) => `GET ${r.url}`), calls };
}
