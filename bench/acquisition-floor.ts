/**
 * bench/acquisition-floor: the least work `bench/acquisition`'s path must do, with no Millwright code
 * around it (issue 34: 100,000 Modbus values/s at 25% of a core, RSS under 250 MiB). Each case is a
 * bare Node process of its own (`acquisition-floor-peer.mjs`, plain JavaScript), its CPU read from /proc over a window
 * after a warm-up, cases alternated over rounds, medians reported:
 *
 * - `read`: the read side. The modbus-serial client (as the edge's Modbus driver uses it) reading the
 *   same blocks from the same servers at the same rate: 10 devices, each polled once a second, its
 *   80 blocks of 125 holding registers read one after the other (as the driver does), every value
 *   decoded into the tag's last value. Not a tight loop: 100,000 values/s.
 * - `deliver`: the delivery side. A bare TCP server speaking the NATS server protocol (INFO, PONG,
 *   SUB) to a real NATS subscriber (the `nats` client in this process, subscribed to
 *   `devicehub.raw.>` as the acquisition bench's is), writing the edge's MSG frames (the same
 *   subjects `devicehub.raw.<device>.<tag>`, the same JSON payloads, byte for byte the edge's shape
 *   and size) at 100,000 a second, one socket write per block of 125 values, 800 blocks a second
 *   paced by a timer, as the gateway writes one buffer per block's answer.
 * - `both`: the two in one process, as the edge has them: each block's answer decoded into the
 *   tags' last values and written as 125 MSG frames in one write. Its resident memory with
 *   100,000 tags' minimal state (ID, name, address, last value) and the subscriber's connection is
 *   the memory floor.
 * - `all`: `both`, and every value recorded as the edge's history does by default: a worker thread
 *   appending (tag, ts, v) rows to DuckDB (one thread, a 256 MB limit, the store's hot table and
 *   block size) in four batches a second, one appender per batch. It leaves out the store's minute
 *   move into a segment file and its queries, so it is below what the store costs.
 *
 *   npm run bench -- acquisition-floor [--servers 10] [--registers 10000] [--floor-rounds 3] [--floor-seconds 5]
 *                                      [--floor-warmup 2] [--floor-cases read,deliver,both,all] [--short]
 *
 * `--short`: 2 rounds of a 4 s window. The floors' figures are what the service's (in
 * `bench/acquisition`, same machine, same load) should be read against. `bench/acquisition
 * --floors` measures them over the service's own window (see `measureFloors`' `window`).
 * `--floor-cases`: only these cases (the others are left out of the table).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { connect } from 'nats';
import { numArg as arg, reportFigures } from './support.js';

const SERVERS = arg('servers', 10);
const REGISTERS = arg('registers', 10000);
const ROUNDS = arg('floor-rounds', 3, 2);
const SECONDS = arg('floor-seconds', 5, 4);
const WARMUP = arg('floor-warmup', 2);
const BLOCK = 125;
const INTERVAL_MS = 1000;

// --- the bench ------------------------------------------------------------------------------------
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

const valuesRead = new Map<ChildProcess, number>();
function child(args: string[]): Promise<{ proc: ChildProcess; line: Record<string, unknown> }> {
  const proc = spawn(
    process.execPath,
    [join(dirname(import.meta.filename), 'acquisition-floor-peer.mjs'), ...args],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(proc);
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0 && out.startsWith('{'))
        resolve({ proc, line: JSON.parse(out.slice(0, nl)) as Record<string, unknown> });
      // `read N` lines: the values the process has read (made, in `deliver`) so far.
      const at = out.lastIndexOf('read ');
      const end = out.indexOf('\n', at);
      if (at >= 0 && end > at) {
        valuesRead.set(proc, Number(out.slice(at + 5, end)));
        out = out.slice(end + 1);
      }
    });
    proc.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}`)));
  });
}
const stop = (p: ChildProcess) =>
  new Promise<void>((r) => {
    if (p.exitCode !== null) return r();
    p.once('exit', () => r());
    p.kill('SIGKILL');
  });

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

type Role = 'read' | 'deliver' | 'both' | 'all';
export interface FloorCase {
  cpu: number;
  rss: number;
  delivered: number;
  payloadBytes: number;
  /** Values read (made, in `deliver`) a second, and CPU microseconds a value. */
  values: number;
  usPerValue: number;
  /** Receipt by the subscriber minus the payload's timestamp (the block's answer), ms: p50, p99. */
  p50: number;
  p99: number;
}

