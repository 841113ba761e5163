/**
 * Every registered route of the UNS, other than the few that must be open, answers 401 without
 * credentials: a later route that forgets to require them fails here.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEveryRouteNeedsCredentials } from '../helpers/routes.js';
import { startTestUns, type TestUns } from '../helpers/uns.js';

/**
 * Token endpoints, the console's sign-in and sign-out, activation (the token is the credential),
 * health, version, MQTT over WebSocket, and the console's files (the sign-in page must load).
 */
const OPEN_ROUTES = new Set([
  'POST /auth/console/login',
  'POST /auth/console/logout',
  'GET /',
  'HEAD /',
  'GET /assets/*',
  'HEAD /assets/*',
  'POST /auth/realms/standalone/protocol/openid-connect/token',
  'POST /auth/v3/oauth/token',
  'POST /mqtt/activate',
  'GET /health',
  'HEAD /health',
  'GET /version',
  'HEAD /version',
  'GET /mqtt',
  'HEAD /mqtt',
]);

let t: TestUns;
before(async () => {
  t = await startTestUns();
});
after(() => t.stop());

test('every UNS route but the open ones answers 401 without credentials', async () => {
  const checked = await assertEveryRouteNeedsCredentials(t.uns.app, t.call, OPEN_ROUTES);
  assert.ok(checked >= 3, `checked ${checked} routes`);
});
