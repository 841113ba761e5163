import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import { getIntrospectionQuery, Kind, parse, buildSchema, type OperationDefinitionNode } from 'graphql';
import { request } from 'undici';
import WebSocket from 'ws';
import { forbidden, notFound, unauthorized, ERRORS } from '../../src/kernel/errors.js';
import { installErrorHandler } from '../../src/kernel/http/error-handler.js';
import type { AuthContext } from '../../src/kernel/http/auth-types.js';
import {
  isMutation,
  measureOperation,
  mountGraphql,
  type GraphqlContext,
  type GraphqlEndpoint,
  type GraphqlMountOptions,
} from '../../src/kernel/graphql.js';

const SCHEMA = `
  type Query {
    hello: String
    whoami: String
    node: Node
    nodes(first: Int): [Node!]!
    device(id: ID!): Device
    explode: String
  }
  type Node { id: ID! child: Node children(first: Int): [Node!]! }
  type Device { id: ID! name: String }
  type Mutation { rename(name: String!): String notify(message: String!): Boolean }
  type Event { message: String! by: String seenBy: String }
  type Subscription { events: Event! guarded: Event! broken: Event! }
`;

type Ctx = GraphqlContext & { tenant: string };

interface Harness {
  app: FastifyInstance;
  base: string;
  wsBase: string;
  logs: string[];
  routes: RouteOptions[];
  endpoints: GraphqlEndpoint[];
  calls: { rename: number };
  subscribed: AuthContext[];
}

