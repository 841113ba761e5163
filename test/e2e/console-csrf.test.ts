/**
 * The session cookie's flags and the CSRF rule on a real edge over HTTPS: a browser's change made
 * with the session cookie needs `X-CSRF-Token` (REST, GraphQL over POST, a subscription's
 * connection_init); Bearer callers and the contract's cookie-only bootstrap scripts are unaffected;
 * logout clears both cookies.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { ADMIN_PASSWORD, startTestEdge, type HttpReply, type TestEdge } from '../helpers/edge.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { TWINS, TWINS_PATH } from '../../src/client/index.js';

let t: TestEdge;
const NEW_PASSWORD = 'a-new-admin-password';

before(async () => {
  t = await startTestEdge();
});
after(() => t.stop());

/** The cookies a reply sets, by name: value and attributes. */
function setCookies(res: HttpReply): Map<string, { value: string; attrs: string[] }> {
  const raw = res.headers['set-cookie'];
  const list = Array.isArray(raw) ? raw : raw ? [raw] : [];
  const out = new Map<string, { value: string; attrs: string[] }>();
  for (const line of list) {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair!.indexOf('=');
    out.set(pair!.slice(0, eq), { value: pair!.slice(eq + 1), attrs: attrs.map((a) => a.toLowerCase()) });
  }
  return out;
}

interface Session {
  jwt: string;
  csrf: string;
  /** The headers a browser sends on the console's calls: both cookies and its origin. */
  browser: Record<string, string>;
}

async function login(password: string): Promise<Session> {
  const res = await t.call('/auth/v2/login', {
    json: { username: 'admin', password, providerId: LOCAL_PROVIDER_ID },
  });
  assert.equal(res.status, 200, res.text);
  const cookies = setCookies(res);
  const jwt = cookies.get('jwtAccess')!.value;
  const csrf = cookies.get('csrfToken')!.value;
  return {
    jwt,
    csrf,
    browser: {
      cookie: `jwtAccess=${jwt}; csrfToken=${csrf}`,
      origin: t.url,
      'sec-fetch-site': 'same-origin',
    },
  };
}

let session: Session;

