/**
 * Every route of the manager (main API and admin console API), other than the few that must be
 * open, answers 401 without credentials; the open ones refuse anonymous calls by their own
 * credential (the edge link, activation). The header rules of contract part 5.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEveryRouteNeedsCredentials } from '../helpers/routes.js';
import { listRoutes } from '../../src/kernel/http/server.js';
import { http } from '../helpers/edge.js';
import { makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { ERRORS } from '../../src/kernel/errors.js';

const OPEN = new Set([
  'GET /health',
  'HEAD /health',
  'GET /version',
  'HEAD /version',
  // Authenticated by the device's link credential (X-Device-Id, X-Device-Secret), below.
  'GET /dm/link',
  'HEAD /dm/link',
  // Authenticated by the activation code, below.
  'POST /dm/activate',
  // The realm `standalone` (OpenID Connect): checked by its own credentials (password, code +
  // PKCE verifier, Bearer access token) in manager-realm.test.ts; discovery, keys and the form's
  // style sheet are public documents.
  'GET /auth/realms/standalone/.well-known/openid-configuration',
  'HEAD /auth/realms/standalone/.well-known/openid-configuration',
  'GET /auth/realms/standalone/login.css',
  'HEAD /auth/realms/standalone/login.css',
  ...['GET', 'HEAD', 'POST'].map((m) => `${m} /auth/realms/standalone/protocol/openid-connect/auth`),
  'POST /auth/realms/standalone/protocol/openid-connect/token',
  ...['GET', 'HEAD'].map((m) => `${m} /auth/realms/standalone/protocol/openid-connect/userinfo`),
  ...['GET', 'HEAD'].map((m) => `${m} /auth/realms/standalone/protocol/openid-connect/certs`),
  ...['GET', 'HEAD', 'POST'].map((m) => `${m} /auth/realms/standalone/protocol/openid-connect/logout`),
  // The manager console's files (main and admin ports): the page must load to offer the sign-in.
  'GET /',
  'HEAD /',
  'GET /assets/*',
  'HEAD /assets/*',
  // The edge console's hashed files, served for an edge opened through the bridge (its index
  // and every call need the session).
  'GET /edge-console/:projectId/:deviceId/assets/*',
  'HEAD /edge-console/:projectId/:deviceId/assets/*',
  // The console's sign-in: it starts the realm's flow / redeems the code with the state's cookie.
  'GET /console/login',
  'HEAD /console/login',
  'GET /console/callback',
  'HEAD /console/callback',
  // Calls forwarded by another manager process: authenticated by the managers' shared secret, below.
  ...['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].map((m) => `${m} /dm/peer/:deviceId/*`),
]);

let m: TestManager;
before(async () => {
  m = await startTestManager();
});
after(() => m.stop());

describe('anonymous calls', () => {
  test('every main API route but the open ones answers 401', async () => {
    const n = await assertEveryRouteNeedsCredentials(
      m.manager.app,
      (p, o) => m.call(p, { ...o, token: null }),
      OPEN,
    );
    assert.ok(n >= 20, `checked ${n}`);
  });
  test('every admin console route answers 401', async () => {
    const n = await assertEveryRouteNeedsCredentials(
      m.manager.adminApp,
      (p, o) => m.admin(p, { ...o, token: null }),
      OPEN,
    );
    assert.ok(n >= 10, `checked ${n}`);
  });
  test('the open routes refuse anonymous callers by their own credential', async () => {
    const link = await http(`${m.url}/dm/link`);
    assert.equal(link.status, 401);
    const wrong = await http(`${m.url}/dm/link`, {
      headers: { 'x-device-id': 'a'.repeat(25), 'x-device-secret': 'mwl_nope' },
    });
    assert.equal(wrong.status, 401);
    const act = await http(`${m.url}/dm/activate`, {
      json: { code: 'NOPE-NOPE-NOPE-NOPE', edgeCredential: 'x' },
    });
    assert.equal(act.status, 401);
    assert.equal(act.body.code, ERRORS.invalidActivationCode.code);
    assert.equal((await m.call('/no/such/route', { token: null })).status, 401);
    const peer = await http(`${m.url}/dm/peer/${'a'.repeat(25)}/devicehub/version`);
    assert.equal(peer.status, 401);
    const wrongPeer = await http(`${m.url}/dm/peer/${'a'.repeat(25)}/devicehub/version`, {
      headers: { 'x-millwright-peer': 'nope' },
    });
    assert.equal(wrongPeer.status, 401);
    // The main API token is not the managers' secret either.
    assert.equal((await m.call(`/dm/peer/${'a'.repeat(25)}/devicehub/version`)).status, 401);
  });
});

describe('the routes of issue 29 (CA certificates, edge logs, log forwarding, instance settings)', () => {
  test('are mounted, so the guard above covers them', () => {
    const keys = (app: typeof m.manager.app) => new Set(listRoutes(app).map((r) => `${r.method} ${r.url}`));
    const main = keys(m.manager.app);
    for (const k of [
      'GET /api/v1/ca-certificates/instance',
      'GET /api/v1/ca-certificates/instance/:id/download',
      'POST /api/v1/ca-certificates/:projectId/sync',
      'POST /api/v1/edge-logs/query',
      'POST /api/v1/edge-logs/hits',
      'POST /api/v1/edge-logs/statistics',
      'GET /api/v1/device/:deviceId/log-forwarding/status',
      'POST /api/v1/device/:deviceId/log-forwarding/start',
      'POST /api/v1/device/:deviceId/log-forwarding/stop',
    ])
      assert.ok(main.has(k), `${k} is on the main API`);
    const admin = keys(m.manager.adminApp);
    for (const k of [
      'GET /admin/v1/ca-certificates',
      'GET /admin/v1/ca-certificates/:id/download',
      'POST /admin/v1/ca-certificates/upload',
      'POST /admin/v1/ca-certificates/preview',
      'DELETE /admin/v1/ca-certificates/:id',
      'GET /admin/v1/licenses2/type',
      'GET /admin/v1/wg/instance-mode',
      'PUT /admin/v1/wg/instance-mode',
      'GET /admin/v1/settings/mqtt-ssl-certificate',
      'PUT /admin/v1/settings/mqtt-ssl-certificate',
      'POST /admin/v1/domain/ssl/user/enable',
      'GET /admin/v1/mpc-secrets/:key',
      'POST /admin/v1/mpc-secrets/:key',
      'DELETE /admin/v1/mpc-secrets/:key',
    ])
      assert.ok(admin.has(k), `${k} is on the admin console API`);
  });
});

describe('headers (contract part 5)', () => {
  test('X-AuthToken on /api/v1 and /admin/v1; Authorization there is the wrong header: 401', async () => {
    assert.equal((await m.call('/api/v1/whoami')).status, 200);
    assert.equal((await m.admin('/admin/v1/api-tokens')).status, 200);
    for (const authorization of [m.token, `Bearer ${m.token}`]) {
      const r = await m.call('/api/v1/whoami', { token: null, headers: { authorization } });
      assert.equal(r.status, 401);
      assert.match(r.body.message, /X-AuthToken/);
      assert.equal(
        (await m.admin('/admin/v1/api-tokens', { token: null, headers: { authorization } })).status,
        401,
      );
    }
  });
  test('/mpcs/ takes Authorization: <token> without Bearer, and X-AuthToken; Bearer is a 401', async () => {
    assert.equal(
      (await m.call('/mpcs/v1/whoami', { token: null, headers: { authorization: m.token } })).status,
      200,
    );
    assert.equal((await m.call('/mpcs/v1/whoami')).status, 200);
    const bearer = await m.call('/mpcs/v1/whoami', {
      token: null,
      headers: { authorization: `Bearer ${m.token}` },
    });
    assert.equal(bearer.status, 401);
    assert.match(bearer.body.message, /without "Bearer"/);
  });
  test('a bad token is a 401', async () => {
    assert.equal((await m.call('/api/v1/whoami', { token: 'mwm_nope' })).status, 401);
  });
});

describe('tokens: hashed, shown once, named, revocable, rotated', () => {
  test('create, list without secrets, rotate, revoke', async () => {
    const made = await m.admin('/admin/v1/api-tokens', { json: { name: 'ci', role: 'viewer' } });
    assert.equal(made.status, 201, made.text);
    assert.match(made.body.token, /^mwm_/);
    const list = await m.admin('/admin/v1/api-tokens?sort=name:asc');
    const row = list.body.items.find((t: any) => t.id === made.body.id);
    assert.equal(row.name, 'ci');
    assert.equal(row.token, undefined);
    assert.equal(list.text.includes(made.body.token), false);
    assert.equal((await m.call('/api/v1/whoami', { token: made.body.token })).status, 200);
    // A viewer may read but not change.
    assert.equal(
      (await m.call('/api/v1/company', { token: made.body.token, json: { companyName: 'x' } })).status,
      403,
    );
    // A viewer token is not an admin of the console.
    assert.equal((await m.admin('/admin/v1/api-tokens', { token: made.body.token })).status, 403);
    const rotated = await m.admin(`/admin/v1/api-tokens/${made.body.id}/rotate`, {
      method: 'POST',
      json: {},
    });
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal((await m.call('/api/v1/whoami', { token: made.body.token })).status, 401);
    assert.equal((await m.call('/api/v1/whoami', { token: rotated.body.token })).status, 200);
    assert.equal((await m.admin(`/admin/v1/api-tokens/${made.body.id}`, { method: 'DELETE' })).status, 204);
    assert.equal((await m.call('/api/v1/whoami', { token: rotated.body.token })).status, 401);
  });
});

describe('users and roles scoped to companies and projects', () => {
  test('an operator of one project sees and changes only that project', async () => {
    const a = await makeProject(m, 'scope-a', 'pa');
    const b = await makeProject(m, 'scope-b', 'pb');
    assert.equal(
      (await m.admin('/admin/v1/users', { json: { username: 'olga', password: 'long-password' } })).status,
      201,
    );
    const g = await m.admin('/admin/v1/user/project/roles', {
      json: { username: 'olga', role: 'operator', projectId: a.projectId },
    });
    assert.equal(g.status, 201, g.text);
    const roles = await m.admin('/admin/v1/user/project/roles/paged?filter=username:eq:olga');
    assert.equal(roles.body.total, 1);
    assert.equal(roles.body.items[0].projectId, a.projectId);
    const t = (await m.admin('/admin/v1/api-tokens', { json: { name: 'olga-cli', username: 'olga' } })).body
      .token;
    const companies = await m.call('/api/v1/company/list/paged', { token: t });
    assert.deepEqual(
      companies.body.items.map((c: any) => c.companyName),
      ['scope-a'],
    );
    const projects = await m.call('/api/v1/project/paged', { token: t });
    assert.deepEqual(
      projects.body.items.map((p: any) => p.id),
      [a.projectId],
    );
    assert.equal(
      (await m.call('/api/v1/activation/code', { token: t, json: { projectId: a.projectId } })).status,
      201,
    );
    assert.equal(
      (await m.call('/api/v1/activation/code', { token: t, json: { projectId: b.projectId } })).status,
      404,
    );
    assert.equal((await m.call('/api/v1/company', { token: t, json: { companyName: 'nope' } })).status, 403);
  });
});

describe('fleet routes', () => {
  test('companies and projects, paged with the REST convention', async () => {
    const c = await m.call('/api/v1/company/list/paged?limit=2&sort=companyName:desc');
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.limit, 2);
    assert.equal(c.body.offset, 0);
    assert.ok(c.body.total >= 2);
    for (const k of ['companyName', 'totalNumOfProjects', 'totalNumOfDevices'])
      assert.ok(k in c.body.items[0]);
    const sorted = [...c.body.items].map((x: any) => x.companyName);
    assert.deepEqual(sorted, [...sorted].sort().reverse());
    assert.equal((await m.call('/api/v1/company/list/paged?sort=nope:asc')).status, 400);
  });
  test('deployment info on both APIs; top metrics; pretty names in batch', async () => {
    const d = await m.call('/api/v1/system/deployment-info');
    assert.equal(d.status, 200);
    assert.equal(d.body.version, '3.0.0');
    assert.equal((await m.admin('/admin/v1/system/deployment-info')).body.database, 'sqlite');
    const { projectId } = await makeProject(m, 'metrics-co', 'm');
    const top = await m.call(`/api/v1/device/metrics/${projectId}/top?metric=cpu&limit=5`);
    assert.deepEqual(top.body, { metric: 'cpu', items: [] });
    const batch = await m.call(`/api/v1/device/${projectId}/batch/pretty-names`, {
      json: { items: [{ deviceId: 'x'.repeat(25), prettyName: 'Pump' }] },
    });
    assert.deepEqual(batch.body, { updated: 0, notFound: ['x'.repeat(25)] });
    assert.equal((await m.call(`/api/v1/device/${projectId}/pretty-names`)).body.total, 0);
    assert.equal((await m.admin('/admin/v1/device/list')).status, 200);
  });
});

describe('removed routes (contract part 9)', () => {
  test('every /api/v1/site call answers 410 with code E', async () => {
    for (const [method, path] of [
      ['GET', '/api/v1/site/list/p1'],
      ['GET', '/api/v1/site/s1'],
      ['POST', '/api/v1/site'],
      ['DELETE', '/api/v1/site/s1'],
      ['POST', '/api/v1/site/image/s1'],
      ['DELETE', '/api/v1/site/image/s1'],
    ] as const) {
      const r = await m.call(path, { method, ...(method === 'POST' ? { json: {} } : {}) });
      assert.equal(r.status, 410, `${method} ${path}`);
      assert.equal(r.body.code, ERRORS.sitesRemoved.code);
      assert.match(r.body.message, /sites feature was removed/);
    }
  });
});
