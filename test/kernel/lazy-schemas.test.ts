/**
 * Route schemas compiled on first use (src/kernel/http/lazy-schemas.ts): the same answers as
 * Fastify's eager compilers, compilation deferred to a route's first request, and every schema of
 * the three services compiles (so that deferring cannot hide a broken one until a user calls it).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import pino from 'pino';
import { createHttpApp } from '../../src/kernel/http/server.js';
import { compileAllSchemas, pendingSchemas } from '../../src/kernel/http/lazy-schemas.js';
import { startTestEdge } from '../helpers/edge.js';
import { startTestManager } from '../helpers/manager.js';
import { startTestUns } from '../helpers/uns.js';

const logger = pino({ level: 'silent' });
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'mw-lazy-'));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const Body = Type.Object(
  {
    name: Type.String({ minLength: 2 }),
    count: Type.Integer({ default: 3 }),
    tags: Type.Array(Type.String()),
  },
  { additionalProperties: false },
);
const Query = Type.Object({
  ids: Type.Array(Type.Integer()),
  page: Type.Integer({ minimum: 1, default: 1 }),
});
const Reply = Type.Object({ name: Type.String(), count: Type.Integer(), ids: Type.Array(Type.Integer()) });
const Invalid = Type.Object({ validation: Type.Unknown(), validationContext: Type.String() });

/**
 * The same route on an app: body, query string and response schemas. Validation errors are
 * answered as Ajv gave them (`attachValidation`), not through the kernel's error handler, which
 * the plain Fastify app has not.
 */
function addRoute(app: FastifyInstance): void {
  app.post(
    '/things',
    {
      schema: { body: Body, querystring: Query, response: { 200: Reply, 400: Invalid } },
      attachValidation: true,
    },
    async (request, reply) => {
      if (request.validationError) {
        const { validation, validationContext } = request.validationError as Error & {
          validation: unknown;
          validationContext: string;
        };
        return reply.code(400).send({ validation, validationContext });
      }
      const body = request.body as { name: string; count: number };
      const query = request.query as { ids: number[]; page: number };
      // `secret` is not in the response schema: the serializer drops it.
      return { name: body.name, count: body.count, ids: query.ids, page: query.page, secret: 'x' };
    },
  );
}

/** Fastify with its own eager compilers and the options the kernel gives Ajv. */
async function eagerApp(): Promise<FastifyInstance> {
  const app = Fastify({
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: false },
    },
  });
  addRoute(app);
  await app.ready();
  return app;
}

const requests = [
  { url: '/things?ids=1&ids=2', payload: { name: 'ab', tags: [] } },
  { url: '/things?ids=7', payload: { name: 'ab', count: 9, tags: ['t'] } },
  { url: '/things?ids=x', payload: { name: 'ab', tags: [] } },
  { url: '/things?ids=1', payload: { name: 'a', tags: [] } },
  { url: '/things?ids=1', payload: { name: 'ab', tags: [], extra: 1 } },
  { url: '/things?ids=1&page=0', payload: { name: 'ab', tags: [] } },
  { url: '/things', payload: { name: 'ab', tags: [] } },
];

test('the lazy compilers answer as Fastify eager ones: coercion, defaults, errors, serialization', async () => {
  const eager = await eagerApp();
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  addRoute(app);
  await app.ready();
  try {
    // Before the first request nothing of the route is compiled: two validators and two serializers wait.
    assert.equal(pendingSchemas(app), 4);
    for (const r of requests) {
      const a = await eager.inject({ method: 'POST', ...r });
      const b = await app.inject({ method: 'POST', ...r });
      assert.equal(b.statusCode, a.statusCode, r.url);
      assert.deepEqual(b.json(), a.json(), r.url);
    }
    // The requests compiled everything the route has.
    assert.equal(pendingSchemas(app), 0);
  } finally {
    await eager.close();
    await app.close();
  }
});

test('a schema that does not compile is found by compileAllSchemas, and fails only its route', async () => {
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  app.post(
    '/broken',
    { schema: { body: { type: 'object', properties: { a: { type: 'no-such-type' } } } } },
    () => 'x',
  );
  app.get('/fine', { schema: { querystring: Type.Object({ n: Type.Integer() }) } }, () => 'ok');
  await app.ready();
  try {
    const fine = await app.inject({ method: 'GET', url: '/fine?n=1' });
    assert.equal(fine.statusCode, 200);
    assert.throws(() => compileAllSchemas(app), /no-such-type|type must be/i);
  } finally {
    await app.close();
  }
});

test('a header schema is refused when the route is added, with the route named', async () => {
  const { app } = await createHttpApp({ logger, plainHttp: true, dataDir: tmp() });
  app.get('/h', { schema: { headers: Type.Object({ 'X-Thing': Type.String() }) } }, () => 'x');
  await assert.rejects(async () => {
    await app.ready();
  }, /GET \/h: header schemas are not supported/);
  await app.close();
});

test('every route schema of the edge, the manager and the UNS compiles', async () => {
  const edge = await startTestEdge();
  const manager = await startTestManager();
  const uns = await startTestUns();
  try {
    for (const [name, app] of [
      ['edge', edge.edge.app],
      ['manager', manager.manager.app],
      ['manager admin', manager.manager.adminApp],
      ['uns', uns.uns.app],
    ] as const) {
      const compiled = compileAllSchemas(app);
      assert.ok(compiled > 0, `${name}: ${compiled} schemas compiled`);
      assert.equal(pendingSchemas(app), 0, `${name}: nothing left`);
    }
  } finally {
    await Promise.all([edge.stop(), manager.stop(), uns.stop()]);
  }
});
