/**
 * Smooth starts with the OPC UA server on (issue 33, finding 8 and item 5): the server is built
 * in its worker thread, so a 100 ms Generator tag's values keep coming through the edge's start
 * (no gap over 300 ms from the first value on, while the server goes Starting → Ready), and again
 * in the first seconds after a SIGKILL and a restart. The server's state is in `GetServerSettings`
 * (ServerState, AddressSpaceNodes) and `/opcua/service_conf` (state).
 *
 * The edge runs as a process (`millwright edge`), the values are read over NATS from its gateway.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadavg } from 'node:os';
import { connect } from 'nats';
import { EdgeClient } from '../../src/client/index.js';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { eventually, sleep } from '../helpers/util.js';

const dirs = tempDirs('mw-opcua-start-');
const running: CliProcess[] = [];
after(async () => {
  for (const p of running) await p.stop();
  dirs.removeAll();
});

/** Tags besides the fast one: enough that the old start (address space on the main loop) stalled. */
const BULK = 2000;
/**
 * Longest stretch the edge's main thread may run without yielding once its API answers (item 5).
 * The old start stalled for seconds. Raised to 150 ms on 2026-11-28 for stretches of 48-132 ms in
 * about half the starts: Ajv compiling its meta-schema at the first validated request after the
 * ready line (route validators are compiled lazily); the validator compiler is warmed during the
 * start since (src/kernel/http/lazy-schemas.ts), and the bound is 50 ms again.
 */
const MAX_BLOCKED_MS = 50;
const MAX_GAP_MS = 300;
/** After a SIGKILL too (the old code published 1-4 values a second for about 6 s, gaps of 2.6 s). */
const MAX_GAP_AFTER_KILL_MS = MAX_GAP_MS;

const env = (dir: string) =>
  cleanEnv({
    MILLWRIGHT_EDGE_DATA_DIR: dir,
    MILLWRIGHT_EDGE_OPCUA_ENABLED: 'true',
    MILLWRIGHT_EDGE_OPCUA_PORT: '0',
    MILLWRIGHT_EDGE_OPCUA_HOST: '127.0.0.1',
    MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
    MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
  });

async function start(dir: string): Promise<CliProcess> {
  const p = await startCli(['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'], {
    env: env(dir),
    timeoutMs: 90_000,
  });
  running.push(p);
  return p;
}

function client(p: CliProcess, creds: { client_id: string; client_secret: string }): EdgeClient {
  return new EdgeClient({
    url: p.ready.services.edge!.url,
    credentials: { clientId: creds.client_id, clientSecret: creds.client_secret },
    insecure: true,
  });
}

interface Watch {
  /** Arrival times (ms, performance.now) of the fast tag's values. */
  times: number[];
  states: string[];
  nodes: number;
  /** performance.now when the server was first seen Ready. */
  readyAt: number;
}

/**
 * Reads the fast tag from the ready line on, and the server's state until it is Ready and `extraMs`
 * more have passed.
 */
async function watch(p: CliProcess, api: EdgeClient, extraMs: number): Promise<Watch> {
  const nc = await connect({ servers: p.ready.services.edge!.natsUrl! });
  const times: number[] = [];
  const sub = nc.subscribe('devicehub.raw.fast.t', { callback: () => times.push(performance.now()) });
  const states: string[] = [];
  let nodes = 0;
  const readyAt = await eventually(
    async () => {
      const s = (await api.graphql('/opcua/v2', `{ GetServerSettings { ServerState AddressSpaceNodes } }`))
        .GetServerSettings;
      if (states.at(-1) !== s.ServerState) states.push(s.ServerState);
      nodes = s.AddressSpaceNodes;
      return s.ServerState === 'Ready' ? performance.now() : undefined;
    },
    // A machine loaded by other test files starves the server's worker thread.
    180_000,
    'the OPC UA server Ready',
  );
  await sleep(extraMs);
  sub.unsubscribe();
  await nc.close();
  return { times, states, nodes, readyAt };
}

/**
 * Once the API answered, no module blocked the edge's main thread for more than `MAX_BLOCKED_MS`:
 * the edge's own measure (`millwright_main_thread_blocked_max_seconds{since="ready"}` in
 * `/devicehub/metrics`: stretches the main thread was on the CPU without yielding, which a loaded
 * machine's scheduling delays do not count in).
 */
async function assertNoLongTask(api: EdgeClient, what: string): Promise<{ delayMaxMs: number }> {
  const res = await api.request('GET', '/devicehub/metrics');
  assert.equal(res.status, 200, res.text);
  const m = /^millwright_main_thread_blocked_max_seconds\{since="ready"\} (\S+)$/m.exec(res.text);
  assert.ok(m, 'the blocked-stretch metric is exposed');
  const blockedMs = Number(m[1]) * 1000;
  const delay = /^nodejs_eventloop_delay_max_seconds (\S+)$/m.exec(res.text);
  console.log(
    `# ${what}: main thread blocked at most ${blockedMs.toFixed(0)} ms after ready; event-loop delay max ${(Number(delay?.[1]) * 1000).toFixed(0)} ms (starvation included); load ${loadavg()[0]!.toFixed(1)}`,
  );
  assert.ok(
    blockedMs <= MAX_BLOCKED_MS,
    `the main thread ran ${blockedMs.toFixed(0)} ms without yielding after the ready line, through ${what}`,
  );
  return { delayMaxMs: Number(delay?.[1] ?? 0) * 1000 };
}

