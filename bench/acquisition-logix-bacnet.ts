/**
 * bench/acquisition-logix-bacnet: the Logix Ethernet and BACnet/IP drivers at full speed, each beside
 * its protocol library's own tight loop against the same peer. For each driver: a peer in a child
 * process (the test peers of test/helpers/peers/: our own Logix tag server; a BACnet device on
 * @bacnet-js/client), the edge (`millwright edge`) with one device whose tags are polled at an
 * interval shorter than a read cycle takes (so the edge reads as fast as it can; ticks that find
 * the previous read running are skipped), and a NATS subscriber counting the values delivered.
 * Measured over a window: values per second delivered, requests per read cycle (at the peer),
 * edge CPU. Then the library alone: st-ethernet-ip's own TagGroup reader (Multiple Service
 * Packets) over the same tags; @bacnet-js/client's readPropertyMultiple over the same properties
 * in the same requests as the driver plans them (as many as one 1476-byte answer holds), once one
 * request at a time and once with as many in flight as the driver's default (4); nothing
 * published. The edge / library ratio is taken against the faster of the two library loops.
 *
 *   npm run bench -- acquisition-logix-bacnet [--driver logix|bacnet|all] [--tags 1000] [--objects 4000] [--seconds 10] [--warmup 5]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { EdgeClient } from '../src/client/index.js';
import { cleanEnv, runCliJson, startCli } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/util.js';
import { MAX_APDU_BIP, PRESENT_VALUE, planBatches } from '../src/edge/acquisition/drivers/bacnet-plan.js';
import { fixRequests } from '../src/edge/acquisition/drivers/bacnet-socket.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const TAGS = arg('tags', 1000);
const OBJECTS = arg('objects', 4000);
const DRIVER = (() => {
  const i = process.argv.indexOf('--driver');
  return i > 0 ? process.argv[i + 1]! : 'all';
})();
/** The driver's default requests in flight (maxConcurrentRequests). */
const INFLIGHT = 4;
const SECONDS = arg('seconds', 10);
const WARMUP = arg('warmup', 5);

// --- the peers' process: prints {"port"} then answers "stats" lines with its counters ------------
const serve = process.argv.indexOf('--serve');
if (serve > 0) {
  const kind = process.argv[serve + 1];
  let stats: () => unknown;
  let port: number;
  if (kind === 'logix') {
    const { LogixPeer, CIP } = await import('../test/helpers/peers/logix.js');
    const peer = new LogixPeer();
    for (let i = 0; i < TAGS; i++) peer.add(`T${i}`, CIP.DINT).data.writeInt32LE(i);
    port = await peer.start();
    stats = () => ({ requests: peer.requests, reads: peer.tagReads });
  } else {
    const { BacnetPeer } = await import('../test/helpers/peers/bacnet.js');
    const peer = new BacnetPeer(77);
    for (let i = 0; i < OBJECTS; i++) peer.add({ type: 2, instance: i, name: `AV${i}`, value: i });
    port = await peer.start(await freePort());
    stats = () => ({
      requests: peer.served.readPropertyMultiple,
      reads: peer.propertyReads,
      aborts: peer.aborts,
      outstanding: peer.maxOutstanding,
    });
  }
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'stats') process.stdout.write(`${JSON.stringify(stats())}\n`);
  }
  process.exit(0);
}

interface Peer {
  port: number;
  stats(): Promise<{ requests: number; reads: number }>;
  stop(): void;
}

async function startPeer(kind: 'logix' | 'bacnet'): Promise<Peer> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      import.meta.filename,
      '--serve',
      kind,
      '--tags',
      String(TAGS),
      '--objects',
      String(OBJECTS),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value as string) as Record<string, number>;
  const { port } = await next();
  return {
    port: port!,
    stats: async () => {
      child.stdin!.write('stats\n');
      return (await next()) as { requests: number; reads: number };
    },
    stop: () => child.kill('SIGTERM'),
  };
}

