/** The kernel's HTTP server: certificate on first start, plain HTTP, graceful close, strict bodies. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import pino from 'pino';
import { closeGracefully, createHttpApp, listen, redactUrlQuery } from '../../src/kernel/http/server.js';
import { AppError, ERRORS } from '../../src/kernel/errors.js';
import { http } from '../helpers/edge.js';

const logger = pino({ level: 'silent' });
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'mw-http-'));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const listenOpts = { host: '127.0.0.1', port: 0, optionName: 'port', envName: 'MILLWRIGHT_TEST_PORT' };

test('a self-signed certificate is created on first start, kept and reused', async () => {
  const dir = tmp();
  const first = await createHttpApp({ logger, plainHttp: false, dataDir: dir });
  assert.equal(first.tls?.created, true);
  const crt = join(dir, 'tls', 'server.crt');
  const key = join(dir, 'tls', 'server.key');
  assert.equal(statSync(key).mode & 0o777, 0o600, 'the key is private');
  const cert = new X509Certificate(readFileSync(crt));
  assert.match(cert.subjectAltName ?? '', /DNS:localhost/);
  assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
  first.app.get('/x', { config: { permission: 'public' } }, async () => ({ ok: true }));
  const url = await listen(first.app, listenOpts, true);
  assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
  assert.deepEqual((await http(`${url}/x`)).body, { ok: true });
  await first.app.close();

  const second = await createHttpApp({ logger, plainHttp: false, dataDir: dir });
  assert.equal(second.tls?.created, false);
  assert.equal(second.tls?.cert, first.tls?.cert);
  await second.app.close();
});

test('--http serves plain HTTP and creates no certificate', async () => {
  const dir = tmp();
  const { app, tls } = await createHttpApp({ logger, plainHttp: true, dataDir: dir });
  assert.equal(tls, null);
  app.get('/x', async () => ({ ok: true }));
  const url = await listen(app, listenOpts, false);
  assert.match(url, /^http:\/\//);
  assert.equal((await http(`${url}/x`)).status, 200);
  await app.close();
});

test('graceful close finishes an in-flight request and refuses new connections', async () => {
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  app.get('/slow', async () => {
    entered();
    // A request that takes time: what the graceful close waits for.
    await new Promise((r) => setTimeout(r, 300));
    return { done: true };
  });
  const url = await listen(app, listenOpts, false);
  const slow = http(`${url}/slow`);
  await inside;
  const closed = closeGracefully(app, 5000);
  const res = await slow;
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { done: true });
  assert.equal(await closed, true);
  await assert.rejects(http(`${url}/slow`), /ECONNREFUSED/);
});

test('graceful close gives up on a request that outlives the timeout', async () => {
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  app.get('/stuck', async () => {
    entered();
    // A request that outlives the close timeout: what is tested.
    await new Promise((r) => setTimeout(r, 5000));
    return {};
  });
  const url = await listen(app, listenOpts, false);
  const stuck = http(`${url}/stuck`).catch((e: Error) => e);
  await inside;
  const started = Date.now();
  assert.equal(await closeGracefully(app, 200), false);
  assert.ok(Date.now() - started < 2000);
  assert.ok((await stuck) instanceof Error, 'the stuck connection was cut');
});

test('strict bodies, one error shape, no 500 for a client mistake', async () => {
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  app.post(
    '/things',
    {
      schema: {
        body: Type.Object(
          { name: Type.String(), size: Type.Integer({ minimum: 1 }) },
          { additionalProperties: false },
        ),
      },
    },
    async () => ({ ok: true }),
  );
  app.get('/conflict', async () => {
    throw new AppError(ERRORS.conflict, 'it is taken');
  });
  app.get('/boom', async () => {
    throw new Error('secret internals');
  });
  const url = await listen(app, listenOpts, false);
  const unknown = await http(`${url}/things`, { json: { name: 'a', size: 1, colour: 'red' } });
  assert.equal(unknown.status, 400);
  assert.deepEqual(unknown.body, {
    code: ERRORS.unknownField.code,
    message: 'failed to decode request body: json: unknown field "colour"',
  });
  const missing = await http(`${url}/things`, { json: { name: 'a' } });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.message, 'body size is required');
  const small = await http(`${url}/things`, { json: { name: 'a', size: 0 } });
  assert.equal(small.status, 400);
  assert.match(small.body.message, /size must be >= 1/);
  const malformed = await http(`${url}/things`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(malformed.status, 400);
  const conflict = await http(`${url}/conflict`);
  assert.deepEqual(
    [conflict.status, conflict.body],
    [409, { code: ERRORS.conflict.code, message: 'it is taken' }],
  );
  const boom = await http(`${url}/boom`);
  assert.deepEqual(
    [boom.status, boom.body],
    [500, { code: ERRORS.internal.code, message: 'internal server error' }],
  );
  const none = await http(`${url}/nowhere`);
  assert.equal(none.status, 404);
  assert.equal(none.body.code, ERRORS.notFound.code);
  await app.close();
});

test('a non-finite number anywhere in query, params or body is a 400 naming where it is', async () => {
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  // Ajv coerces a query number from its schema: `Infinity` passes it as a number.
  app.post(
    '/any/:n',
    { schema: { querystring: Type.Object({ n: Type.Optional(Type.Number()) }) } },
    async (request) => ({ ok: true, body: request.body }),
  );
  await app.ready();
  const post = (url: string, payload: string) =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload });
  const cases: [string, string, string | null][] = [
    ['/any/1', '{"a":{"b":[1,2,1e309]},"c":"x"}', 'body a.b[2] must be a finite number'],
    ['/any/1', '[{"x":1},{"y":-1e400}]', 'body [1].y must be a finite number'],
    ['/any/1', '1e309', 'body must be a finite number'],
    ['/any/1?n=Infinity', '{}', 'querystring n must be a finite number'],
    ['/any/1', '{"a":{"b":[1,2,3]},"c":"1e309","d":null}', null],
  ];
  for (const [url, body, message] of cases) {
    const r = await post(url, body);
    if (message === null) assert.equal(r.statusCode, 200, r.body);
    else assert.deepEqual([r.statusCode, r.json().message], [400, message], body);
  }
  await app.close();
});

test('secret query values are redacted from logged URLs', () => {
  assert.equal(
    redactUrlQuery('/x?client_secret=abc&limit=5&access_token=t0k&password=p'),
    '/x?client_secret=[redacted]&limit=5&access_token=[redacted]&password=[redacted]',
  );
});
