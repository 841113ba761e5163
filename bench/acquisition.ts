/**
 * bench/acquisition: Modbus TCP polling at scale, end to end. 10 Modbus TCP servers (modbus-serial's
 * ServerTCP) × 10,000 holding registers, every register a tag polled at a 1 s interval (100,000
 * values per second), published by the edge on the DataHub and received by a `nats` client
 * subscribed to `devicehub.raw.>` through the edge's gateway. Measured over a window after a
 * warm-up: values per second delivered, CPU share of the edge process (user + system time over
 * wall time, from /proc), its resident memory, and poll-to-subscriber latency p50/p99 (the
 * payload's `timestamp`, set when the device's answer arrived, to the subscriber's receipt, plus
 * the poll's own duration from /devicehub/metrics). Beside it, the ceiling: the same modbus-serial
 * client reading the same blocks (125 registers) from the same servers in a tight loop, nothing
 * published. Beside them, the issue-9 figures: the edge's resident memory after set-up (every tag
 * configured and polled, after the warm-up), and the time from a one-tag `UpdateRegister` (GraphQL
 * mutation at /devicehub/v2: a new TagFormula and Description) to the first value with the new
 * settings at the NATS subscriber, over several updates.
 *
 * Three processes: the servers (this file with `--serve`), the edge (`millwright edge`), and this
 * process (configuration, the NATS subscriber, the ceiling).
 *
 *   npm run bench -- acquisition [--servers 10] [--registers 10000] [--seconds 20] [--warmup 10]
 *                                [--short] [--edge-args "--history=false"] [--floors]
 *
 * `--short` (for `npm run bench -- summary`): the same 100,000 tags, a window of 8 s after 5 s of
 * warm-up, 3 updates instead of 7. `--floors`: the floors of bench/acquisition-floor.ts over the
 * edge's own window (as long as its, after as long as the edge had polled and recorded before it:
 * half the set-up and the warm-up); `--floor-cases all,both` measures only those.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { EdgeClient } from '../src/client/index.js';
import modbusSerial from 'modbus-serial';
import type { ModbusRTU } from 'modbus-serial/ModbusRTU.js';
import { ModbusPeer } from '../test/helpers/peers/modbus.js';
import { cleanEnv, runCliJson, startCli } from '../test/helpers/cli.js';
import { numArg as arg, reportFigures, SHORT } from './support.js';
import { floorFigures, measureFloors, printFloors } from './acquisition-floor.js';

const SERVERS = arg('servers', 10);
const REGISTERS = arg('registers', 10000);
const SECONDS = arg('seconds', 20, 8);
const WARMUP = arg('warmup', 10, 5);
const BLOCK = 125;
/** `--floors`: after the ceiling, the floors of bench/acquisition-floor.ts against the same servers. */
const FLOORS = process.argv.includes('--floors');
/** Extra flags for `millwright edge` (one string, split at spaces), e.g. `--history-memory-mb 64`. */
const edgeArgsAt = process.argv.indexOf('--edge-args');
const EDGE_ARGS = edgeArgsAt > 0 ? (process.argv[edgeArgsAt + 1] ?? '').split(' ').filter(Boolean) : [];

// --- the servers' process -----------------------------------------------------------------------
if (process.argv.includes('--serve')) {
  const ports: number[] = [];
  for (let s = 0; s < SERVERS; s++) {
    const peer = new ModbusPeer(REGISTERS);
    const regs = peer.holding;
    for (let i = 0; i < REGISTERS; i++) regs[i] = (i * 7 + s) & 0xffff;
    let tick = 0;
    setInterval(() => {
      tick++;
      for (let i = 0; i < REGISTERS; i += 97) regs[i] = (regs[i]! + tick) & 0xffff;
    }, 250).unref();
    ports.push(await peer.start());
  }
  process.stdout.write(`${JSON.stringify({ ports })}\n`);
  await new Promise(() => undefined);
}

// --- helpers --------------------------------------------------------------------------------------
const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-acquisition-'));
const env = {
  ...cleanEnv(),
  MILLWRIGHT_EDGE_DATA_DIR: dataDir,
  MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
  MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
  MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
};
const children: ChildProcess[] = [];
const stops: Array<() => void> = [];
const cleanup = () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  for (const stop of stops.splice(0)) stop();
};
process.on('exit', cleanup);

const cli = (args: string[]) => runCliJson(args, env);

async function startServers(): Promise<number[]> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      import.meta.filename,
      '--serve',
      '--servers',
      String(SERVERS),
      '--registers',
      String(REGISTERS),
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  let out = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && out.includes('\n')) resolve((JSON.parse(line) as { ports: number[] }).ports);
    });
    child.on('exit', (code) => reject(new Error(`servers exited ${code}`)));
  });
}