function cpuSeconds(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const sleep = (s: number) => new Promise((r) => setTimeout(r, s * 1000));
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function edgeCase(kind: 'logix' | 'bacnet') {
  const peer = await startPeer(kind);
  const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-drivers-'));
  const env = {
    ...cleanEnv(),
    MILLWRIGHT_EDGE_DATA_DIR: dataDir,
    MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
    MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
    MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
    // e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the edge
    ...(process.env.BENCH_EDGE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_EDGE_NODE_OPTIONS } : {}),
  };
  const cred = runCliJson(['edge', 'api-client', 'create', '--name', 'bench'], env);
  const edge = await startCli(['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'], {
    env,
    inheritStderr: true,
  });
  const ready = edge.ready.services.edge!;
  const api = new EdgeClient({
    url: ready.url,
    natsUrl: ready.natsUrl!,
    credentials: { clientId: cred.client_id, clientSecret: cred.client_secret },
    insecure: true,
  });
  const gql = (q: string, v?: Record<string, unknown>): Promise<any> => api.graphql('/devicehub/v2', q, v);
  const nc = await api.nats({ connect: { maxPingOut: 100 } });
  let received = 0;
  nc.subscribe('devicehub.raw.>', { callback: () => received++ });
  const props =
    kind === 'logix'
      ? { host: '127.0.0.1', port: String(peer.port) }
      : {
          host: '127.0.0.1',
          port: String(peer.port),
          localPort: String(await freePort()),
          useCov: 'false',
        };
  const dev = (
    await gql(`mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`, {
      in: {
        Name: `${kind}-1`,
        DriverID: kind === 'logix' ? 'Logix Ethernet' : 'BACnet/IP',
        Properties: Object.entries(props).map(([Key, Value]) => ({ Key, Value })),
      },
    })
  ).CreateDevice.ID;
  const n = kind === 'logix' ? TAGS : OBJECTS;
  await gql(`mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`, {
    in: Array.from({ length: n }, (_, i) => ({
      DeviceID: dev,
      Name: kind === 'logix' ? 'R' : 'AV',
      TagName: `t${i}`,
      ValueType: kind === 'logix' ? 'dint' : 'float32',
      IntervalMs: 10,
      Properties:
        kind === 'logix' ? [{ Name: 'tagName', Value: `T${i}` }] : [{ Name: 'address', Value: String(i) }],
    })),
  });
  await sleep(WARMUP);
  const s0 = await peer.stats();
  const c0 = cpuSeconds(edge.pid);
  const r0 = received;
  const t0 = performance.now();
  await sleep(SECONDS);
  const wall = (performance.now() - t0) / 1000;
  const values = (received - r0) / wall;
  const cpu = (cpuSeconds(edge.pid) - c0) / wall;
  const s1 = await peer.stats();
  const cycles = (s1.reads - s0.reads) / n;
  await nc.close();
  api.close();
  await edge.stop();
  peer.stop();
  rmSync(dataDir, { recursive: true, force: true });
  return { values, cpu, perCycle: (s1.requests - s0.requests) / cycles };
}

async function libraryCase(kind: 'logix' | 'bacnet', inflight = 1) {
  const peer = await startPeer(kind);
  let values = 0;
  let until = Date.now() + SECONDS * 1000;
  let t0 = performance.now();
  if (kind === 'logix') {
    const m = await import('st-ethernet-ip');
    const lib = ((m as unknown as { default?: typeof m }).default ?? m) as typeof m;
    const config = (await import('st-ethernet-ip/dist/config.js')) as { default?: { EIP_PORT: number } };
    (config.default ?? (config as unknown as { EIP_PORT: number })).EIP_PORT = peer.port;
    const plc = new lib.Controller(false);
    await plc.connect('127.0.0.1', 0, false);
    const group = new lib.TagGroup();
    for (let i = 0; i < TAGS; i++) group.add(new lib.Tag(`T${i}`));
    while (Date.now() < until) {
      await plc.readTagGroup(group);
      values += TAGS;
    }
    plc.destroy();
  } else {
    const m = await import('@bacnet-js/client');
    const d = m.default as unknown as { default?: unknown };
    const Client = (typeof d === 'function' ? d : d.default) as typeof m.default.default;
    // With the library's own request table this loop stops for ever once an invoke id comes round
    // within the APDU timeout (more than 85 requests a second): the driver's table, as the driver.
    const client = fixRequests(new Client({ port: await freePort(), apduTimeout: 3000 }), 3000);
    await new Promise((r) => setTimeout(r, 100));
    const receiver = { address: `127.0.0.1:${peer.port}` };
    // The same requests as the driver's plan for this device (APDU 1476).
    const batches = planBatches({
      refs: Array.from({ length: OBJECTS }, (_, i) => ({
        i,
        ref: { object: { type: 2, instance: i }, property: PRESENT_VALUE },
        bytes: 5,
      })),
      budget: MAX_APDU_BIP - 8,
      maxProperties: 0,
    });
    perCycle = batches.length;
    const cycle = async () => {
      let next = 0;
      const worker = async () => {
        while (next < batches.length) {
          const r = await client.readPropertyMultiple(receiver, batches[next++]!.spec);
          values += r.values.length;
        }
      };
      await Promise.all(Array.from({ length: inflight }, worker));
    };
    for (const end = Date.now() + WARMUP * 1000; Date.now() < end;) await cycle();
    values = 0;
    until = Date.now() + SECONDS * 1000;
    t0 = performance.now();
    while (Date.now() < until) await cycle();
    client.close();
  }
  const rate = values / ((performance.now() - t0) / 1000);
  peer.stop();
  return rate;
}
let perCycle = 0;

