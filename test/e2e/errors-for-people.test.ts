/** Issue 11, item 7: error answers a person can act on (forms, bad JSON, plain HTTP on HTTPS). */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { request } from 'undici';
import { ADMIN_PASSWORD, insecureAgent, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { ERRORS } from '../../src/kernel/errors.js';

let t: TestEdge;
before(async () => {
  t = await startTestEdge();
});
after(() => t.stop());

async function post(path: string, body: string, contentType: string) {
  const res = await request(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body,
    dispatcher: insecureAgent,
  });
  return { status: res.statusCode, body: (await res.body.json()) as { code: string; message: string } };
}

test('a login posted as a form is told that JSON is expected', async () => {
  const r = await post(
    '/auth/v2/login',
    // `curl -d '{"username":...}'` without -H 'content-type: application/json' sends the JSON as a form.
    JSON.stringify({ username: 'admin', password: ADMIN_PASSWORD, providerId: LOCAL_PROVIDER_ID }),
    'application/x-www-form-urlencoded',
  );
  assert.equal(r.status, 400);
  assert.match(r.body.message, /expects a JSON body \(content-type: application\/json\)/);
  assert.match(r.body.message, /got application\/x-www-form-urlencoded \(curl -d sends a form/);
  assert.match(r.body.message, /body username is required/);
});

test('bad JSON is told what is wrong and where, without echoing the body', async () => {
  const r = await post('/auth/v2/login', '{"username":"admin",\n "password":}', 'application/json');
  assert.equal(r.status, 400);
  assert.equal(r.body.code, ERRORS.invalidJson.code);
  assert.notEqual(r.body.code, 'fst_err_ctp_invalid_json_body');
  assert.match(r.body.message, /not valid JSON: Unexpected token '\}' at line 2, column 13/);
  const trailing = await post('/auth/v2/login', '{"username":"admin",}', 'application/json');
  assert.match(trailing.body.message, /Expected double-quoted property name at line 1, column 21/);
  const form = await post('/auth/v2/login', 'username=admin&password=secret-x', 'application/json');
  assert.match(form.body.message, /looks like a form/);
  assert.doesNotMatch(form.body.message, /secret-x/);
  const empty = await post('/auth/v2/login', '', 'application/json');
  assert.equal(empty.status, 400);
  assert.match(empty.body.message, /the body is empty/);
  // Prototype poisoning stays refused.
  const poisoned = await post('/auth/v2/login', '{"__proto__":{"x":1}}', 'application/json');
  assert.equal(poisoned.status, 400);
});

test('plain HTTP on the HTTPS port answers with the https:// address instead of an empty reply', async () => {
  const port = Number(new URL(t.url).port);
  const text = await new Promise<string>((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () =>
      s.write(`GET /devicehub/version HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`),
    );
    let out = '';
    s.on('data', (d) => (out += d));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
  assert.match(text, /^HTTP\/1\.1 400 /);
  assert.match(text, new RegExp(`location: https://127\\.0\\.0\\.1:${port}/devicehub/version`));
  const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { code: string; message: string };
  assert.equal(body.code, ERRORS.httpsRequired.code);
  assert.match(body.message, /use https:\/\/127\.0\.0\.1:\d+\/devicehub\/version/);
  // HTTPS on the same port still works.
  const res = await request(`${t.url}/devicehub/version`, { dispatcher: insecureAgent });
  assert.equal(res.statusCode === 200 || res.statusCode === 401, true);
  await res.body.dump();
});