function deferredList<T>() {
  const items: T[] = [];
  const waiters: Array<(v: T) => void> = [];
  return {
    items,
    push(v: T) {
      items.push(v);
      waiters.splice(0).forEach((w) => w(v));
    },
    next(): Promise<T> {
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

/**
 * A Fastify app with the one error shape and a stand-in for the real authentication hook:
 * `x-test-role: admin|viewer` authenticates; without it only `public` routes answer (401);
 * a route without a declared permission defaults as the real hook does (GET read, else write).
 */
async function start(
  t: TestContext,
  mounts: Array<Partial<GraphqlMountOptions<{ tenant: string }>> & { path: string }> = [{ path: '/gql' }],
): Promise<Harness & { onSubscribe: ReturnType<typeof deferredList<AuthContext>> }> {
  const logs: string[] = [];
  const app = Fastify({
    logger: { level: 'info', stream: { write: (line: string) => void logs.push(line) } },
  });
  t.after(() => app.close());
  installErrorHandler(app);
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routes.push(route));
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (req) => {
    const role = req.headers['x-test-role'];
    req.auth =
      role === 'admin' || role === 'viewer' ? { subject: `test:${role}`, role, scheme: 'bearer' } : null;
    const permission =
      req.routeOptions.config.permission ??
      (req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write');
    if (permission === 'public') return;
    if (!req.auth) throw unauthorized();
    if (permission === 'write' && req.auth.role !== 'admin') throw forbidden('admin role required');
  });

  const calls = { rename: 0 };
  const onSubscribe = deferredList<AuthContext>();
  const endpoints: GraphqlEndpoint[] = [];
  for (const mount of mounts) {
    endpoints.push(
      await mountGraphql<{ tenant: string }>(app, {
        schema: SCHEMA,
        subscriptions: true,
        context: (req) => ({ tenant: `tenant-of-${req.auth?.subject ?? 'nobody'}` }),
        resolvers: {
          Query: {
            hello: () => 'world',
            whoami: (_root: unknown, _args: unknown, ctx: Ctx) =>
              `${ctx.auth?.subject ?? 'nobody'} ${ctx.tenant}`,
            node: () => ({ id: '1' }),
            nodes: () => [{ id: '1' }],
            device: (_root: unknown, args: { id: string }) => {
              throw notFound(`device "${args.id}" not found`);
            },
            explode: () => {
              throw new Error('database exploded: secret-detail');
            },
          },
          Node: { child: () => ({ id: 'c' }), children: () => [] },
          Mutation: {
            rename: (_root: unknown, args: { name: string }) => {
              calls.rename++;
              return args.name;
            },
            notify: async (_root: unknown, args: { message: string }, ctx: Ctx) => {
              await ctx.publish('EVENTS', { events: { message: args.message, by: ctx.auth?.subject } });
              return true;
            },
          },
          Event: { seenBy: (_e: unknown, _a: unknown, ctx: Ctx) => ctx.auth?.subject ?? null },
          Subscription: {
            events: {
              subscribe: async (_root: unknown, _args: unknown, ctx: Ctx) => {
                const iterator = await ctx.pubsub.subscribe('EVENTS');
                if (ctx.auth) onSubscribe.push(ctx.auth);
                return iterator;
              },
            },
            guarded: {
              subscribe: () => {
                throw forbidden('only admins may watch this');
              },
            },
            broken: {
              subscribe: () => {
                throw new Error('subscribe exploded: secret-detail');
              },
            },
          },
        },
        ...mount,
      }),
    );
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return {
    app,
    base: `http://127.0.0.1:${port}`,
    wsBase: `ws://127.0.0.1:${port}`,
    logs,
    routes,
    endpoints,
    calls,
    subscribed: onSubscribe.items,
    onSubscribe,
  };
}

async function post(
  url: string,
  body: Record<string, unknown>,
  role?: 'admin' | 'viewer',
): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(role ? { 'x-test-role': role } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

/** A graphql-transport-ws client: opens, initialises, and queues the server's messages. */
async function wsClient(url: string, role?: 'admin' | 'viewer') {
  const ws = new WebSocket(url, 'graphql-transport-ws', { headers: role ? { 'x-test-role': role } : {} });
  const messages = deferredList<any>();
  ws.on('message', (data) => messages.push(JSON.parse(String(data))));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let seen = 0;
  const next = async (): Promise<any> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no WebSocket message within 3 s')), 3000);
    });
    try {
      while (messages.items.length <= seen) await Promise.race([messages.next(), timeout]);
    } finally {
      clearTimeout(timer);
    }
    return messages.items[seen++];
  };
  ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
  assert.deepEqual(await next(), { type: 'connection_ack' });
  return { ws, next, send: (m: unknown) => ws.send(JSON.stringify(m)) };
}

test('a query answers over POST and GET, with auth and the module context in the resolver context', async (t) => {
  const h = await start(t);
  const viaPost = await post(`${h.base}/gql`, { query: '{ hello whoami }' }, 'viewer');
  assert.equal(viaPost.status, 200);
  assert.deepEqual(viaPost.body, { data: { hello: 'world', whoami: 'test:viewer tenant-of-test:viewer' } });

  const withVariables = await post(
    `${h.base}/gql`,
    {
      query: 'query Q($n: Int) { nodes(first: $n) { id } } query Other { hello }',
      variables: { n: 2 },
      operationName: 'Q',
    },
    'viewer',
  );
  assert.deepEqual(withVariables.body, { data: { nodes: [{ id: '1' }] } });

  const viaGet = await request(`${h.base}/gql?query=${encodeURIComponent('{ hello }')}`, {
    headers: { 'x-test-role': 'viewer' },
  });
  assert.equal(viaGet.statusCode, 200);
  assert.deepEqual(await viaGet.body.json(), { data: { hello: 'world' } });

  const anonymous = await post(`${h.base}/gql`, { query: '{ hello }' });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.body.errors[0].message, 'authentication required');
  assert.equal(anonymous.body.errors[0].extensions.code, ERRORS.unauthorized.code);
});

test('an admin runs a mutation', async (t) => {
  const h = await start(t);
  const res = await post(`${h.base}/gql`, { query: 'mutation { rename(name: "press-7") }' }, 'admin');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { data: { rename: 'press-7' } });
  assert.equal(h.calls.rename, 1);
});

test('a viewer is refused a mutation with 403 before it runs, but may run a query of the same document', async (t) => {
  const h = await start(t);
  const res = await post(`${h.base}/gql`, { query: 'mutation { rename(name: "x") }' }, 'viewer');
  assert.equal(res.status, 403);
  assert.deepEqual(res.body, {
    errors: [
      { message: 'viewer role cannot run mutations', extensions: { code: ERRORS.graphqlForbidden.code } },
    ],
    data: null,
  });
  assert.equal(h.calls.rename, 0);

  const document = 'query Read { hello } mutation Write { rename(name: "x") }';
  const read = await post(`${h.base}/gql`, { query: document, operationName: 'Read' }, 'viewer');
  assert.equal(read.status, 200);
  assert.deepEqual(read.body, { data: { hello: 'world' } });
  const write = await post(`${h.base}/gql`, { query: document, operationName: 'Write' }, 'viewer');
  assert.equal(write.status, 403);
  assert.equal(h.calls.rename, 0);

  // GET never mutates (mercurius answers 405), whoever asks.
  const viaGet = await request(
    `${h.base}/gql?query=${encodeURIComponent('mutation { rename(name: "x") }')}`,
    {
      headers: { 'x-test-role': 'admin' },
    },
  );
  assert.equal(viaGet.statusCode, 405);
  await viaGet.body.dump();
});

