/**
 * The manager's OpenID Connect realm `standalone` and the console's cookie session, on the wire:
 * the first administrator, discovery and JWKS, the authorization code flow with PKCE S256 (and
 * its refusals), userinfo, the console's sign-in through `/console/login` (main and admin ports),
 * the CSRF rule on the session cookie, logout; API tokens unchanged.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, randomBytes, verify } from 'node:crypto';
import { http, type HttpReply } from '../helpers/edge.js';
import { startTestManager, type TestManager } from '../helpers/manager.js';

const PASSWORD = 'first-admin-pw-1';
let m: TestManager;
before(async () => {
  m = await startTestManager({ adminPassword: PASSWORD });
});
after(() => m.stop());

const realm = () => `${m.url}/auth/realms/standalone`;
const oidc = () => `${realm()}/protocol/openid-connect`;

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function authorizeParams(redirectUri: string, challenge: string, extra: Record<string, string> = {}) {
  return {
    response_type: 'code',
    client_id: 'manager-console',
    redirect_uri: redirectUri,
    scope: 'openid',
    state: 'st-1',
    nonce: 'n-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
}

/** The `name=value` pairs of a reply's Set-Cookie headers. */
function cookiesOf(reply: HttpReply): Record<string, string> {
  const raw = reply.headers['set-cookie'];
  const out: Record<string, string> = {};
  for (const line of Array.isArray(raw) ? raw : raw ? [raw] : []) {
    const [pair] = line.split(';');
    const eq = pair!.indexOf('=');
    out[pair!.slice(0, eq)] = pair!.slice(eq + 1);
  }
  return out;
}

describe('first administrator', () => {
  test('"admin" with the configured password and a global admin role', async () => {
    assert.deepEqual(m.manager.auth.firstRun, { username: 'admin', password: undefined });
    const users = await m.admin('/admin/v1/users');
    assert.deepEqual(
      users.body.items.map((u: { username: string }) => u.username),
      ['admin'],
    );
    const roles = await m.admin('/admin/v1/user/project/roles/paged');
    assert.equal(roles.body.items[0].role, 'admin');
    assert.equal(roles.body.items[0].companyId, null);
  });
});

describe('discovery and keys', () => {
  test('the discovery document names every endpoint of the realm', async () => {
    const r = await http(`${realm()}/.well-known/openid-configuration`);
    assert.equal(r.status, 200);
    assert.equal(r.body.issuer, realm());
    assert.equal(r.body.authorization_endpoint, `${oidc()}/auth`);
    assert.equal(r.body.token_endpoint, `${oidc()}/token`);
    assert.equal(r.body.userinfo_endpoint, `${oidc()}/userinfo`);
    assert.equal(r.body.jwks_uri, `${oidc()}/certs`);
    assert.equal(r.body.end_session_endpoint, `${oidc()}/logout`);
    assert.deepEqual(r.body.code_challenge_methods_supported, ['S256']);
  });
  test('the JWKS holds one ES256 key', async () => {
    const r = await http(`${oidc()}/certs`);
    assert.equal(r.body.keys.length, 1);
    assert.equal(r.body.keys[0].alg, 'ES256');
    assert.equal(r.body.keys[0].kty, 'EC');
    assert.equal(r.body.keys[0].d, undefined, 'no private part');
  });
});

