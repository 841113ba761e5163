/**
 * The kernel service shell: modules start in list order and close in reverse, also when start-up
 * fails half way; `requires` is checked; the free-port policy is by option; `build` binds no port,
 * so tests can `inject`.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PortInUseError, configWith } from '../../src/kernel/config.js';
import {
  CleanupStack,
  PortPolicy,
  ServiceShell,
  type ServiceModule,
  type ShellConfig,
  optionSpecs,
  shellOptions,
} from '../../src/kernel/service/index.js';
import { EDGE_MODULES, EDGE_SERVICE, buildEdgeApp } from '../../src/edge/service.js';
import type { EdgeModule } from '../../src/edge/modules.js';
import { edgeConfigWith } from '../../src/edge/service.js';

const TEST_OPTIONS = shellOptions({
  name: 'test',
  port: 0,
  portDescription: 'port',
  databaseDescription: 'database',
});

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'mw-shell-'));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

interface TestModules {
  a: string;
  b: string;
  c: string;
}
type M = ServiceModule<ShellConfig, TestModules, keyof TestModules>;

const config = (): ShellConfig => ({
  ...configWith<ShellConfig>(optionSpecs(TEST_OPTIONS), {}),
  host: '127.0.0.1',
  port: 0,
  dataDir: tmp(),
  http: true,
  logLevel: 'silent',
});

function recorder() {
  const events: string[] = [];
  const mod = (name: keyof TestModules, extra: Partial<M> = {}): M => ({
    name,
    start: (ctx) => {
      events.push(`start ${name}`);
      ctx.defer('deferred', () => void events.push(`deferred ${name}`));
      return name.toUpperCase();
    },
    mount: (ctx) => {
      events.push(`mount ${name}`);
      ctx.app.get(`/${name}`, { config: { permission: 'public' } }, async () => ({ name }));
    },
    listening: () => void events.push(`listening ${name}`),
    close: () => void events.push(`close ${name}`),
    ...extra,
  });
  return { events, mod };
}

test('modules start and mount in list order, read earlier modules, and close in reverse order', async () => {
  const { events, mod } = recorder();
  const shell = await ServiceShell.build(
    {
      name: 'test',
      label: 'test service',
      apiVersion: '1',
      options: TEST_OPTIONS,
      modules: [
        mod('a'),
        mod('b', {
          requires: ['a'],
          start: (ctx) => {
            events.push(`start b with ${ctx.module('a')}`);
            return 'B';
          },
        }),
      ],
    },
    config(),
  );
  // Built but not listening: the app answers through inject.
  assert.equal(shell.url, '');
  assert.deepEqual((await shell.app.inject({ url: '/b' })).json(), { name: 'b' });
  assert.equal((await shell.app.inject({ url: '/version' })).json().service, 'test');
  const url = await shell.listen();
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(shell.ports.bound.port, Number(new URL(url).port));
  assert.equal(shell.module('b'), 'B');
  await shell.close();
  await shell.close();
  assert.deepEqual(events, [
    'start a',
    'start b with A',
    'mount a',
    'mount b',
    'listening a',
    'listening b',
    'close b',
    'close a',
    'deferred a',
  ]);
});

test('a start that fails half way closes what had started, in reverse order', async () => {
  const { events, mod } = recorder();
  await assert.rejects(
    ServiceShell.build(
      {
        name: 'test',
        label: 'test service',
        apiVersion: '1',
        options: TEST_OPTIONS,
        modules: [
          mod('a'),
          mod('b'),
          mod('c', {
            start: () => {
              throw new Error('c cannot start');
            },
          }),
        ],
      },
      config(),
    ),
    /c cannot start/,
  );
  // Each module's close, then what it deferred during its start; later modules first.
  assert.deepEqual(events, ['start a', 'start b', 'close b', 'deferred b', 'close a', 'deferred a']);
  assert.ok(!events.some((e) => e.startsWith('mount')));
});

test('a module that reads another without listing it, or before it, is refused', async () => {
  const { mod } = recorder();
  await assert.rejects(
    ServiceShell.build(
      {
        name: 't',
        label: 't',
        apiVersion: '1',
        options: TEST_OPTIONS,
        modules: [mod('b', { requires: ['a'] }), mod('a')],
      },
      config(),
    ),
    /module "b" requires "a", which is not listed before it/,
  );
  await assert.rejects(
    ServiceShell.build(
      {
        name: 't',
        label: 't',
        apiVersion: '1',
        options: TEST_OPTIONS,
        modules: [mod('a'), mod('b', { start: (ctx) => ctx.module('a') })],
      },
      config(),
    ),
    /module "b" reads "a" without listing it in requires/,
  );
});

async function takePort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port };
}

test('the free-port policy: a taken port stops with the option named, unless the option may fall back', async () => {
  const { server, port } = await takePort();
  try {
    const listenOn = (p: number) =>
      new Promise<number>((resolve, reject) => {
        const s = createServer();
        s.once('error', reject);
        s.listen(p, '127.0.0.1', () => {
          const bound = (s.address() as { port: number }).port;
          s.close();
          resolve(bound);
        });
      });
    const strict = new PortPolicy({ service: 'edge', label: 'edge service' });
    const err = await strict.bind('datahub-port', port, listenOn, (p) => p).catch((e: unknown) => e);
    assert.ok(err instanceof PortInUseError);
    assert.equal(err.option, 'datahub-port');
    assert.match(
      err.message,
      new RegExp(
        `port ${port} is already in use; choose another with --datahub-port or MILLWRIGHT_EDGE_DATAHUB_PORT`,
      ),
    );

    const lenient = new PortPolicy({ service: 'edge', label: 'edge service', pickFree: ['datahub-port'] });
    const bound = await lenient.bind('datahub-port', port, listenOn, (p) => p);
    assert.notEqual(bound, port);
    assert.equal(lenient.bound['datahub-port'], bound);
    assert.deepEqual(lenient.notes, [
      `datahub-port ${port} is taken by another program; the edge service takes ${bound} instead (kept for the next start)`,
    ]);
    // Only the options given may fall back.
    await assert.rejects(
      lenient.bind('port', port, listenOn, (p) => p),
      PortInUseError,
    );
  } finally {
    server.close();
  }
});

test('the cleanup stack runs every step once, in reverse, past a failing one', async () => {
  const stack = new CleanupStack();
  const ran: string[] = [];
  stack.defer('one', () => void ran.push('one'));
  stack.defer('two', () => {
    ran.push('two');
    throw new Error('two failed');
  });
  stack.defer('three', async () => void ran.push('three'));
  await assert.rejects(stack.close(), /two failed/);
  await assert.rejects(stack.close(), /two failed/);
  assert.deepEqual(ran, ['three', 'two', 'one']);
});

test('buildEdgeApp: the real edge answers through inject without binding its HTTP port', async () => {
  const shell = await buildEdgeApp(
    edgeConfigWith({ dataDir: tmp(), logLevel: 'silent', datahubGateway: false, port: 1 }),
  );
  try {
    assert.equal(shell.url, '');
    const version = await shell.app.inject({ url: '/version' });
    assert.equal(version.json().service, 'edge');
    // Every data route needs credentials, also through inject.
    assert.equal((await shell.app.inject({ url: '/devicehub/version' })).statusCode, 401);
    assert.equal(shell.module('datahub').gateway, undefined);
  } finally {
    await shell.close();
  }
});

// The example module of docs/development.md, added to the edge's list as the docs say.
class Greeter {
  constructor(private readonly prefix: string) {}
  greet(name: string): string {
    return `${this.prefix} ${name}`;
  }
}
declare module '../../src/edge/modules.js' {
  interface EdgeModules {
    hello: Greeter;
  }
}
const helloModule: EdgeModule<'hello'> = {
  name: 'hello',
  requires: ['datahub'],
  start: (ctx) => new Greeter(ctx.module('datahub').hub ? 'hello' : 'hi'),
  mount: (ctx, greeter) =>
    ctx.app.register(async (app) => {
      app.get('/hello/:name', async (req) => ({
        text: greeter.greet((req.params as { name: string }).name),
      }));
    }),
};

test('the docs example: one line adds a module to the edge, behind the auth hook', async () => {
  const shell = await ServiceShell.build(
    { ...EDGE_SERVICE, modules: [...EDGE_MODULES, helloModule] },
    edgeConfigWith({ dataDir: tmp(), logLevel: 'silent', datahubGateway: false }),
  );
  try {
    assert.equal(shell.module('hello').greet('plant'), 'hello plant');
    assert.equal((await shell.app.inject({ url: '/hello/plant' })).statusCode, 401);
  } finally {
    await shell.close();
  }
});

test("ctx.sections(): every started module's configuration section, in list order", async () => {
  const section = (name: string) => ({
    name,
    export: async () => ({}),
    validate: () => [],
    diff: () => ({ added: [], changed: [], removed: [], restarts: [] }),
    merge: (c: unknown) => ({ merged: c, overwrites: [] }),
    apply: async () => undefined,
  });
  let seen: string[] = [];
  const shell = await ServiceShell.build(
    {
      name: 'test',
      label: 'test service',
      apiVersion: '1',
      options: TEST_OPTIONS,
      modules: [
        { name: 'a', start: () => 'A', configSection: () => section('sec-a') } as M,
        { name: 'b', start: () => 'B' } as M,
        {
          name: 'c',
          start: () => 'C',
          configSection: (api: string) => section(`sec-${api}`),
          mount: (ctx) => {
            seen = ctx.sections().map((s) => s.name);
          },
        } as M,
      ],
    },
    config(),
  );
  try {
    assert.deepEqual(seen, ['sec-a', 'sec-C']);
  } finally {
    await shell.close();
  }
});
