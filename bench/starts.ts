/**
 * bench/starts: how fast and how smoothly the edge starts with many tags (issue 33, item 5).
 *
 * A data directory holds `--tags` Generator tags (1 s interval, 1,000 per device) applied as a
 * configuration template, plus one 100 ms Generator tag (`fast/t`), with the OPC UA server on and
 * its DeviceHub folder synced (every tag a variable in the address space). Each round of a
 * variant then:
 *  1. starts the built edge (`node dist/cli/main.js edge`) and times spawn → ready line;
 *  2. waits, kills it with SIGKILL and starts it again (timed the same way), then counts for 10 s
 *     from the ready line the values of `fast/t` per second and of every tag, the longest gap
 *     between two values of `fast/t` and the slowest `GET /devicehub/version` (polled every 50 ms);
 *  3. stops it.
 *
 * Baseline in the same run: the same rounds on the build of `--baseline <dir>` (a checkout of the
 * code before the change, built with `node scripts/build.mjs`; default: $MILLWRIGHT_BENCH_BASELINE).
 * Rounds alternate baseline and current, `--runs` times.
 *
 *   npm run bench -- starts [--tags 10000] [--runs 3] [--baseline /work/wt/starts-base]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { EdgeClient, EdgeConfigClient } from '../src/client/index.js';
import { parseReadyLine, type ReadyLine } from '../src/kernel/ready.js';
import { cleanEnv } from '../test/helpers/cli.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const TAGS = Number(arg('tags', '10000'));
const RUNS = Number(arg('runs', '3'));
const BASELINE = arg('baseline', process.env.MILLWRIGHT_BENCH_BASELINE ?? '');
const ONLY = arg('only', '');
const PER_DEVICE = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const root = join(import.meta.dirname, '..');

interface Variant {
  name: string;
  main: string;
  dataDir: string;
  client?: { client_id: string; client_secret: string };
}

interface Running {
  child: ChildProcess;
  ready: ReadyLine;
  readyMs: number;
  /** CPU seconds (user + system, every thread) the process had used when it printed its ready line. */
  readyCpu: number;
}