/**
 * The BACnet driver alone (its session in this process, no engine, nothing published) against a
 * fresh peer, as the library loops are measured: what the driver costs beside the library.
 */
async function driverAlone(): Promise<number> {
  const peer = await startPeer('bacnet');
  const { bacnetDriver } = await import('../src/edge/acquisition/drivers/bacnet.js');
  const session = bacnetDriver.create(
    {
      id: 'bench',
      name: 'bench',
      driver: undefined as never, // the session does not read its catalogue entry
      aliasTopics: false,
      props: {
        host: '127.0.0.1',
        port: String(peer.port),
        localPort: String(await freePort()),
        useCov: 'false',
      },
    },
    { logger: undefined, dataDir: '', lost: () => undefined },
  );
  await session.connect();
  const tags = Array.from({ length: OBJECTS }, (_, i) => ({
    id: `t${i}`,
    name: `t${i}`,
    register: 'AV',
    valueType: 'float32',
    intervalMs: 10,
    props: { address: String(i) },
  })) as unknown as Parameters<typeof session.read>[0];
  for (const end = Date.now() + WARMUP * 1000; Date.now() < end;) await session.read(tags);
  let values = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < SECONDS * 1000) values += (await session.read(tags)).length;
  const rate = values / ((performance.now() - t0) / 1000);
  await session.close();
  peer.stop();
  return rate;
}

const rows: string[] = [];
const kinds = (['logix', 'bacnet'] as const).filter((k) => DRIVER === 'all' || DRIVER === k);
for (const kind of kinds) {
  const load0 = loadavg()[0]!.toFixed(2);
  const edge = await edgeCase(kind);
  const one = await libraryCase(kind);
  const many = kind === 'bacnet' ? await libraryCase(kind, INFLIGHT) : 0;
  const alone = kind === 'bacnet' ? await driverAlone() : 0;
  const lib = Math.max(one, many);
  const libText =
    kind === 'bacnet'
      ? `${fmt(one)} one at a time, ${fmt(many)} with ${INFLIGHT} in flight (${perCycle} requests a cycle); the driver alone, no engine: ${fmt(alone)} (${((alone / lib) * 100).toFixed(0)}%)`
      : fmt(one);
  rows.push(
    `| ${kind === 'logix' ? `Logix Ethernet, ${fmt(TAGS)} DINT tags` : `BACnet/IP, ${fmt(OBJECTS)} analog values`} | ${fmt(edge.values)} | ${edge.perCycle.toFixed(1)} | ${(edge.cpu * 100).toFixed(0)}% | ${libText} | ${((edge.values / lib) * 100).toFixed(0)}% | ${load0} |`,
  );
}
console.log(
  `\nbench/acquisition-logix-bacnet: tags at IntervalMs 10 (the edge reads as fast as it can); window ${SECONDS} s after ${WARMUP} s; ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}\n`,
);
console.log(
  '| driver, load | edge: values/s delivered to a NATS subscriber | requests per read cycle | edge CPU (one core = 100%) | library tight loop, values/s | edge / library | load average (1 min) at start |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) console.log(r);
process.exit(0);