async function startEdge(): Promise<{ url: string; nats: string; pid: number; output: () => string }> {
  const edge = await startCli(
    ['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn', ...EDGE_ARGS],
    {
      env,
      inheritStderr: true,
      // A loaded machine (8 helpers on 2 vCPUs) took more than the default 30 s to start it.
      timeoutMs: 120_000,
    },
  );
  stops.push(() => void edge.stop());
  const ready = edge.ready.services.edge!;
  return { url: ready.url, nats: ready.natsUrl!, pid: edge.pid, output: edge.output };
}

/** CPU seconds (user + system) of a process, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}
const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

// --- the run ------------------------------------------------------------------------------------
const ports = await startServers();
const client = cli(['edge', 'api-client', 'create', '--name', 'bench']);
const edge = await startEdge();
const api = new EdgeClient({
  url: edge.url,
  natsUrl: edge.nats,
  credentials: { clientId: client.client_id, clientSecret: client.client_secret },
  insecure: true,
});
const gql = (query: string, variables?: Record<string, unknown>): Promise<any> =>
  api.graphql('/devicehub/v2', query, variables);

const nc = await api.nats({ connect: { maxPingOut: 100 } });
let received = 0;
let counting = false;
const LAT_CAP = 4_000_000;
const latencies = new Float64Array(LAT_CAP);
/** When each latency sample was taken (`Date.now()`), for `MILLWRIGHT_BENCH_LATENCY_DUMP`. */
const receivedAt = new Float64Array(LAT_CAP);
let latN = 0;
nc.subscribe('devicehub.raw.>', {
  callback: (_err, m) => {
    if (!counting) return;
    received++;
    // The timestamp sits at a fixed place in the payload: parse only what is needed.
    const s = m.string();
    const i = s.indexOf('"timestamp":');
    if (latN < LAT_CAP && i >= 0) {
      const now = Date.now();
      receivedAt[latN] = now;
      latencies[latN++] = now - Number(s.slice(i + 12, s.indexOf(',', i)));
    }
  },
});

const t0 = Date.now();
const firstDeviceTags: string[] = [];
for (let s = 0; s < SERVERS; s++) {
  const dev = (
    await gql(`mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`, {
      in: {
        Name: `plc-${s}`,
        DriverID: 'Modbus TCP',
        Properties: [
          { Key: 'host', Value: '127.0.0.1' },
          { Key: 'port', Value: String(ports[s]) },
          { Key: 'maxRegistersPerRequest', Value: String(BLOCK) },
        ],
      },
    })
  ).CreateDevice.ID;
  const created = await gql(
    `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`,
    {
      in: Array.from({ length: REGISTERS }, (_, i) => ({
        DeviceID: dev,
        Name: 'HR',
        TagName: `hr${i}`,
        ValueType: 'uint16',
        IntervalMs: 1000,
        Properties: [{ Name: 'address', Value: String(i) }],
      })),
    },
  );
  if (s === 0) firstDeviceTags.push(...(created.CreateRegisters as Array<{ ID: string }>).map((r) => r.ID));
}
const setupSeconds = (Date.now() - t0) / 1000;
console.log(
  `configured ${SERVERS} devices × ${fmt(REGISTERS)} tags in ${setupSeconds.toFixed(1)} s; warm-up ${WARMUP} s`,
);
await new Promise((r) => setTimeout(r, WARMUP * 1000));
const rssSetup = rssMiB(edge.pid);
/** The edge's own memory figures (process metrics of /devicehub/metrics), MiB. */
const heapOf = async () => {
  const { text } = await api.request('GET', '/devicehub/metrics');
  const get = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) / 2 ** 20 : NaN;
  };
  const spaces = text
    .split('\n')
    .filter((l) => l.startsWith('nodejs_heap_space_size_used_bytes{'))
    .map((l) => `${/space="(\w+)"/.exec(l)?.[1]} ${(Number(l.split(' ').pop()) / 2 ** 20).toFixed(0)}`)
    .join(', ');
  return { used: get('nodejs_heap_size_used_bytes'), total: get('nodejs_heap_size_total_bytes'), spaces };
};
const heapSetup = await heapOf();
console.log(
  `after set-up: RSS ${rssSetup.toFixed(0)} MiB, JavaScript heap ${heapSetup.used.toFixed(0)} MiB used of ${heapSetup.total.toFixed(0)} MiB (used by space, MiB: ${heapSetup.spaces})`,
);

