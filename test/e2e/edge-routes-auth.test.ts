/**
 * Every registered route of the edge, other than the few that must be open, answers 401 without
 * credentials: a later route that forgets to require them fails here.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEveryRouteNeedsCredentials, assertEverySocketNeedsCredentials } from '../helpers/routes.js';
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
  // The edge console's files (src/edge/console): the sign-in page must load without a session;
  // they hold no data, and every call the page makes goes to the authenticated API.
  'GET /',
  'HEAD /',
  'GET /assets/*',
  'HEAD /assets/*',
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

test('every subscription socket refuses an anonymous connection_init (close 4401)', async () => {
  const checked = await assertEverySocketNeedsCredentials(t.edge.app, t.url.replace(/^http/, 'ws'));
  assert.ok(checked >= 5, `checked ${checked} socket routes`);
});

test('the open routes answer without credentials', async () => {
  assert.equal((await t.call('/health')).status, 200);
  assert.equal((await t.call('/version')).status, 200);
  assert.equal((await t.call('/auth/v2/providers')).status, 200);
  // The console: index.html when built, else the page that says to build it (503).
  assert.ok([200, 503].includes((await t.call('/')).status));
  assert.equal((await t.call('/assets/no-such-file.js')).status, 404);
  // An unknown path needs credentials too, so the API's shape is not disclosed.
  assert.equal((await t.call('/no/such/route')).status, 401);
});
