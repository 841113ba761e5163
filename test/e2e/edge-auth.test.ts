/** The edge's identity over HTTPS: bootstrap, OAuth client credentials, tokens, roles, limits. */
import { after, before, describe, test } from 'node:test';
import type { AuthTables } from '../../src/edge/auth/repository.js';
import assert from 'node:assert/strict';
import { TokenSigner } from '../../src/kernel/crypto.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { VERSION_PROBES } from '../../src/edge/versions/index.js';
import {
  ADMIN_PASSWORD,
  basic,
  bootstrapAdmin,
  clientToken,
  startTestEdge,
  type TestEdge,
} from '../helpers/edge.js';
import { ERRORS } from '../../src/kernel/errors.js';

describe('edge bootstrap sequence', () => {
  let t: TestEdge;
  before(async () => {
    t = await startTestEdge();
  });
  after(() => t.stop());

  test('login, EULA, password change, then the session works', async () => {
    assert.ok(t.url.startsWith('https://'), 'served over HTTPS by default');
    const providers = await t.call('/auth/v2/providers');
    assert.equal(providers.status, 200);
    assert.deepEqual(providers.body, [{ id: LOCAL_PROVIDER_ID, name: 'local', type: 'local' }]);

    const wrongProvider = await t.call('/auth/v2/login', {
      json: {
        username: 'admin',
        password: ADMIN_PASSWORD,
        providerId: '00000000-0000-0000-0000-000000000000',
      },
    });
    assert.equal(wrongProvider.status, 400);
    assert.match(wrongProvider.body.message, /unknown identity provider/);

    const wrongPassword = await t.call('/auth/v2/login', {
      json: { username: 'admin', password: 'nope-nope', providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(wrongPassword.status, 401);

    const missing = await t.call('/auth/v2/login', {
      json: { username: 'admin', providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /password is required/);

    const login = await t.call('/auth/v2/login', {
      json: { username: 'admin', password: ADMIN_PASSWORD, providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(login.status, 200);
    const jwt = login.body.jwtAccess as string;
    assert.equal(jwt.split('.').length, 3);
    const setCookie = String(login.headers['set-cookie']);
    assert.match(setCookie, /jwtAccess=/);
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /Secure/);
    const cookie = { cookie: `jwtAccess=${jwt}` };

    // Until the EULA is accepted and the password changed, the session can do nothing else.
    const blocked = await t.call('/devicehub/version', { headers: cookie });
    assert.equal(blocked.status, 403);
    assert.equal(blocked.body.code, ERRORS.bootstrapRequired.code);
    assert.match(blocked.body.message, /accept the EULA/);
    assert.match(blocked.body.message, /change the first-run password/);

    const refuse = await t.call('/auth/v2/eula', {
      method: 'PUT',
      headers: cookie,
      json: { agree: false, version: '1.0' },
    });
    assert.equal(refuse.status, 400);
    const unknownField = await t.call('/auth/v2/eula', {
      method: 'PUT',
      headers: cookie,
      json: { agree: true, version: '1.0', extra: 1 },
    });
    assert.equal(unknownField.status, 400);
    assert.equal(unknownField.body.message, 'failed to decode request body: json: unknown field "extra"');
    const eula = await t.call('/auth/v2/eula', {
      method: 'PUT',
      headers: cookie,
      json: { agree: true, version: '1.0' },
    });
    assert.equal(eula.status, 204);

    const stillBlocked = await t.call('/devicehub/version', { headers: cookie });
    assert.equal(stillBlocked.status, 403);
    assert.doesNotMatch(stillBlocked.body.message, /EULA/);
    assert.match(stillBlocked.body.message, /change the first-run password/);

    const badCurrent = await t.call('/auth/v2/password?locale=en-US', {
      method: 'PUT',
      headers: cookie,
      json: { currentPassword: 'wrong-one', newPassword: 'another-password' },
    });
    assert.equal(badCurrent.status, 400);
    const tooShort = await t.call('/auth/v2/password?locale=en-US', {
      method: 'PUT',
      headers: cookie,
      json: { currentPassword: ADMIN_PASSWORD, newPassword: 'short' },
    });
    assert.equal(tooShort.status, 400);
    assert.match(tooShort.body.message, /at least 8/);

    const changed = await t.call('/auth/v2/password?locale=en-US', {
      method: 'PUT',
      headers: cookie,
      json: { currentPassword: ADMIN_PASSWORD, newPassword: 'the-new-password' },
    });
    assert.equal(changed.status, 200);
    const fresh = changed.body.jwtAccess as string;
    assert.notEqual(fresh, jwt);

    const ok = await t.call('/devicehub/version', { headers: { cookie: `jwtAccess=${fresh}` } });
    assert.equal(ok.status, 200);
    assert.match(ok.body.version, /^4\.4\./);
    assert.equal(typeof ok.body.millwright, 'string');
    const asBearer = await t.call('/devicehub/version', { headers: { authorization: `Bearer ${fresh}` } });
    assert.equal(asBearer.status, 200);

    // The session from before the password change has ended.
    const old = await t.call('/devicehub/version', { headers: cookie });
    assert.equal(old.status, 401);

    const relogin = await t.call('/auth/v2/login', {
      json: { username: 'admin', password: 'the-new-password', providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(relogin.status, 200);
    const after = await t.call('/dm/host/info', {
      headers: { cookie: `jwtAccess=${relogin.body.jwtAccess}` },
    });
    assert.equal(after.status, 200);
    assert.equal(typeof after.body.hostname, 'string');
  });

  test('the bootstrap routes are refused to an API client', async () => {
    const admin = await t.edge.auth.createClient('ops', 'admin');
    const issued = await t.edge.auth.issueToken(admin.client_id, admin.client_secret);
    const res = await t.call('/auth/v2/eula', {
      method: 'PUT',
      headers: { authorization: `Bearer ${issued!.token}` },
      json: { agree: true, version: '1.0' },
    });
    assert.equal(res.status, 403);
  });
});

describe('edge OAuth and data-route credentials', () => {
  let t: TestEdge;
  let admin: string;
  before(async () => {
    t = await startTestEdge({ authRateLimit: 10_000 });
    admin = await bootstrapAdmin(t);
  });
  after(() => t.stop());

  test('token by form body and by Basic header; Bearer and legacy Basic on a data route', async () => {
    const created = await t.call('/auth/v3/api-clients', {
      headers: { authorization: `Bearer ${admin}` },
      json: { name: 'grafana', role: 'viewer' },
    });
    assert.equal(created.status, 201);
    const { client_id, client_secret } = created.body;
    assert.match(client_id, /^[0-9a-f-]{36}$/);
    assert.match(client_secret, /^mws_/);

    const byBody = await t.call('/auth/v3/oauth/token', {
      form: { grant_type: 'client_credentials', client_id, client_secret },
    });
    assert.equal(byBody.status, 200);
    assert.equal(byBody.body.token_type, 'Bearer');
    assert.equal(byBody.body.expires_in, 3600);
    assert.equal(byBody.headers['cache-control'], 'no-store');

    const byBasic = await t.call('/auth/v3/oauth/token', {
      headers: { authorization: basic(client_id, client_secret) },
      form: { grant_type: 'client_credentials' },
    });
    assert.equal(byBasic.status, 200);

    for (const token of [byBody.body.access_token, byBasic.body.access_token]) {
      const bearer = await t.call('/devicehub/version', { headers: { authorization: `Bearer ${token}` } });
      assert.equal(bearer.status, 200);
      // An access token is accepted in the legacy form too, in either half.
      assert.equal(
        (await t.call('/devicehub/version', { headers: { authorization: basic(token) } })).status,
        200,
      );
      assert.equal(
        (await t.call('/devicehub/version', { headers: { authorization: basic('admin', token) } })).status,
        200,
      );
    }

    // A long-lived API token in the legacy header.
    const apiToken = await t.call('/auth/v3/api-tokens', {
      headers: { authorization: `Bearer ${admin}` },
      json: { name: 'legacy-client', role: 'viewer' },
    });
    assert.equal(apiToken.status, 201);
    assert.match(apiToken.body.token, /^mwt_/);
    const legacy = await t.call('/devicehub/version', {
      headers: { authorization: basic(apiToken.body.token) },
    });
    assert.equal(legacy.status, 200);
    const legacyBearer = await t.call('/logs/version', {
      headers: { authorization: `Bearer ${apiToken.body.token}` },
    });
    assert.equal(legacyBearer.status, 200);
    const whoami = await t.call('/auth/v3/whoami', {
      headers: { authorization: basic(apiToken.body.token) },
    });
    assert.deepEqual(whoami.body, { subject: `token:${apiToken.body.id}`, role: 'viewer', scheme: 'basic' });

    // Revoking the token ends it at once.
    const revoke = await t.call(`/auth/v3/api-tokens/${apiToken.body.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(revoke.status, 204);
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: basic(apiToken.body.token) } })).status,
      401,
    );
  });

  test('every version probe answers an authenticated caller', async () => {
    for (const path of VERSION_PROBES) {
      const res = await t.call(path, { headers: { authorization: `Bearer ${admin}` } });
      assert.equal(res.status, 200, path);
      assert.match(res.body.version, /^4\.4\.\d+$/, path);
    }
  });

  test('token endpoint errors are OAuth 2.0 bodies', async () => {
    const { clientId } = await clientToken(t, admin);
    const cases: [Record<string, string>, Record<string, string>, number, string][] = [
      [{}, {}, 400, 'invalid_request'],
      [{ grant_type: 'password', username: 'a', password: 'b' }, {}, 400, 'unsupported_grant_type'],
      [{ grant_type: 'client_credentials', client_id: clientId }, {}, 400, 'invalid_request'],
      [
        { grant_type: 'client_credentials', client_id: clientId, client_secret: 'mws_wrong' },
        {},
        401,
        'invalid_client',
      ],
      [
        { grant_type: 'client_credentials', client_id: 'no-such-client', client_secret: 'x' },
        {},
        401,
        'invalid_client',
      ],
      [
        { grant_type: 'client_credentials' },
        { authorization: basic(clientId, 'mws_wrong') },
        401,
        'invalid_client',
      ],
    ];
    for (const [form, headers, status, error] of cases) {
      const res = await t.call('/auth/v3/oauth/token', { form, headers });
      assert.equal(res.status, status, JSON.stringify(form));
      assert.equal(res.body.error, error, JSON.stringify(form));
      assert.equal(typeof res.body.error_description, 'string');
    }
  });

  test('401 without, with a bad, an expired or a revoked credential', async () => {
    const none = await t.call('/devicehub/version');
    assert.equal(none.status, 401);
    assert.equal(none.body.code, ERRORS.unauthorized.code);
    assert.match(String(none.headers['www-authenticate']), /Bearer/);

    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: 'Bearer not-a-token' } })).status,
      401,
    );
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: basic('mwt_nope') } })).status,
      401,
    );
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: 'Digest abc' } })).status,
      401,
    );
    assert.equal(
      (await t.call('/devicehub/version', { headers: { cookie: 'jwtAccess=garbage' } })).status,
      401,
    );

    // Expired: a token signed with the edge's own key, issued two hours ago.
    const { clientId, token } = await clientToken(t, admin);
    const key = await t.edge.database
      .typed<AuthTables>()
      .selectFrom('auth_setting')
      .select('value')
      .where('key', '=', 'jwt_signing_key')
      .executeTakeFirstOrThrow();
    const signer = new TokenSigner(Buffer.from(key.value as string, 'base64'));
    const expired = signer.sign(
      { sub: `client:${clientId}`, kind: 'access', role: 'admin' },
      3600,
      Date.now() - 7200_000,
    );
    const exp = await t.call('/devicehub/version', { headers: { authorization: `Bearer ${expired}` } });
    assert.equal(exp.status, 401);
    assert.match(exp.body.message, /expired/);
    // A token signed with another key.
    const forged = new TokenSigner(Buffer.alloc(32, 7)).sign(
      { sub: `client:${clientId}`, kind: 'access', role: 'admin' },
      3600,
    );
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: `Bearer ${forged}` } })).status,
      401,
    );

    // Revoked: rotating the secret ends earlier tokens; deleting the client ends all of them.
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: `Bearer ${token}` } })).status,
      200,
    );
    const rotated = await t.call(`/auth/v3/api-clients/${clientId}/secret`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(rotated.status, 200);
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: `Bearer ${token}` } })).status,
      401,
    );
    const again = await t.call('/auth/v3/oauth/token', {
      form: {
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: rotated.body.client_secret,
      },
    });
    assert.equal(again.status, 200);
    const newToken = again.body.access_token as string;
    assert.equal(
      (await t.call('/devicehub/version', { headers: { authorization: `Bearer ${newToken}` } })).status,
      200,
    );
    const del = await t.call(`/auth/v3/api-clients/${clientId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(del.status, 204);
    const gone = await t.call('/devicehub/version', { headers: { authorization: `Bearer ${newToken}` } });
    assert.equal(gone.status, 401);
    assert.match(gone.body.message, /revoked/);
    assert.equal(
      (
        await t.call(`/auth/v3/api-clients/${clientId}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${admin}` },
        })
      ).status,
      404,
    );
  });

  test('a viewer reads but gets 403 on anything that changes state', async () => {
    const viewer = await clientToken(t, admin, 'viewer');
    const h = { authorization: `Bearer ${viewer.token}` };
    assert.equal((await t.call('/devicehub/version', { headers: h })).status, 200);
    assert.equal((await t.call('/auth/v3/api-clients', { headers: h })).status, 200);
    const create = await t.call('/auth/v3/api-clients', { headers: h, json: { name: 'sneaky' } });
    assert.equal(create.status, 403);
    assert.match(create.body.message, /viewer role cannot change state/);
    const del = await t.call(`/auth/v3/api-clients/${viewer.clientId}`, { method: 'DELETE', headers: h });
    assert.equal(del.status, 403);
    const tok = await t.call('/auth/v3/api-tokens', { headers: h, json: { name: 'sneaky' } });
    assert.equal(tok.status, 403);
  });

  test('API clients are listed with paging and validated on create', async () => {
    const h = { authorization: `Bearer ${admin}` };
    for (const name of ['alpha', 'beta', 'gamma']) {
      assert.equal(
        (await t.call('/auth/v3/api-clients', { headers: h, json: { name, role: 'viewer' } })).status,
        201,
      );
    }
    const page = await t.call('/auth/v3/api-clients?limit=2&offset=0&sort=name:asc&filter=name:contains:a', {
      headers: h,
    });
    assert.equal(page.status, 200);
    assert.equal(page.body.limit, 2);
    assert.equal(page.body.offset, 0);
    assert.ok(page.body.total >= 3);
    assert.equal(page.body.items.length, 2);
    assert.equal(page.body.items[0].name, 'alpha');
    assert.equal(page.body.items[0].client_secret, undefined, 'a secret is never listed');
    const bad = await t.call('/auth/v3/api-clients?limit=5000', { headers: h });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /limit/);
    const badRole = await t.call('/auth/v3/api-clients', { headers: h, json: { name: 'x', role: 'root' } });
    assert.equal(badRole.status, 400);
    const noName = await t.call('/auth/v3/api-clients', { headers: h, json: { role: 'viewer' } });
    assert.equal(noName.status, 400);
    assert.match(noName.body.message, /name is required/);
  });
});

describe('edge rate limit', () => {
  let t: TestEdge;
  before(async () => {
    t = await startTestEdge({ authRateLimit: 5 });
  });
  after(() => t.stop());

  test('429 after too many token attempts from one address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await t.call('/auth/v3/oauth/token', {
        form: { grant_type: 'client_credentials', client_id: 'guess', client_secret: `guess-${i}` },
      });
      statuses.push(res.status);
      if (res.status === 429) {
        assert.ok(Number(res.headers['retry-after']) >= 1);
        assert.equal(res.body.code, ERRORS.tooManyRequests.code);
      }
    }
    // The first five failures of one (address, name) pair are checked; then the pair waits a
    // growing delay (0.25 s, doubling) and attempts inside it are refused unchecked. On a loaded
    // machine an attempt may arrive after the first, short delay: it is checked (401) and the
    // next delay is longer.
    assert.deepEqual(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
    assert.ok(statuses.slice(5).includes(429), `delayed after five failures: ${statuses.join(',')}`);
    assert.ok(
      statuses.slice(5).every((s) => s === 401 || s === 429),
      statuses.join(','),
    );
    // Login attempts count against the same per-address budget.
    const logins: number[] = [];
    for (let i = 0; i < 7; i++) {
      logins.push(
        (
          await t.call('/auth/v2/login', {
            json: { username: 'admin', password: `x${i}xxxxxx`, providerId: LOCAL_PROVIDER_ID },
          })
        ).status,
      );
    }
    assert.ok(logins.includes(429), `login attempts limited: ${logins.join(',')}`);
  });
});
