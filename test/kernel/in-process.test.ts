/**
 * In-process dispatch (the edge link's way into the edge's app): a Fastify app answers through it
 * as it answers over a socket: buffered and streamed bodies, request bodies with and without a
 * length, HEAD, errors, repeated headers, back-pressure and an abort half way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import Fastify from 'fastify';
import { dispatch, type ExchangeHeaders, type InProcessRequest } from '../../src/kernel/http/in-process.js';

interface Answer {
  kind: 'whole' | 'streamed' | 'failed';
  status: number;
  headers: ExchangeHeaders;
  body: Buffer;
  chunks: number;
  error?: Error;
}

async function app() {
  const a = Fastify();
  a.get('/json', async () => ({ hello: 'world' }));
  a.post('/echo', async (request) => ({ got: request.body, ip: request.ip }));
  a.get('/big', async (_request, reply) => {
    const parts = Array.from({ length: 40 }, (_, i) => Buffer.alloc(10_000, 65 + (i % 26)));
    return reply.type('application/octet-stream').send(Readable.from(parts));
  });
  a.get('/broken', async (_request, reply) => {
    const s = new Readable({ read() {} });
    s.push(Buffer.alloc(1000, 1));
    setTimeout(() => s.destroy(new Error('disk gone')), 10);
    return reply.send(s);
  });
  a.get('/cookies', async (_request, reply) => {
    void reply.header('set-cookie', ['a=1', 'b=2']);
    return reply.code(201).send('ok');
  });
  a.get('/fail', async () => {
    throw new Error('handler failed');
  });
  a.get('/drain', async (request) => {
    let n = 0;
    for await (const c of request.raw) n += (c as Buffer).length;
    return { read: n };
  });
  a.get('/headers', async (request) => ({ cookie: request.headers.cookie, x: request.headers['x-many'] }));
  await a.ready();
  return a;
}

function run(
  a: Awaited<ReturnType<typeof app>>,
  req: Partial<InProcessRequest> & { url: string },
  options: { body?: Buffer[]; slowChunks?: boolean; abortAfterFirstChunk?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve) => {
    const answer: Answer = { kind: 'whole', status: 0, headers: {}, body: Buffer.alloc(0), chunks: 0 };
    const parts: Buffer[] = [];
    const exchange = dispatch(
      a,
      { method: 'GET', headers: {}, body: options.body !== undefined, ...req },
      {
        whole: (status, headers, body) => resolve({ ...answer, status, headers, body }),
        head: (status, headers) => Object.assign(answer, { kind: 'streamed', status, headers }),
        chunk: (bytes, done) => {
          answer.chunks++;
          parts.push(bytes);
          if (options.abortAfterFirstChunk) {
            exchange.abort();
            setTimeout(() => resolve({ ...answer, body: Buffer.concat(parts) }), 50);
          }
          if (options.slowChunks) setTimeout(done, 1);
          else done();
        },
        end: () => resolve({ ...answer, body: Buffer.concat(parts) }),
        fail: (error) => resolve({ ...answer, kind: 'failed', body: Buffer.concat(parts), error }),
      },
    );
    for (const chunk of options.body ?? []) exchange.push(chunk);
    if (options.body) exchange.push(null);
  });
}

test('a buffered answer arrives whole, with its status and headers', async () => {
  const a = await app();
  const r = await run(a, { url: '/json' });
  assert.equal(r.kind, 'whole');
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body.toString()), { hello: 'world' });
  assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(r.headers['content-length'], String(r.body.length));
  // A request without a body reads as ended at once, for a handler that reads it anyway.
  const drained = await run(a, { url: '/drain' });
  assert.deepEqual(JSON.parse(drained.body.toString()), { read: 0 });
  const missing = await run(a, { url: '/nowhere?x=1' });
  assert.equal(missing.status, 404);
  const failed = await run(a, { url: '/fail' });
  assert.equal(failed.status, 500);
  assert.match(failed.body.toString(), /handler failed/);
  await a.close();
});

test('a streamed answer arrives as head, slices and end, waiting for each slice to be taken', async () => {
  const a = await app();
  const r = await run(a, { url: '/big' }, { slowChunks: true });
  assert.equal(r.kind, 'streamed');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/octet-stream');
  assert.equal(r.body.length, 400_000);
  assert.ok(r.chunks >= 2);
  assert.equal(r.body[10_000], 66, 'slices in order');
  await a.close();
});

test('a stream that fails after its first bytes ends the answer with fail', async () => {
  const a = await app();
  const r = await run(a, { url: '/broken' });
  assert.equal(r.kind, 'failed');
  assert.equal(r.status, 200);
  assert.ok(r.error instanceof Error);
  await a.close();
});

test('request bodies with a length and without one (chunked) reach the handler', async () => {
  const a = await app();
  const json = Buffer.from(JSON.stringify({ n: 42, s: 'x'.repeat(100) }));
  const withLength = await run(
    a,
    {
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json', 'content-length': String(json.length) },
    },
    { body: [json] },
  );
  assert.equal(withLength.status, 200);
  assert.deepEqual(JSON.parse(withLength.body.toString()).got, { n: 42, s: 'x'.repeat(100) });
  assert.equal(JSON.parse(withLength.body.toString()).ip, '127.0.0.1');
  const chunked = await run(
    a,
    {
      method: 'POST',
      url: '/echo',
      headers: { 'content-type': 'application/json' },
      remoteAddress: '10.0.0.9',
    },
    { body: [json.subarray(0, 10), json.subarray(10)] },
  );
  assert.equal(chunked.status, 200);
  assert.equal(JSON.parse(chunked.body.toString()).got.n, 42);
  assert.equal(JSON.parse(chunked.body.toString()).ip, '10.0.0.9');
  const bad = await run(
    a,
    { method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' } },
    { body: [Buffer.from('{not json')] },
  );
  assert.equal(bad.status, 400);
  await a.close();
});

test('HEAD answers headers and no body; repeated headers keep their form', async () => {
  const a = await app();
  const head = await run(a, { method: 'HEAD', url: '/json' });
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0);
  assert.equal(head.headers['content-type'], 'application/json; charset=utf-8');
  const cookies = await run(a, { url: '/cookies' });
  assert.equal(cookies.status, 201);
  assert.deepEqual(cookies.headers['set-cookie'], ['a=1', 'b=2']);
  const joined = await run(a, { url: '/headers', headers: { cookie: ['a=1', 'b=2'], 'x-many': ['1', '2'] } });
  assert.deepEqual(JSON.parse(joined.body.toString()), { cookie: 'a=1; b=2', x: '1, 2' });
  await a.close();
});

test('an abort half way stops the answer: nothing reaches the sink after it', async () => {
  const a = await app();
  const r = await run(a, { url: '/big' }, { abortAfterFirstChunk: true, slowChunks: true });
  assert.equal(r.kind, 'streamed');
  assert.equal(r.chunks, 1, 'no slice after the abort');
  assert.ok(r.body.length < 400_000);
  await a.close();
});
