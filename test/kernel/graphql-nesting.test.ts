/**
 * Issue 33, finding 6: a GraphQL document nested deeper than `MAX_DOCUMENT_NESTING` is refused by
 * a lexical pre-scan before graphql's `parse` runs (5,000 nested `[` used to overflow the parser's
 * stack), over HTTP and over a subscription WebSocket.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { request } from 'undici';
import WebSocket from 'ws';
import { ERRORS } from '../../src/kernel/errors.js';
import { installErrorHandler } from '../../src/kernel/http/error-handler.js';
import {
  MAX_DOCUMENT_NESTING,
  checkQuerySize,
  documentNesting,
  mountGraphql,
} from '../../src/kernel/graphql.js';

const SCHEMA = `
  type Query { echo(list: [[[Int]]], text: String): String }
  type Subscription { ticks(list: [[[Int]]]): String }
`;

/** 5,000 nested lists in an argument: about 10 KB, well inside the 64 KiB document limit. */
const BOMB = `{ echo(list: ${'['.repeat(5000)}1${']'.repeat(5000)}) }`;
const TOO_DEEP = `query document nests brackets, braces or parentheses deeper than the maximum of ${MAX_DOCUMENT_NESTING}`;

async function start(t: TestContext) {
  const app = Fastify();
  t.after(() => app.close());
  installErrorHandler(app);
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (req) => {
    req.auth = { subject: 'test:viewer', role: 'viewer', scheme: 'bearer' };
  });
  await mountGraphql(app, {
    path: '/gql',
    schema: SCHEMA,
    subscriptions: true,
    resolvers: {
      Query: { echo: (_r: never, a: { text?: string }) => a.text ?? 'ok' },
      Subscription: { ticks: { subscribe: async function* () {} } },
    },
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, ws: `ws://127.0.0.1:${port}` };
}

test('the pre-scan counts brackets, braces and parentheses outside strings and comments', () => {
  assert.equal(documentNesting('{ a }'), 1);
  assert.equal(documentNesting('{ a(x: [[1]]) { b } }'), 4);
  assert.equal(documentNesting('{ a(x: "[[[[[[") }'), 2);
  assert.equal(documentNesting('{ a(x: "\\"[[[[") }'), 2);
  assert.equal(documentNesting('{ a(x: """ [[[[ \\""" [[[ """) }'), 2);
  assert.equal(documentNesting('# [[[[[[\n{ a }'), 1);
  assert.equal(documentNesting('{ a(x: [[1]]) }  # ((((\r{ b }'), 4);
  // Stops as soon as the bound is passed.
  assert.equal(documentNesting('['.repeat(1000), 10), 11);
  assert.doesNotThrow(() =>
    checkQuerySize(`{ a(x: ${'['.repeat(60)}${']'.repeat(60)}) }`, { maxQueryBytes: 65536 }),
  );
  assert.throws(
    () => checkQuerySize(BOMB, { maxQueryBytes: 65536 }),
    (err: { message: string; code?: string }) => err.message === TOO_DEEP,
  );
});

test('5,000 nested [ are refused with QUERY_TOO_DEEP naming the bound, before parsing', async (t) => {
  const h = await start(t);
  const res = await request(`${h.base}/gql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: BOMB }),
  });
  assert.equal(res.statusCode, 400);
  const body = (await res.body.json()) as {
    errors: Array<{ message: string; extensions: { code: string } }>;
  };
  // Parsing it would have thrown "Maximum call stack size exceeded": the message shows it never ran.
  assert.deepEqual(body.errors, [{ message: TOO_DEEP, extensions: { code: ERRORS.queryTooDeep.code } }]);

  const viaGet = await request(
    `${h.base}/gql?query=${encodeURIComponent(`{ echo(list: ${'['.repeat(300)}1${']'.repeat(300)}) }`)}`,
  );
  assert.equal(viaGet.statusCode, 400);
  assert.match(await viaGet.body.text(), /deeper than the maximum of 64/);

  // Brackets inside a string do not count: the same text as a string argument runs.
  const inString = await request(`${h.base}/gql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: `{ echo(text: "${'['.repeat(5000)}") }` }),
  });
  assert.equal(inString.statusCode, 200);
  assert.equal(((await inString.body.json()) as { data: { echo: string } }).data.echo.length, 5000);
});

test('a subscription document nested too deep is refused before parsing', async (t) => {
  const h = await start(t);
  const ws = new WebSocket(`${h.ws}/gql`, 'graphql-transport-ws');
  t.after(() => ws.close());
  const messages: Array<{ type: string; id?: string; payload?: Array<{ message: string }> }> = [];
  let wake: (() => void) | null = null;
  ws.on('message', (d) => {
    messages.push(JSON.parse(String(d)));
    wake?.();
  });
  const next = async () => {
    const deadline = Date.now() + 3000;
    while (messages.length === 0) {
      if (Date.now() > deadline) throw new Error('no WebSocket message within 3 s');
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 100);
      });
    }
    return messages.shift()!;
  };
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
  assert.equal((await next()).type, 'connection_ack');
  const query = `subscription { ticks(list: ${'['.repeat(5000)}1${']'.repeat(5000)}) }`;
  ws.send(JSON.stringify({ id: 's1', type: 'subscribe', payload: { query } }));
  const refused = await next();
  assert.equal(refused.type, 'error');
  assert.equal(refused.payload?.[0]?.message, TOO_DEEP);
});