/** The window of a case: seconds after the process starts reading, and seconds measured. */
export interface FloorWindow {
  warmup: number;
  seconds: number;
}

const ALL_ROLES = ['read', 'deliver', 'both', 'all'] as const;
const casesAt = process.argv.indexOf('--floor-cases');
const CASES: readonly Role[] =
  casesAt > 0 ? ALL_ROLES.filter((r) => (process.argv[casesAt + 1] ?? '').split(',').includes(r)) : ALL_ROLES;

/** One case in a process of its own: CPU share of a core and highest RSS over the window. */
async function runCase(role: Role, ports: number[], window: FloorWindow): Promise<FloorCase> {
  const { proc, line } = await child([
    '--role',
    role,
    '--ports',
    ports.join(','),
    '--servers',
    String(SERVERS),
    '--registers',
    String(REGISTERS),
  ]);
  let received = 0;
  let counting = false;
  let payloadBytes = 0;
  let nc: Awaited<ReturnType<typeof connect>> | undefined;
  // The latency as bench/acquisition measures the edge's (the same subscriber, the same parse).
  const latencies = new Float64Array(Math.ceil(SERVERS * REGISTERS * window.seconds * 1.5));
  let latN = 0;
  if (role !== 'read') {
    nc = await connect({ servers: `127.0.0.1:${line.port as number}`, maxPingOut: 100 });
    nc.subscribe('devicehub.raw.>', {
      callback: (_e, m) => {
        if (payloadBytes === 0) payloadBytes = m.data.length;
        if (!counting) return;
        received++;
        const t = m.string();
        const i = t.indexOf('"timestamp":');
        if (latN < latencies.length && i >= 0)
          latencies[latN++] = Date.now() - Number(t.slice(i + 12, t.indexOf(',', i)));
      },
    });
    await nc.flush();
  }
  await sleep(window.warmup * 1000);
  const pid = proc.pid!;
  const c0 = cpuSeconds(pid);
  const v0 = valuesRead.get(proc) ?? 0;
  const w0 = performance.now();
  counting = true;
  let rss = rssMiB(pid);
  const timer = setInterval(() => (rss = Math.max(rss, rssMiB(pid))), 250);
  await sleep(window.seconds * 1000);
  counting = false;
  clearInterval(timer);
  const wall = (performance.now() - w0) / 1000;
  const cpu = (cpuSeconds(pid) - c0) / wall;
  const values = ((valuesRead.get(proc) ?? 0) - v0) / wall;
  rss = Math.max(rss, rssMiB(pid));
  await nc?.close();
  await stop(proc);
  const lat = latencies.subarray(0, latN).sort();
  const q = (x: number) => (latN === 0 ? NaN : lat[Math.min(latN - 1, Math.ceil(x * latN) - 1)]!);
  return {
    cpu,
    rss,
    delivered: received / wall,
    payloadBytes,
    values,
    usPerValue: (cpu / values) * 1e6,
    p50: q(0.5),
    p99: q(0.99),
  };
}

export type Floors = Partial<Record<Role, FloorCase & { cpus: number[]; rsses: number[] }>> & {
  window: FloorWindow;
};

/**
 * The floors over `ROUNDS` alternated rounds against running servers; medians. `window`: the
 * warm-up and window of each case (default `--floor-warmup`, `--floor-seconds`); an explicit
 * `--floor-warmup` or `--floor-seconds` wins over it.
 */
export async function measureFloors(ports: number[], window?: FloorWindow): Promise<Floors> {
  const w: FloorWindow = {
    warmup: process.argv.includes('--floor-warmup') || !window ? WARMUP : window.warmup,
    seconds: process.argv.includes('--floor-seconds') || !window ? SECONDS : window.seconds,
  };
  const runs: Record<string, FloorCase[]> = { read: [], deliver: [], both: [], all: [] };
  for (let r = 0; r < ROUNDS; r++) for (const role of CASES) runs[role]!.push(await runCase(role, ports, w));
  const med = (role: Role) => {
    const xs = runs[role]!;
    if (xs.length === 0) return undefined;
    return {
      cpu: median(xs.map((x) => x.cpu)),
      rss: median(xs.map((x) => x.rss)),
      delivered: median(xs.map((x) => x.delivered)),
      p50: median(xs.map((x) => x.p50)),
      p99: median(xs.map((x) => x.p99)),
      values: median(xs.map((x) => x.values)),
      usPerValue: median(xs.map((x) => x.usPerValue)),
      payloadBytes: xs[0]!.payloadBytes,
      cpus: xs.map((x) => x.cpu),
      rsses: xs.map((x) => x.rss),
    };
  };
  return { read: med('read'), deliver: med('deliver'), both: med('both'), all: med('all'), window: w };
}