const metricsOf = async () => {
  const { text } = await api.request('GET', '/devicehub/metrics');
  let sum = 0;
  let count = 0;
  let overruns = 0;
  let errors = 0;
  let reads = 0;
  for (const line of text.split('\n')) {
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (line.startsWith('loopedge_dh_device_read_duration_seconds_sum')) sum += v;
    else if (line.startsWith('loopedge_dh_device_read_duration_seconds_count')) count += v;
    else if (line.startsWith('loopedge_dh_device_overruns_total')) overruns += v;
    else if (line.startsWith('loopedge_dh_device_read_errors_total')) errors += v;
    else if (line.startsWith('loopedge_dh_device_reads_total')) reads += v;
  }
  return { sum, count, overruns, errors, reads };
};
const m0 = await metricsOf();
const cpu0 = cpuSeconds(edge.pid);
const w0 = performance.now();
counting = true;
const windowFrom = Date.now();
let rssMax = 0;
const rssTimer = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(edge.pid))), 500);
await new Promise((r) => setTimeout(r, SECONDS * 1000));
counting = false;
const windowTo = Date.now();
clearInterval(rssTimer);
const wall = (performance.now() - w0) / 1000;
const cpu = (cpuSeconds(edge.pid) - cpu0) / wall;
const m1 = await metricsOf();
// `MILLWRIGHT_BENCH_LATENCY_DUMP=<file>`: every sample of 3 ms and more, as `received latency`
// lines (received: `Date.now()` at the subscriber), to line slow values up with the edge's pauses.
if (process.env.MILLWRIGHT_BENCH_LATENCY_DUMP) {
  const lines: string[] = [];
  for (let k = 0; k < latN; k++) if (latencies[k]! >= 3) lines.push(`${receivedAt[k]} ${latencies[k]}`);
  writeFileSync(process.env.MILLWRIGHT_BENCH_LATENCY_DUMP, `${lines.join('\n')}\n`);
}
const lat = latencies.subarray(0, latN).sort();
/** The distribution: samples per whole millisecond up to 19, then 20 and more. */
const histogram = new Array<number>(21).fill(0);
for (let k = 0; k < latN; k++) histogram[Math.min(20, Math.max(0, Math.round(lat[k]!)))]!++;

// One-tag UpdateRegister to the first value with the new settings (a tag in the middle of a
// device's 10,000, in a group of 10,000 polled at 1 s).
const UPDATES = SHORT ? 3 : 7;
const updateTag = firstDeviceTags[Math.floor(firstDeviceTags.length / 2)]!;
const updateSubject = `devicehub.raw.plc-0.hr${Math.floor(firstDeviceTags.length / 2)}`;
const updateMs: number[] = [];
for (let k = 1; k <= UPDATES; k++) {
  const marker = `bench-update-${k}`;
  const seen = new Promise<number>((resolve) => {
    const sub = nc.subscribe(updateSubject, {
      callback: (_err, m) => {
        const p = m.json<{ description: string; value: number }>();
        if (p.description !== marker) return;
        sub.unsubscribe();
        resolve(performance.now());
      },
    });
  });
  await nc.flush();
  const u0 = performance.now();
  await gql(`mutation($in: UpdateRegisterRequest!) { UpdateRegister(input: $in) { ID } }`, {
    in: { ID: updateTag, Description: marker, TagFormula: `x + ${k * 100000}` },
  });
  updateMs.push((await seen) - u0);
  await new Promise((r) => setTimeout(r, 300));
}
const updateSorted = [...updateMs].sort((a, b) => a - b);
const pollMs = ((m1.sum - m0.sum) / Math.max(1, m1.count - m0.count)) * 1000;
const result = {
  valuesPerSecond: received / wall,
  readPerSecond: (m1.reads - m0.reads) / wall,
  cpu,
  rss: rssMax,
  p50: quantile(lat, 0.5),
  p99: quantile(lat, 0.99),
  pollMs,
  overruns: m1.overruns - m0.overruns,
  errors: m1.errors - m0.errors,
  rssSetup,
  updateP50: updateSorted[Math.floor(updateSorted.length / 2)]!,
  updateMax: updateSorted[updateSorted.length - 1]!,
};
await nc.close();
api.close();
// `MILLWRIGHT_BENCH_EDGE_STDOUT=<file>`: the edge's standard output (`--trace-gc` in
// `MILLWRIGHT_CHILD_NODE_ARGS` prints there), with the window's start and end (`Date.now()`).
if (process.env.MILLWRIGHT_BENCH_EDGE_STDOUT)
  writeFileSync(
    process.env.MILLWRIGHT_BENCH_EDGE_STDOUT,
    `window ${windowFrom} ${windowTo}\n${edge.output()}`,
  );
cleanup();