test('two endpoints with different schemas live on one app, each with its own subscriptions', async (t) => {
  let twinSubscribed!: () => void;
  const ready = new Promise<void>((resolve) => (twinSubscribed = resolve));
  const h = await start(t, [
    { path: '/devicehub/v2' },
    {
      path: '/digital-twins',
      schema: 'type Query { twin: String } type Subscription { tick: Int }',
      resolvers: {
        Query: { twin: () => 'twin-1' },
        Subscription: {
          tick: {
            subscribe: async (_r: unknown, _a: unknown, ctx: Ctx) => {
              const iterator = await ctx.pubsub.subscribe('TICK');
              twinSubscribed();
              return iterator;
            },
          },
        },
      },
    },
  ]);
  assert.deepEqual((await post(`${h.base}/devicehub/v2`, { query: '{ hello }' }, 'viewer')).body, {
    data: { hello: 'world' },
  });
  assert.deepEqual((await post(`${h.base}/digital-twins`, { query: '{ twin }' }, 'viewer')).body, {
    data: { twin: 'twin-1' },
  });
  const wrong = await post(`${h.base}/digital-twins`, { query: '{ hello }' }, 'viewer');
  assert.equal(wrong.status, 400);
  assert.match(wrong.body.errors[0].message, /Cannot query field "hello" on type "Query"/);
  assert.equal(wrong.body.data, null);

  // A WebSocket on each endpoint; a topic published on one endpoint reaches only its own subscribers.
  const twins = await wsClient(`${h.wsBase}/digital-twins`, 'viewer');
  t.after(() => twins.ws.close());
  twins.send({ id: 't1', type: 'subscribe', payload: { query: 'subscription { tick }' } });
  await ready;
  const devicehub = await wsClient(`${h.wsBase}/devicehub/v2`, 'viewer');
  t.after(() => devicehub.ws.close());
  const devicehubSubscribed = h.onSubscribe.next();
  devicehub.send({ id: 'd1', type: 'subscribe', payload: { query: 'subscription { events { message } }' } });
  await devicehubSubscribed;
  await h.endpoints[1]!.publish('EVENTS', { events: { message: 'not for devicehub' } });
  await h.endpoints[1]!.publish('TICK', { tick: 7 });
  await h.endpoints[0]!.publish('EVENTS', { events: { message: 'for devicehub' } });
  assert.deepEqual(await twins.next(), { type: 'next', id: 't1', payload: { data: { tick: 7 } } });
  assert.deepEqual(await devicehub.next(), {
    type: 'next',
    id: 'd1',
    payload: { data: { events: { message: 'for devicehub' } } },
  });
});

test('publishing on an endpoint mounted without subscriptions is an error', async (t) => {
  const app = Fastify();
  t.after(() => app.close());
  const endpoint = await mountGraphql(app, { path: '/x', schema: 'type Query { a: Int }', resolvers: {} });
  await assert.rejects(endpoint.publish('A', 1), /GraphQL endpoint \/x was mounted without subscriptions/);
});

test('a query deeper than maxDepth is refused with 400 before execution', async (t) => {
  const h = await start(t, [{ path: '/gql' }, { path: '/shallow', maxDepth: 3 }]);
  // node { child { ... { id } } }: `depth` levels of fields.
  const nest = (depth: number) => `{ node { ${'child { '.repeat(depth - 2)}id${' }'.repeat(depth - 2)} } }`;
  const ok = await post(`${h.base}/gql`, { query: nest(12) }, 'viewer');
  assert.equal(ok.status, 200);
  const deep = await post(`${h.base}/gql`, { query: nest(15) }, 'viewer');
  assert.equal(deep.status, 400);
  assert.equal(deep.body.data, null);
  assert.equal(deep.body.errors.length, 1);
  assert.equal(deep.body.errors[0].message, 'query depth 15 exceeds the maximum of 12');
  assert.equal(deep.body.errors[0].extensions.code, ERRORS.queryTooDeep.code);
  // Fragments count where they are spread.
  const viaFragment = await post(
    `${h.base}/shallow`,
    { query: '{ node { ...F } } fragment F on Node { child { child { id } } }' },
    'viewer',
  );
  assert.equal(viaFragment.body.errors[0].message, 'query depth 4 exceeds the maximum of 3');
});