/** CPU seconds (user + system) of a process, from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

function env(dataDir: string): NodeJS.ProcessEnv {
  return cleanEnv({
    MILLWRIGHT_EDGE_DATA_DIR: dataDir,
    MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
    MILLWRIGHT_EDGE_OPCUA_ENABLED: 'true',
    MILLWRIGHT_EDGE_OPCUA_PORT: '0',
    MILLWRIGHT_EDGE_OPCUA_HOST: '127.0.0.1',
    MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
    MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
  });
}

function run(v: Variant, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [v.main, ...args], { env: env(v.dataDir) });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')}: ${err}`))));
  });
}

function start(v: Variant): Promise<Running> {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [v.main, 'edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'],
    { env: env(v.dataDir), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${v.name}: not ready in 300 s`));
    }, 300_000);
    child.stdout!.on('data', (d) => {
      out += d;
      for (const line of out.split('\n')) {
        const ready = parseReadyLine(line);
        if (ready) {
          clearTimeout(timer);
          child.stdout!.removeAllListeners('data');
          child.stdout!.resume();
          resolve({ child, ready, readyMs: performance.now() - t0, readyCpu: cpuSeconds(child.pid!) });
          return;
        }
      }
    });
    child.on('exit', (code) => reject(new Error(`${v.name}: exited ${code} before ready`)));
  });
}

function stop(r: Running, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    r.child.removeAllListeners('exit');
    if (r.child.exitCode !== null || r.child.signalCode !== null) return resolve();
    r.child.once('exit', () => resolve());
    r.child.kill(signal);
  });
}

function api(v: Variant, r: Running): EdgeClient {
  return new EdgeClient({
    url: r.ready.services.edge!.url,
    credentials: { clientId: v.client!.client_id, clientSecret: v.client!.client_secret },
    insecure: true,
    // Applying 100,000 tags in one request takes minutes on a loaded machine.
    timeoutMs: 600_000,
  });
}

function template(): string {
  const devices = Math.ceil(TAGS / PER_DEVICE);
  return JSON.stringify({
    format: 'millwright.config-template',
    version: 1,
    sections: {
      devicehub: {
        devices: [
          ...Array.from({ length: devices }, (_, d) => ({
            Name: `gen-${d}`,
            DriverID: 'Generator',
            Tags: Array.from({ length: Math.min(PER_DEVICE, TAGS - d * PER_DEVICE) }, (_, i) => ({
              TagName: `t-${i}`,
              Name: 'N',
              ValueType: 'float64',
              IntervalMs: 1000,
              Properties: { address: String(i % 60000) },
            })),
          })),
          {
            Name: 'fast',
            DriverID: 'Generator',
            Tags: [
              {
                TagName: 't',
                Name: 'S',
                ValueType: 'float64',
                IntervalMs: 100,
                Properties: { address: '0' },
              },
            ],
          },
        ],
      },
    },
  });
}

/** A data directory with the tags, the OPC UA DeviceHub folder synced. */
async function prepare(v: Variant): Promise<void> {
  v.client = JSON.parse(await run(v, ['edge', 'api-client', 'create', '--name', 'bench']));
  const r = await start(v);
  const c = api(v, r);
  const t0 = Date.now();
  await new EdgeConfigClient(c).apply(template(), { mode: 'use' });
  await c.graphql('/opcua/v2', `mutation { SyncNodes { ID } }`);
  for (;;) {
    // The baseline builds the address space on the edge's event loop: a poll may time out.
    const s = await c.graphql('/opcua/v2', `{ GetCurrentSync { State Error } }`).catch(() => ({
      GetCurrentSync: { State: 'Running', Error: null },
    }));
    if (s.GetCurrentSync.State !== 'Running') {
      if (s.GetCurrentSync.State !== 'Succeeded') throw new Error(`sync failed: ${s.GetCurrentSync.Error}`);
      break;
    }
    await sleep(200);
  }
  c.close();
  console.log(`${v.name}: ${TAGS} tags applied and synced in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await stop(r, 'SIGTERM');
}

interface Round {
  readyMs: number;
  readyCpu: number;
  restartReadyCpu: number;
  restartReadyMs: number;
  /** Values of `fast/t` in each second after the ready line. */
  fastPerSecond: number[];
  allPerSecond: number[];
  maxGapMs: number;
  slowestApiMs: number;
}

async function watch(v: Variant, r: Running, seconds: number) {
  const t0 = performance.now();
  const nc: NatsConnection = await connect({ servers: r.ready.services.edge!.natsUrl! });
  const fast = new Array<number>(seconds).fill(0);
  const all = new Array<number>(seconds).fill(0);
  let last = 0;
  let maxGap = 0;
  const bucket = () => Math.floor((performance.now() - t0) / 1000);
  nc.subscribe('devicehub.raw.>', {
    callback: (_e, m) => {
      const b = bucket();
      if (b >= seconds) return;
      all[b]!++;
      if (m.subject === 'devicehub.raw.fast.t') {
        fast[b]!++;
        const now = performance.now();
        if (last) maxGap = Math.max(maxGap, now - last);
        last = now;
      }
    },
  });
  const url = r.ready.services.edge!.url;
  const c = api(v, r);
  let slowest = 0;
  while (performance.now() - t0 < seconds * 1000) {
    const a = performance.now();
    await c.rest('GET', '/devicehub/version').catch(() => undefined);
    slowest = Math.max(slowest, performance.now() - a);
    await sleep(50);
  }
  void url;
  c.close();
  await nc.close();
  return { fast, all, maxGap, slowest };
}

async function round(v: Variant): Promise<Round> {
  const first = await start(v);
  await sleep(5000);
  await stop(first, 'SIGKILL');
  const again = await start(v);
  const w = await watch(v, again, 10);
  await stop(again, 'SIGTERM');
  return {
    readyMs: first.readyMs,
    readyCpu: first.readyCpu,
    restartReadyCpu: again.readyCpu,
    restartReadyMs: again.readyMs,
    fastPerSecond: w.fast,
    allPerSecond: w.all,
    maxGapMs: w.maxGap,
    slowestApiMs: w.slowest,
  };
}

const variants: Variant[] = [];
const dirs: string[] = [];
const mk = () => {
  const d = mkdtempSync(join(tmpdir(), 'mw-bench-starts-'));
  dirs.push(d);
  return d;
};
if (BASELINE && ONLY !== 'current')
  variants.push({ name: 'baseline', main: join(BASELINE, 'dist/cli/main.js'), dataDir: mk() });
if (ONLY !== 'baseline')
  variants.push({ name: 'current', main: join(root, 'dist/cli/main.js'), dataDir: mk() });
const results = new Map<string, Round[]>(variants.map((v) => [v.name, []]));
const loads: number[] = [];
try {
  for (const v of variants) await prepare(v);
  for (let i = 0; i < RUNS; i++) {
    for (const v of variants) {
      loads.push(loadavg()[0]!);
      const r = await round(v);
      results.get(v.name)!.push(r);
      console.log(v.name, i + 1, JSON.stringify(r));
    }
  }
} finally {
  if (process.argv.includes('--keep'))
    console.log(`kept: ${variants.map((v) => `${v.name} ${v.dataDir}`).join(', ')}`);
  else for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
console.log(
  `\nMachine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node.js ${process.version}; ${TAGS.toLocaleString('en-US')} Generator tags at 1 s + one at 100 ms, OPC UA server on and synced; load average (1 min) during the rounds ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}\n`,
);
console.log(
  '| build | run | start → ready s (CPU s) | after kill -9: start → ready s (CPU s) | fast tag values/s, s 1…10 after ready | all values/s (mean of 10 s) | longest gap fast tag ms | slowest GET /devicehub/version ms |',
);
console.log('| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |');
for (const [name, rounds] of results) {
  rounds.forEach((r, i) =>
    console.log(
      `| ${name} | ${i + 1} | ${(r.readyMs / 1000).toFixed(2)} (${r.readyCpu.toFixed(2)}) | ${(r.restartReadyMs / 1000).toFixed(2)} (${r.restartReadyCpu.toFixed(2)}) | ${r.fastPerSecond.join(' ')} | ${Math.round(sum(r.allPerSecond) / r.allPerSecond.length).toLocaleString('en-US')} | ${Math.round(r.maxGapMs)} | ${Math.round(r.slowestApiMs)} |`,
    ),
  );
}
process.exit(0);