describe('authorization code with PKCE', () => {
  const callback = () => `${m.url}/console/callback`;

  async function signIn(challenge: string, password = PASSWORD) {
    return http(`${oidc()}/auth`, {
      form: { ...authorizeParams(callback(), challenge), username: 'admin', password },
    });
  }

  test('the form, a wrong password, then a code redeemed once with its verifier', async () => {
    const { verifier, challenge } = pkce();
    const q = new URLSearchParams(authorizeParams(callback(), challenge));
    const form = await http(`${oidc()}/auth?${q}`);
    assert.equal(form.status, 200);
    assert.match(form.text, /<label for="password">Password<\/label>/);
    assert.match(String(form.headers['content-security-policy']), /script-src 'self'/);

    const wrong = await signIn(challenge, 'not-the-password');
    assert.equal(wrong.status, 401);
    assert.match(wrong.text, /Invalid user name or password/);

    const ok = await signIn(challenge);
    assert.equal(ok.status, 303);
    const back = new URL(String(ok.headers.location));
    assert.equal(`${back.origin}${back.pathname}`, callback());
    assert.equal(back.searchParams.get('state'), 'st-1');
    const code = back.searchParams.get('code')!;

    const token = (code_verifier: string) =>
      http(`${oidc()}/token`, {
        form: {
          grant_type: 'authorization_code',
          code,
          client_id: 'manager-console',
          redirect_uri: callback(),
          code_verifier,
        },
      });
    const bad = await token(pkce().verifier);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'invalid_grant');
    // The code was spent by the failed attempt: a code is used once, whatever the outcome.
    const again = await token(verifier);
    assert.equal(again.body.error, 'invalid_grant');

    const ok2 = await signIn(challenge);
    const code2 = new URL(String(ok2.headers.location)).searchParams.get('code')!;
    const tokens = await http(`${oidc()}/token`, {
      form: {
        grant_type: 'authorization_code',
        code: code2,
        client_id: 'manager-console',
        redirect_uri: callback(),
        code_verifier: verifier,
      },
    });
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal(tokens.body.token_type, 'Bearer');

    // The ID token is signed by the key of the JWKS and carries the nonce.
    const [h, p, s] = String(tokens.body.id_token).split('.');
    const jwk = (await http(`${oidc()}/certs`)).body.keys[0];
    const valid = verify(
      'sha256',
      Buffer.from(`${h}.${p}`),
      { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' },
      Buffer.from(s!, 'base64url'),
    );
    assert.ok(valid, 'the ID token verifies with the published key');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    assert.equal(claims.sub, 'admin');
    assert.equal(claims.nonce, 'n-1');
    assert.equal(claims.iss, realm());

    const info = await http(`${oidc()}/userinfo`, {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(info.status, 200);
    assert.equal(info.body.preferred_username, 'admin');

    // Logout with the ID token ends the session: userinfo refuses the access token afterwards.
    const out = await http(`${oidc()}/logout?id_token_hint=${tokens.body.id_token}`);
    assert.equal(out.status, 200);
    const after = await http(`${oidc()}/userinfo`, {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(after.status, 401);
  });

  test('refusals: another client, a foreign redirect, no PKCE, plain PKCE', async () => {
    const { challenge } = pkce();
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ client_id: 'someone' }, /unknown client_id/],
      [{ redirect_uri: 'https://evil.example/console/callback' }, /redirect_uri must be/],
      [{ redirect_uri: `${m.url}/elsewhere` }, /redirect_uri must be/],
      [{ code_challenge: '' }, /PKCE is required/],
      [{ code_challenge_method: 'plain' }, /PKCE is required/],
    ];
    for (const [extra, message] of cases) {
      const q = new URLSearchParams(authorizeParams(callback(), challenge, extra));
      const r = await http(`${oidc()}/auth?${q}`);
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.match(r.text, message);
      assert.equal(r.headers.location, undefined, 'never redirected');
    }
  });
});

/** The console's whole sign-in on `base` (main or admin port): cookies of the session. */
async function consoleSignIn(base: string): Promise<Record<string, string>> {
  const start = await http(`${base}/console/login`);
  assert.equal(start.status, 303);
  const login = cookiesOf(start).mwmLogin!;
  const authorize = new URL(String(start.headers.location));
  assert.equal(authorize.origin, m.url, 'the realm is on the main port');
  const form = await http(authorize.toString());
  assert.equal(form.status, 200);
  const posted = await http(`${oidc()}/auth`, {
    form: { ...Object.fromEntries(authorize.searchParams), username: 'admin', password: PASSWORD },
  });
  assert.equal(posted.status, 303);
  const back = String(posted.headers.location);
  assert.ok(back.startsWith(`${base}/console/callback?`), back);
  const done = await http(back, { headers: { cookie: `mwmLogin=${login}` } });
  assert.equal(done.status, 303, done.text);
  assert.equal(done.headers.location, '/');
  const cookies = cookiesOf(done);
  assert.ok(cookies.mwmSession && cookies.mwmCsrfToken);
  return cookies;
}

describe('the console session', () => {
  test('sign in through /console/login, the CSRF rule, logout', async () => {
    const c = await consoleSignIn(m.url);
    const cookie = `mwmSession=${c.mwmSession}; mwmCsrfToken=${c.mwmCsrfToken}`;
    const me = await http(`${m.url}/console/session`, { headers: { cookie } });
    assert.equal(me.status, 200);
    assert.equal(me.body.username, 'admin');
    assert.equal(me.body.scheme, 'cookie');

    const noCsrf = await http(`${m.url}/api/v1/company`, {
      json: { companyName: 'csrf-co' },
      headers: { cookie },
    });
    assert.equal(noCsrf.status, 403);
    assert.match(noCsrf.text, /X-CSRF-Token/);
    const withCsrf = await http(`${m.url}/api/v1/company`, {
      json: { companyName: 'csrf-co' },
      headers: { cookie, 'x-csrf-token': c.mwmCsrfToken! },
    });
    assert.equal(withCsrf.status, 201, withCsrf.text);

    const out = await http(`${m.url}/console/logout`, {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': c.mwmCsrfToken! },
    });
    assert.equal(out.status, 204);
    const gone = await http(`${m.url}/console/session`, { headers: { cookie } });
    assert.equal(gone.status, 401);
  });

  test('the admin port signs in through the realm of the main port', async () => {
    const c = await consoleSignIn(m.adminUrl);
    const users = await http(`${m.adminUrl}/admin/v1/users`, {
      headers: { cookie: `mwmSession=${c.mwmSession}` },
    });
    assert.equal(users.status, 200);
  });

  test('a callback without its login cookie is refused', async () => {
    const start = await http(`${m.url}/console/login`);
    const authorize = new URL(String(start.headers.location));
    const posted = await http(`${oidc()}/auth`, {
      form: { ...Object.fromEntries(authorize.searchParams), username: 'admin', password: PASSWORD },
    });
    const done = await http(String(posted.headers.location));
    assert.equal(done.status, 400);
    assert.equal(cookiesOf(done).mwmSession, undefined);
  });

  test('API tokens work unchanged', async () => {
    const r = await m.call('/api/v1/whoami');
    assert.equal(r.status, 200);
    assert.equal(r.body.tokenName, 'test-admin');
  });
});