describe('the session cookie and its CSRF token', () => {
  test('login sets jwtAccess HttpOnly, Secure, SameSite=Strict and csrfToken readable, Secure, SameSite=Strict', async () => {
    const res = await t.call('/auth/v2/login', {
      json: { username: 'admin', password: ADMIN_PASSWORD, providerId: LOCAL_PROVIDER_ID },
    });
    assert.equal(res.status, 200);
    const cookies = setCookies(res);
    const jwt = cookies.get('jwtAccess');
    const csrf = cookies.get('csrfToken');
    assert.ok(jwt && csrf, `both cookies set: ${[...cookies.keys()]}`);
    assert.equal(jwt.value, res.body.jwtAccess);
    for (const a of ['httponly', 'secure', 'samesite=strict', 'path=/']) assert.ok(jwt.attrs.includes(a), a);
    for (const a of ['secure', 'samesite=strict', 'path=/']) assert.ok(csrf.attrs.includes(a), a);
    assert.ok(!csrf.attrs.includes('httponly'), 'the console reads csrfToken');
    assert.match(csrf.value, /^[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{40,}$/);
  });

  test('a browser change with the cookie but without X-CSRF-Token is refused with 403 csrf_token_required', async () => {
    session = await login(ADMIN_PASSWORD);
    const eula = { agree: true, version: '1.0' };
    const refused = await t.call('/auth/v2/eula', { method: 'PUT', headers: session.browser, json: eula });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.code ?? refused.body.error?.code, 'csrf_token_required', refused.text);
    assert.match(refused.text, /X-CSRF-Token/);
    // A wrong token, a token of another session, and a header that differs from the cookie: refused.
    const other = await login(ADMIN_PASSWORD);
    for (const token of ['x', `${session.csrf}x`, other.csrf]) {
      const res = await t.call('/auth/v2/eula', {
        method: 'PUT',
        headers: { ...session.browser, 'x-csrf-token': token },
        json: eula,
      });
      assert.equal(res.status, 403, `token ${token}: ${res.text}`);
    }
    // Origin alone (no csrfToken cookie) marks a browser too.
    const originOnly = await t.call('/auth/v2/eula', {
      method: 'PUT',
      headers: { cookie: `jwtAccess=${session.jwt}`, origin: 'https://evil.example' },
      json: eula,
    });
    assert.equal(originOnly.status, 403);
    const ok = await t.call('/auth/v2/eula', {
      method: 'PUT',
      headers: { ...session.browser, 'x-csrf-token': session.csrf },
      json: eula,
    });
    assert.equal(ok.status, 204, ok.text);
  });

  test("the contract's bootstrap script (cookie jwtAccess only, no browser headers) keeps working", async () => {
    const res = await t.call('/auth/v2/password?locale=en-US', {
      method: 'PUT',
      headers: { cookie: `jwtAccess=${session.jwt}` },
      json: { currentPassword: ADMIN_PASSWORD, newPassword: NEW_PASSWORD },
    });
    assert.equal(res.status, 200, res.text);
    // The password change renews the session: both cookies again.
    const cookies = setCookies(res);
    assert.ok(cookies.get('jwtAccess') && cookies.get('csrfToken'));
    session = await login(NEW_PASSWORD);
  });

  test('REST with the header passes; Bearer callers need no token, with or without an Origin', async () => {
    const body = { name: 'csrf-check', role: 'viewer' };
    const refused = await t.call('/auth/v3/api-clients', { headers: session.browser, json: body });
    assert.equal(refused.status, 403, refused.text);
    const created = await t.call('/auth/v3/api-clients', {
      headers: { ...session.browser, 'x-csrf-token': session.csrf },
      json: body,
    });
    assert.equal(created.status, 201, created.text);
    // Safe methods need no token.
    const list = await t.call('/auth/v3/api-clients', { headers: session.browser });
    assert.equal(list.status, 200);
    const bearer = await t.call('/auth/v3/api-tokens', {
      headers: { authorization: `Bearer ${session.jwt}`, origin: t.url },
      json: { name: 'csrf-bearer', role: 'viewer' },
    });
    assert.equal(bearer.status, 201, bearer.text);
  });

  test('GraphQL over POST with the cookie needs the token', async () => {
    const query = { query: 'mutation { DeleteDevices(IDs: []) }' };
    const refused = await t.call('/devicehub/v2', { headers: session.browser, json: query });
    assert.equal(refused.status, 403, refused.text);
    const ok = await t.call('/devicehub/v2', {
      headers: { ...session.browser, 'x-csrf-token': session.csrf },
      json: query,
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.DeleteDevices, 0);
  });

  test('a subscription over a WebSocket opened with the cookie carries the token in connection_init', async () => {
    const run = async (init: Record<string, unknown>) => {
      const ws = new WebSocket(`${t.url.replace(/^https/, 'wss')}${TWINS_PATH}`, 'graphql-transport-ws', {
        headers: { cookie: session.browser.cookie!, origin: t.url },
        rejectUnauthorized: false,
      });
      const messages: any[] = [];
      const got = new Promise<any>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer: ${JSON.stringify(messages)}`)), 10_000);
        ws.on('message', (data) => {
          const m = JSON.parse(String(data));
          messages.push(m);
          if (m.type === 'connection_ack') {
            ws.send(
              JSON.stringify({
                id: '1',
                type: 'subscribe',
                payload: {
                  query: TWINS.PlaygroundMessages,
                  variables: { input: { Expression: 'value * 2', Messages: [{ value: 1 }] } },
                },
              }),
            );
          } else if (m.id === '1') {
            clearTimeout(timer);
            resolve(m);
          }
        });
        ws.once('error', reject);
      });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      ws.send(JSON.stringify({ type: 'connection_init', payload: init }));
      const m = await got;
      ws.close();
      return m;
    };
    const refused = await run({});
    assert.equal(refused.type, 'error', JSON.stringify(refused));
    assert.match(JSON.stringify(refused.payload), /X-CSRF-Token/);
    const ok = await run({ 'X-CSRF-Token': session.csrf });
    assert.equal(ok.type, 'next', JSON.stringify(ok));
    assert.equal(ok.payload.data.PlaygroundMessages.Output, 2);
  });

  test('logout needs the token from a browser and clears both cookies', async () => {
    const refused = await t.call('/auth/v2/logout', { method: 'POST', headers: session.browser });
    assert.equal(refused.status, 403);
    const res = await t.call('/auth/v2/logout', {
      method: 'POST',
      headers: { ...session.browser, 'x-csrf-token': session.csrf },
    });
    assert.equal(res.status, 204, res.text);
    const cookies = setCookies(res);
    for (const name of ['jwtAccess', 'csrfToken']) {
      const c = cookies.get(name);
      assert.ok(c, `${name} cleared`);
      assert.equal(c.value, '');
      assert.ok(
        c.attrs.some((a) => a === 'max-age=0' || a.startsWith('expires=thu, 01 jan 1970')),
        `${name}: ${c.attrs}`,
      );
    }
    // Anonymous: 401 like any route.
    assert.equal((await t.call('/auth/v2/logout', { method: 'POST' })).status, 401);
  });
});