test('a query costlier than maxCost is refused with 400 before execution', async (t) => {
  const h = await start(t, [{ path: '/gql' }, { path: '/cheap', maxCost: 20 }]);
  const ok = await post(
    `${h.base}/gql`,
    { query: '{ nodes(first: 10) { children(first: 10) { id } } }' },
    'viewer',
  );
  assert.equal(ok.status, 200);
  const costly = await post(
    `${h.base}/gql`,
    { query: '{ nodes(first: 100) { children(first: 100) { id } } }' },
    'viewer',
  );
  assert.equal(costly.status, 400);
  assert.equal(costly.body.errors[0].message, 'query cost 10101 exceeds the maximum of 5000');
  assert.equal(costly.body.errors[0].extensions.code, ERRORS.queryTooCostly.code);
  // Without a size argument a list counts as 10: nodes 1 + 10 * (id 1 + child (1 + id 1)) = 31.
  const cheap = await post(`${h.base}/cheap`, { query: '{ nodes { id child { id } } }' }, 'viewer');
  assert.equal(cheap.status, 400);
  assert.equal(cheap.body.errors[0].message, 'query cost 31 exceeds the maximum of 20');
  // Introspection is exempt from depth and cost, within reason.
  const introspection = await post(`${h.base}/cheap`, { query: getIntrospectionQuery() }, 'viewer');
  assert.equal(introspection.status, 200);
  assert.ok(introspection.body.data.__schema.types.length > 5);
  const amplified = await post(
    `${h.base}/gql`,
    { query: '{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }' },
    'viewer',
  );
  assert.equal(amplified.status, 400);
  assert.equal(amplified.body.errors[0].message, 'introspection nests lists 4 deep, the maximum is 3');
});

test('the static cost reads size arguments, input objects, variables and fragments', () => {
  const schema = buildSchema(`
    type Query { ListDevices(input: ListInput): DeviceList nodes(limit: Int): [Node] }
    input ListInput { Limit: Int Offset: Int }
    type DeviceList { Items: [Device] Total: Int }
    type Device { ID: ID Tags: [String] }
    type Node { id: ID }
  `);
  const measure = (source: string) => {
    const document = parse(source);
    const operation = document.definitions.find(
      (d) => d.kind === Kind.OPERATION_DEFINITION,
    ) as OperationDefinitionNode;
    const fragments = new Map(
      document.definitions.flatMap((d) =>
        d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [],
      ),
    );
    return measureOperation(schema, operation, (name) => fragments.get(name), { defaultListSize: 10 });
  };
  // ListDevices 1 + Items (1 + 50 * (ID 1 + Tags 1)) + Total 1
  assert.deepEqual(measure('{ ListDevices(input: { Limit: 50 }) { Items { ID Tags } Total } }'), {
    depth: 3,
    cost: 103,
    introspectionListNesting: 0,
  });
  assert.equal(measure('{ ListDevices { Items { ID } } }').cost, 12);
  assert.equal(measure('query ($n: Int = 3) { nodes(limit: $n) { id } }').cost, 4);
  assert.equal(measure('query ($n: Int) { nodes(limit: $n) { id } }').cost, 11);
  // (1 + 2 * 2) + (1 + 5 * 2): the fragment is measured under each size; __typename costs 1 like
  // every field (it was free, which let 100,000 aliases of it pass: issue 10, item 3).
  assert.equal(
    measure(
      '{ a: nodes(limit: 2) { ...N } b: nodes(limit: 5) { ...N } } fragment N on Node { id __typename }',
    ).cost,
    16,
  );
  assert.equal(isMutation(parse('query A { x } mutation B { y }'), 'A'), false);
  assert.equal(isMutation(parse('query A { x } mutation B { y }'), 'B'), true);
  assert.equal(isMutation(parse('query A { x } mutation B { y }')), true);
});

test('an AppError from a resolver is a GraphQL error with its code, HTTP 200', async (t) => {
  const h = await start(t);
  const res = await post(`${h.base}/gql`, { query: '{ hello device(id: "d-1") { id } }' }, 'viewer');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data, { hello: 'world', device: null });
  assert.equal(res.body.errors.length, 1);
  assert.equal(res.body.errors[0].message, 'device "d-1" not found');
  assert.deepEqual(res.body.errors[0].extensions, { code: ERRORS.notFound.code });
  assert.deepEqual(res.body.errors[0].path, ['device']);
});

