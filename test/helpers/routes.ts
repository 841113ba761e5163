/**
 * The guard against a route that forgets to require credentials: every route registered on a
 * service's app, other than the few it must leave open, answers 401 without credentials.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { listRoutes } from '../../src/kernel/http/server.js';
import type { HttpReply } from './edge.js';
import { runSocket } from './gql-socket.js';

export async function assertEveryRouteNeedsCredentials(
  app: FastifyInstance,
  call: (path: string, options: { method: string; json?: unknown }) => Promise<HttpReply>,
  open: Set<string>,
): Promise<number> {
  const routes = listRoutes(app);
  assert.ok(routes.length >= 5, `routes were collected (${routes.length})`);
  for (const r of routes.filter((x) => x.permission === 'public')) {
    const key = `${r.method} ${r.url}`;
    assert.ok(open.has(key), `${key} is declared public but is not on the open list`);
  }
  let checked = 0;
  for (const route of routes) {
    const key = `${route.method} ${route.url}`;
    if (open.has(key)) continue;
    const path = route.url.replace(/:[A-Za-z0-9_]+/g, 'x').replace(/\*/g, 'x');
    const res = await call(path, {
      method: route.method,
      ...(route.method === 'GET' || route.method === 'HEAD' ? {} : { json: {} }),
    });
    assert.equal(res.status, 401, `${key} answered ${res.status} without credentials`);
    checked++;
  }
  return checked;
}

/**
 * The same guard for WebSockets: every route that answers an upgrade (a GraphQL endpoint's
 * subscriptions) refuses an anonymous socket, either at the upgrade (401) or, where the service
 * takes credentials from `connection_init`, at its init (close 4401, no `connection_ack`): with an
 * empty payload, and with a subscription sent before any init. Answers how many were checked.
 */
export async function assertEverySocketNeedsCredentials(
  app: FastifyInstance,
  wsBase: string,
): Promise<number> {
  const paths = [
    ...new Set(
      listRoutes(app)
        .filter((r) => r.socket)
        .map((r) => r.url),
    ),
  ];
  for (const path of paths) {
    const subscribe = { query: 'subscription { __typename }' };
    for (const script of [{ init: {} }, { init: null, subscribe, subscribeFirst: true }]) {
      const out = await runSocket(`${wsBase}${path}`, script);
      assert.ok(
        !out.messages.some((m) => m.type === 'connection_ack' || m.type === 'next'),
        `${path}: an anonymous socket was acknowledged: ${JSON.stringify(out.messages)}`,
      );
      assert.ok(
        out.httpStatus === 401 || out.closeCode === 4401,
        `${path} (${JSON.stringify(script)}): anonymous socket answered ${JSON.stringify(out)}`,
      );
    }
  }
  return paths.length;
}
