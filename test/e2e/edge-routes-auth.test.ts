/**
 * Every registered route of the edge, other than the few that must be open, answers 401 without
 * credentials: a later route that forgets to require them fails here.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { listRoutes } from '../../src/kernel/http/server.js';
import { startTestEdge, type TestEdge } from '../helpers/edge.js';

/** The only routes open without credentials: token, login and discovery, health and version. */
const OPEN_ROUTES = new Set([
  'POST /auth/v3/oauth/token',
  'POST /auth/v2/login',
  'GET /auth/v2/providers',
  'HEAD /auth/v2/providers',
  'GET /health',
  'HEAD /health',
  'GET /version',
  'HEAD /version',
]);

let t: TestEdge;
before(async () => {
  t = await startTestEdge();
});
after(() => t.stop());

test('every route but the open ones answers 401 without credentials', async () => {
  const routes = listRoutes(t.edge.app);
  assert.ok(routes.length >= 20, `routes were collected (${routes.length})`);
  const declaredOpen = routes.filter((r) => r.permission === 'public').map((r) => `${r.method} ${r.url}`);
  for (const r of declaredOpen)
    assert.ok(OPEN_ROUTES.has(r), `${r} is declared public but is not on the open list`);

  let checked = 0;
  for (const route of routes) {
    const key = `${route.method} ${route.url}`;
    if (OPEN_ROUTES.has(key)) continue;
    const path = route.url.replace(/:[A-Za-z0-9_]+/g, 'x').replace(/\*/g, 'x');
    const res = await t.call(path, {
      method: route.method,
      ...(route.method === 'GET' || route.method === 'HEAD' ? {} : { json: {} }),
    });
    assert.equal(res.status, 401, `${key} answered ${res.status} without credentials`);
    checked++;
  }
  assert.ok(checked >= 15, `checked ${checked} routes`);
});

test('the open routes answer without credentials', async () => {
  assert.equal((await t.call('/health')).status, 200);
  assert.equal((await t.call('/version')).status, 200);
  assert.equal((await t.call('/auth/v2/providers')).status, 200);
  // An unknown path needs credentials too, so the API's shape is not disclosed.
  assert.equal((await t.call('/no/such/route')).status, 401);
});
