/**
 * Every registered route of the edge, other than the few that must be open, answers 401 without
 * credentials: a later route that forgets to require them fails here.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEveryRouteNeedsCredentials } from '../helpers/routes.js';
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
  const checked = await assertEveryRouteNeedsCredentials(t.edge.app, t.call, OPEN_ROUTES);
  assert.ok(checked >= 15, `checked ${checked} routes`);
});

test('the open routes answer without credentials', async () => {
  assert.equal((await t.call('/health')).status, 200);
  assert.equal((await t.call('/version')).status, 200);
  assert.equal((await t.call('/auth/v2/providers')).status, 200);
  // An unknown path needs credentials too, so the API's shape is not disclosed.
  assert.equal((await t.call('/no/such/route')).status, 401);
});