export function printFloors(f: Floors): void {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  console.log(
    `\nfloors: bare Node processes, no Millwright code; ${SERVERS} devices × ${fmt(REGISTERS)} uint16 tags at ${INTERVAL_MS} ms, blocks of ${BLOCK}; ` +
      `${ROUNDS} rounds alternated, window ${f.window.seconds} s after ${f.window.warmup} s; median (each round)\n`,
  );
  console.log(
    '| floor | CPU (one core = 100%), median (rounds) | values/s read | µs CPU a value | CPU at 100,000 values/s | RSS MiB, median (rounds) | values/s delivered | latency p50 / p99 ms |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const row = (
    name: string,
    c: (FloorCase & { cpus: number[]; rsses: number[] }) | undefined,
    delivered: boolean,
  ) => {
    if (c)
      console.log(
        `| ${name} | ${pct(c.cpu)} (${c.cpus.map(pct).join(', ')}) | ${fmt(c.values)} | ${c.usPerValue.toFixed(2)} | ${pct(c.usPerValue / 10)} | ${c.rss.toFixed(0)} (${c.rsses.map((r) => r.toFixed(0)).join(', ')}) | ${delivered ? fmt(c.delivered) : ''} | ${delivered ? `${c.p50.toFixed(1)} / ${c.p99.toFixed(1)}` : ''} |`,
      );
  };
  row('(a) read: modbus-serial client, same blocks at the same rate', f.read, false);
  row(
    `(b) deliver: MSG frames (payload ${f.deliver?.payloadBytes ?? 0} B) to a nats subscriber, one write per block`,
    f.deliver,
    true,
  );
  row("(a)+(b) in one process, 100,000 tags' minimal state: (c) its RSS", f.both, true);
  row(
    '(a)+(b)+(d): and every value recorded (a worker thread appending to DuckDB, 4 batches a second)',
    f.all,
    true,
  );
  if (f.read && f.deliver && f.both)
    console.log(
      `\n(a) + (b) measured apart: ${pct(f.read.cpu + f.deliver.cpu)} of a core, ${(f.read.usPerValue + f.deliver.usPerValue).toFixed(2)} µs a value ` +
        `(${pct((f.read.usPerValue + f.deliver.usPerValue) / 10)} at 100,000 values/s); in one process ${f.both.usPerValue.toFixed(2)} µs a value; the target: 25% of a core (2.5 µs a value)`,
    );
}

/** The floors' figures for `bench/summary` (the cases measured). */
export function floorFigures(f: Floors, perValue = false): Record<string, number> {
  const all: Record<string, number | undefined> = {
    readFloorCpuShareOfCore: f.read?.cpu,
    deliverFloorCpuShareOfCore: f.deliver?.cpu,
    bothFloorCpuShareOfCore: f.both?.cpu,
    floorRssMiB: f.both?.rss,
    bothFloorP99Ms: f.both?.p99,
    allFloorP99Ms: f.all?.p99,
    allFloorCpuShareOfCore: f.all?.cpu,
    allFloorRssMiB: f.all?.rss,
    ...(perValue
      ? {
          bothFloorUsPerValue: f.both?.usPerValue,
          allFloorUsPerValue: f.all?.usPerValue,
          deliverFloorPerSecond: f.deliver?.delivered,
          bothFloorPerSecond: f.both?.delivered,
        }
      : {}),
  };
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(all)) if (v !== undefined) out[k] = v;
  return out;
}

/** The Modbus servers of `bench/acquisition` (its `--serve` process); their ports. */
export async function startServers(): Promise<{ ports: number[]; proc: ChildProcess }> {
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(dirname(import.meta.filename), 'acquisition.ts'),
      '--serve',
      '--servers',
      String(SERVERS),
      '--registers',
      String(REGISTERS),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(proc);
  let out = '';
  return new Promise((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && out.includes('\n'))
        resolve({ ports: (JSON.parse(line) as { ports: number[] }).ports, proc });
    });
    proc.on('exit', (code) => reject(new Error(`servers exited ${code}`)));
  });
}

if (import.meta.filename === process.argv[1]) {
  const servers = await startServers();
  const f = await measureFloors(servers.ports);
  await stop(servers.proc);
  console.log(
    `\nbench/acquisition-floor: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  );
  printFloors(f);
  reportFigures(floorFigures(f, true), 'sources');
  process.exit(0);
}