test('an unexpected resolver error is masked as internal error and logged', async (t) => {
  const h = await start(t);
  const res = await post(`${h.base}/gql`, { query: '{ hello explode }' }, 'viewer');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data, { hello: 'world', explode: null });
  assert.equal(res.body.errors[0].message, 'internal error');
  assert.doesNotMatch(JSON.stringify(res.body), /secret-detail/);
  const logged = h.logs
    .map((l) => JSON.parse(l))
    .find((l) => l.level === 50 && /secret-detail/.test(JSON.stringify(l)));
  assert.ok(logged, 'the original error is logged at error level');
  assert.ok(logged.reqId, 'logged through the request logger');
});

test('a subscription receives an event published by a mutation, with the subscriber`s auth', async (t) => {
  const h = await start(t);
  const client = await wsClient(`${h.wsBase}/gql`, 'viewer');
  t.after(() => client.ws.close());
  const subscribed = h.onSubscribe.next();
  client.send({
    id: 's1',
    type: 'subscribe',
    payload: { query: 'subscription { events { message by seenBy } }' },
  });
  assert.equal((await subscribed).subject, 'test:viewer');

  const res = await post(
    `${h.base}/gql`,
    { query: 'mutation { notify(message: "line 3 stopped") }' },
    'admin',
  );
  assert.deepEqual(res.body, { data: { notify: true } });
  assert.deepEqual(await client.next(), {
    type: 'next',
    id: 's1',
    payload: { data: { events: { message: 'line 3 stopped', by: 'test:admin', seenBy: 'test:viewer' } } },
  });

  // Subscriptions are validated like queries (mercurius alone would not).
  client.send({ id: 's2', type: 'subscribe', payload: { query: 'subscription { events { nope } }' } });
  const refused = await client.next();
  assert.equal(refused.type, 'error');
  assert.equal(refused.id, 's2');
  assert.match(refused.payload[0].message, /Cannot query field "nope" on type "Event"/);

  // A subscribe resolver's errors are mapped as a query's: AppError shown with its code, others masked.
  client.send({ id: 's3', type: 'subscribe', payload: { query: 'subscription { guarded { message } }' } });
  const guarded = await client.next();
  assert.equal(guarded.type, 'error');
  assert.equal(guarded.payload[0].message, 'only admins may watch this');
  assert.deepEqual(guarded.payload[0].extensions, { code: ERRORS.forbidden.code });
  client.send({ id: 's4', type: 'subscribe', payload: { query: 'subscription { broken { message } }' } });
  const broken = await client.next();
  assert.equal(broken.type, 'error');
  assert.equal(broken.payload[0].message, 'internal error');
  assert.ok(
    h.logs.some((l) => l.includes('subscribe exploded: secret-detail') && JSON.parse(l).level === 50),
  );
});

// Also a regression test: a refused upgrade used to leave its socket half-open, and `app.close()`
// in the test's teardown then never finished.
test('the WebSocket upgrade goes through the authentication hook', async (t) => {
  const h = await start(t);
  const ws = new WebSocket(`${h.wsBase}/gql`, 'graphql-transport-ws');
  const outcome = await new Promise<string>((resolve) => {
    ws.once('error', (err) => resolve(err.message));
    ws.once('open', () => resolve('open'));
  });
  ws.terminate();
  assert.equal(outcome, 'Unexpected server response: 401');
});

test('every route of an endpoint carries the permission', async (t) => {
  const h = await start(t, [{ path: '/devicehub/v2' }, { path: '/open', permission: 'public' }]);
  const byPath = (path: string) => h.routes.filter((r) => r.url === path);
  const devicehub = byPath('/devicehub/v2');
  assert.deepEqual(devicehub.map((r) => r.method).sort(), ['GET', 'HEAD', 'POST']);
  assert.ok(
    devicehub.some((r) => r.wsHandler),
    'the WebSocket GET is one of them',
  );
  for (const route of devicehub)
    assert.equal(route.config?.permission, 'read', `${String(route.method)} ${route.url}`);
  const open = byPath('/open');
  assert.equal(open.length, 3);
  for (const route of open)
    assert.equal(route.config?.permission, 'public', `${String(route.method)} ${route.url}`);

  // A public endpoint answers anonymous queries, and still refuses anonymous mutations.
  assert.deepEqual((await post(`${h.base}/open`, { query: '{ whoami }' })).body, {
    data: { whoami: 'nobody tenant-of-nobody' },
  });
  assert.equal((await post(`${h.base}/open`, { query: 'mutation { rename(name: "x") }' })).status, 403);
});