// --- the ceiling: the same client, the same blocks, a tight loop, nothing published --------------
const Client = modbusSerial as unknown as new () => ModbusRTU;
const ceilingSeconds = Math.min(SECONDS, 10);
const servers2 = await startServers();
let regs = 0;
const until = Date.now() + ceilingSeconds * 1000;
const c0 = performance.now();
await Promise.all(
  servers2.map(async (port) => {
    const c = new Client();
    await c.connectTCP('127.0.0.1', { port });
    c.setID(1);
    c.setTimeout(2000);
    while (Date.now() < until) {
      for (let a = 0; a < REGISTERS && Date.now() < until; a += BLOCK) {
        const r = await c.readHoldingRegisters(a, Math.min(BLOCK, REGISTERS - a));
        regs += r.data.length;
      }
    }
    c.close(() => undefined);
  }),
);
const ceiling = regs / ((performance.now() - c0) / 1000);
// The floors (bench/acquisition-floor.ts) against the same servers, in the same run, over the
// edge's window: the edge's devices began polling (and recording) one by one during the set-up,
// on average half of it before its end, then the warm-up, then the window (the warm-up at most
// 15 s: a set-up slowed by a loaded machine must not take bench/summary past its time limit).
const floors = FLOORS
  ? await measureFloors(servers2, {
      warmup: Math.min(15, Math.round(setupSeconds / 2 + WARMUP)),
      seconds: SECONDS,
    })
  : undefined;
cleanup();
rmSync(dataDir, { recursive: true, force: true });

const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
console.log(
  `\nbench/acquisition: ${SERVERS} Modbus TCP servers × ${fmt(REGISTERS)} holding registers, every one a uint16 tag at 1 s ` +
    `(${fmt(SERVERS * REGISTERS)} values/s offered), blocks of ${BLOCK}; window ${SECONDS} s after ${WARMUP} s warm-up; ` +
    `${cpus().length} × ${cpuModel}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}\n`,
);
console.log(
  '| case | values/s read and published | values/s delivered to the subscriber | edge CPU (one core = 100%) | edge RSS MiB | latency p50 ms | latency p99 ms | poll duration ms |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
console.log(
  `| edge: poll, publish, NATS subscriber via the gateway | ${fmt(result.readPerSecond)} | ${fmt(result.valuesPerSecond)} | ${(result.cpu * 100).toFixed(0)}% | ${result.rss.toFixed(0)} | ${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} | ${result.pollMs.toFixed(1)} |`,
);
console.log(
  `| ceiling: modbus-serial client, same blocks, tight loop, no publishing | ${fmt(ceiling)} | | | | | | |`,
);
console.log(
  `\noverruns in the window: ${result.overruns}; failed reads: ${result.errors}; latency samples: ${fmt(latN)}`,
);
console.log(
  `latency distribution (ms: share of samples): ${histogram
    .map((n, ms) => [ms, n] as const)
    .filter(([, n]) => n > 0)
    .map(([ms, n]) => `${ms === 20 ? '≥20' : ms}: ${((n / Math.max(1, latN)) * 100).toFixed(2)}%`)
    .join(', ')}`,
);
console.log('\n| issue 9 | measured | target |');
console.log('| --- | ---: | ---: |');
console.log(
  `| edge RSS after set-up (${fmt(SERVERS * REGISTERS)} tags configured and polling, after the warm-up), MiB | ${rssSetup.toFixed(0)} | < 300 |`,
);
console.log(
  `| of which JavaScript heap in use / reserved, MiB | ${heapSetup.used.toFixed(0)} / ${heapSetup.total.toFixed(0)} | |`,
);
console.log(
  `| one-tag UpdateRegister to the first value with the new settings, median of ${UPDATES}, ms | ${result.updateP50.toFixed(1)} | < 100 |`,
);
console.log(`| same, slowest of ${UPDATES}, ms | ${result.updateMax.toFixed(1)} | |`);
console.log(
  `\ntargets: RSS ${rssSetup < 300 ? 'MET' : 'NOT MET'}; update latency ${result.updateP50 < 100 ? 'MET' : 'NOT MET'} (all ${UPDATES}: ${updateMs.map((x) => x.toFixed(0)).join(', ')} ms)`,
);
if (floors) printFloors(floors);
reportFigures({
  ...(floors ? floorFigures(floors) : {}),
  offeredPerSecond: SERVERS * REGISTERS,
  deliveredPerSecond: result.valuesPerSecond,
  ceilingPerSecond: ceiling,
  cpuShareOfCore: result.cpu,
  rssMaxMiB: result.rss,
  p99Ms: result.p99,
  failedReads: result.errors,
});
process.exit(0);