/**
 * No gap over `max` between the fast tag's values, unless the machine did not schedule the edge
 * for that long (its event-loop delay, starvation included, as long as the gap while its main
 * thread never blocked past `MAX_BLOCKED_MS`: checked before): a loaded CI host is not the code's defect.
 */
function assertGap(gap: number, max: number, loop: { delayMaxMs: number }, what: string): void {
  assert.ok(
    gap <= max || gap <= loop.delayMaxMs + max,
    `longest gap between the fast tag's values ${what}: ${gap.toFixed(0)} ms (the edge's event-loop delay at most ${loop.delayMaxMs.toFixed(0)} ms)`,
  );
}

function longestGap(times: number[]): number {
  let gap = 0;
  for (let i = 1; i < times.length; i++) gap = Math.max(gap, times[i]! - times[i - 1]!);
  return gap;
}

test('a 100 ms tag keeps its rate through a start with the OPC UA server (Starting → Ready), and after a SIGKILL', async () => {
  const dir = dirs.make();
  const creds = runCliJson(['edge', 'api-client', 'create', '--name', 'starts'], env(dir));
  let edge = await start(dir);
  let api = client(edge, creds);
  const dev = async (Name: string) =>
    (
      await api.graphql(
        '/devicehub/v2',
        `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`,
        {
          in: { Name, DriverID: 'Generator' },
        },
      )
    ).CreateDevice.ID as string;
  const tags = (DeviceID: string, list: Array<Record<string, unknown>>) =>
    api.graphql(
      '/devicehub/v2',
      `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`,
      {
        in: list.map((t) => ({
          DeviceID,
          ValueType: 'float64',
          Properties: [{ Name: 'address', Value: '0' }],
          ...t,
        })),
      },
    );
  await tags(await dev('fast'), [{ Name: 'S', TagName: 't', IntervalMs: 100 }]);
  const bulk = await dev('bulk');
  for (let i = 0; i < BULK; i += 1000)
    await tags(
      bulk,
      // Polled hourly: they are here for the address space's size (the server builds a node for
      // each), not for their values, which would only keep the edge busy for the whole file.
      Array.from({ length: 1000 }, (_, j) => ({ Name: 'N', TagName: `n${i + j}`, IntervalMs: 3_600_000 })),
    );
  await api.graphql('/opcua/v2', `mutation { SyncNodes(input: { AutoSync: true }) { ID } }`);
  await eventually(
    async () =>
      (await api.graphql('/opcua/v2', `{ GetCurrentSync { State } }`)).GetCurrentSync.State === 'Succeeded',
    60_000,
    'the sync done',
  );
  api.close();
  assert.equal(await edge.stop(), 0);

  // A start: the values keep their rate while the server goes Starting → Ready.
  edge = await start(dir);
  api = client(edge, creds);
  const conf = await api.rest('GET', '/opcua/service_conf');
  assert.ok(['starting', 'ready'].includes(conf.state), JSON.stringify(conf));
  const first = await watch(edge, api, 1000);
  assert.deepEqual(
    first.states.filter((s) => s !== 'Starting'),
    ['Ready'],
    first.states.join(' → '),
  );
  assert.ok(first.nodes > BULK, `${first.nodes} nodes in the address space`);
  assert.equal((await api.rest('GET', '/opcua/service_conf')).state, 'ready');
  assert.ok(first.times.length >= 10, `${first.times.length} values`);
  const loop1 = await assertNoLongTask(api, 'the start');
  assertGap(longestGap(first.times), MAX_GAP_MS, loop1, 'through the start');
  api.close();

  // SIGKILL, then a start: full rate from the first value on.
  process.kill(edge.pid, 'SIGKILL');
  await edge.exited;
  edge = await start(dir);
  api = client(edge, creds);
  const again = await watch(edge, api, 1000);
  const window = again.times.filter((t) => t - again.times[0]! <= 3000);
  const loop2 = await assertNoLongTask(api, 'the start after the SIGKILL');
  assertGap(longestGap(again.times), MAX_GAP_AFTER_KILL_MS, loop2, 'after the SIGKILL');
  // About 30 values; a host that starved the edge (its loop late past the gap bound) may cost a
  // few, never down to the old start's 1-4 values a second (at most 12 in 3 s).
  const least = loop2.delayMaxMs > MAX_GAP_MS ? 13 : 20;
  assert.ok(
    window.length >= least,
    `${window.length} values in the first 3 s after the SIGKILL (want about 30, at least ${least}; the edge's event-loop delay at most ${loop2.delayMaxMs.toFixed(0)} ms)`,
  );
  api.close();
});
