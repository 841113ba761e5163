/**
 * bench/twins: 1,000 twin instances of 20 dynamic attributes each, inputs at 10 Hz per tag
 * (200,000 inputs per second) from the in-process DataHub bus, in one run:
 *   (a) ceiling: a bare bus subscriber per tag that stores the value and, once per turn of the
 *       event loop per instance, assembles the instance's JSON object and publishes it (what the
 *       runtime does, without hierarchy, parameters, stale marks or transformations);
 *   (b) the twins runtime (TwinsService + TwinRuntime, the code `/digital-twins` runs), no
 *       transformation;
 *   (c) the same with a JSONata transformation on one attribute in twenty (10,000 per second).
 * Reported: payloads per second, inputs per second actually published, p50/p99 from the first
 * input of an instance's round to the payload that carries it, and CPU of the process (the edge's
 * code and the load generator share it; the generator's share is the same in every case).
 * Targets: (b) at least 50% of (a)'s payloads per second, p99 under 50 ms.
 *
 *   npm run bench -- twins [--instances 1000] [--attributes 20] [--hz 10] [--seconds 10]
 *                          [--rounds 3] [--saturated-seconds 4]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Database } from '../src/kernel/db/index.js';
import { DataHub } from '../src/edge/datahub/index.js';
import { twinsMigrations, TwinsService, TwinRuntime } from '../src/edge/twins/index.js';
import { TwinsRepository } from '../src/edge/twins/repository.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const INSTANCES = arg('instances', 1000);
const ATTRIBUTES = arg('attributes', 20);
const HZ = arg('hz', 10);
const SECONDS = arg('seconds', 10);
const ROUNDS = arg('rounds', 3);
/** Seconds of each saturated round. */
const SAT_SECONDS = arg('saturated-seconds', 4);
const WARMUP_S = 2;
const TICK_MS = 5;

type Saturated = Awaited<ReturnType<typeof saturate>>;

interface Result {
  payloadsPerSec: number;
  inputsPerSec: number;
  p50ms: number;
  p99ms: number;
  cpuPct: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const subject = (i: number, k: number) => `bench.d${i}.t${k}`;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Drives the inputs: every instance once per 1/HZ s round, its rounds spread evenly over the
 * period, its ATTRIBUTES tags published back to back; falls behind (and says so in the input
 * rate) when the process cannot keep up. `firstInput[i]` is when instance i's round began.
 */
async function drive(hub: DataHub, topicOf: (i: number) => string): Promise<Result> {
  const firstInput = new Float64Array(INSTANCES);
  const pending = new Uint8Array(INSTANCES);
  const latencies: number[] = [];
  let payloads = 0;
  let inputs = 0;
  let measuring = false;
  const index = new Map<string, number>();
  for (let i = 0; i < INSTANCES; i++) index.set(topicOf(i), i);
  const sub = hub.subscribe('twins.>', {
    callback: (msg) => {
      const i = index.get(msg.subject);
      if (i === undefined) return;
      if (!measuring) return;
      payloads++;
      if (pending[i]) {
        pending[i] = 0;
        latencies.push(performance.now() - firstInput[i]!);
      }
    },
  });
  const periodMs = 1000 / HZ;
  const start = performance.now();
  let next = 0; // instances published so far, over all rounds
  let cpu0 = process.cpuUsage();
  let t0 = start;
  let measureStart = 0;
  const total = WARMUP_S + SECONDS;
  for (;;) {
    const now = performance.now();
    const elapsed = now - start;
    if (!measuring && elapsed >= WARMUP_S * 1000) {
      measuring = true;
      payloads = 0;
      inputs = 0;
      latencies.length = 0;
      pending.fill(0);
      cpu0 = process.cpuUsage();
      t0 = now;
      measureStart = next;
    }
    if (elapsed >= total * 1000) break;
    const due = Math.floor((elapsed / periodMs) * INSTANCES);
    while (next < due) {
      const i = next % INSTANCES;
      const ts = Date.now();
      firstInput[i] = performance.now();
      pending[i] = 1;
      for (let k = 0; k < ATTRIBUTES; k++)
        hub.publish(subject(i, k), { value: Math.random() * 100, timestamp: ts });
      if (measuring) inputs += ATTRIBUTES;
      next++;
      // Let the payloads of this instance out now and then, as a real stream of inputs would.
      if (next % 50 === 0) await Promise.resolve();
    }
    await sleep(TICK_MS);
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  sub.unsubscribe();
  latencies.sort((a, b) => a - b);
  void measureStart;
  return {
    payloadsPerSec: payloads / wall,
    inputsPerSec: inputs / wall,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    cpuPct: ((cpu.user + cpu.system) / 1000 / (wall * 1000)) * 100,
  };
}

/**
 * Saturation: every instance's round published back to back, as fast as the process goes, for
 * SECONDS; answers payloads and inputs per second.
 */
async function saturate(
  hub: DataHub,
  topicOf: (i: number) => string,
): Promise<{ payloadsPerSec: number; inputsPerSec: number; cpuPct: number; payloadsPerCpuSecond: number }> {
  const names = new Set<string>();
  for (let i = 0; i < INSTANCES; i++) names.add(topicOf(i));
  let payloads = 0;
  const sub = hub.subscribe('twins.>', { callback: (msg) => void (names.has(msg.subject) && payloads++) });
  let inputs = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  let n = 0;
  while (performance.now() - t0 < SAT_SECONDS * 1000) {
    const i = n++ % INSTANCES;
    const ts = Date.now();
    for (let k = 0; k < ATTRIBUTES; k++)
      hub.publish(subject(i, k), { value: Math.random() * 100, timestamp: ts });
    inputs += ATTRIBUTES;
    if (n % 50 === 0) await Promise.resolve();
    if (n % 1000 === 0) await new Promise<void>((r) => setImmediate(r));
  }
  await sleep(50);
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  sub.unsubscribe();
  const cpuS = (cpu.user + cpu.system) / 1e6;
  return {
    payloadsPerSec: payloads / wall,
    inputsPerSec: inputs / wall,
    cpuPct: (cpuS / wall) * 100,
    payloadsPerCpuSecond: payloads / cpuS,
  };
}

interface World {
  hub: DataHub;
  topics: string[];
  close(): Promise<void>;
}

/** (a) The ceiling: bus subscribers doing only the JSON assembly. */
async function ceiling(): Promise<World> {
  const hub = new DataHub();
  const topics: string[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const topic = `twins.Bench.i${i}`;
    topics.push(topic);
    const values: unknown[] = new Array(ATTRIBUTES).fill(null);
    const times: number[] = new Array(ATTRIBUTES).fill(0);
    const names = Array.from({ length: ATTRIBUTES }, (_, k) => `a${k}`);
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      const data: Record<string, unknown> = {};
      for (let k = 0; k < ATTRIBUTES; k++) data[names[k]!] = values[k];
      hub.publish(topic, { instanceId: String(i), timestamp: Date.now(), data });
    };
    for (let k = 0; k < ATTRIBUTES; k++) {
      hub.subscribe(subject(i, k), {
        callback: (msg) => {
          values[k] = (msg.data as { value: unknown }).value;
          times[k] = Date.now();
          if (!scheduled) {
            scheduled = true;
            queueMicrotask(flush);
          }
        },
      });
    }
  }
  return { hub, topics, close: async () => hub.close() };
}

/** (b), (c) The twins runtime. */
async function runtime(transformEvery: number): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'mw-bench-twins-'));
  const db = Database.open({ sqlitePath: join(dir, 'edge.db') });
  await db.migrate([twinsMigrations]);
  const hub = new DataHub();
  const service = await TwinsService.load(new TwinsRepository(db), {
    maxAttributesPerOwner: 1000,
    maxInstances: INSTANCES + 10,
  });
  const model = await service.createModel({ Name: 'Bench', Assets: 'bench', StaleAfterMs: 5000 });
  const tr = await service.createTransformation({ Name: 'double', Expression: 'value * 2' });
  for (let k = 0; k < ATTRIBUTES; k++)
    await service.createDynamic({
      ModelID: model.id,
      Name: `a${k}`,
      Topic: `bench.{{Dev}}.t${k}`,
      TransformationID: transformEvery > 0 && k % transformEvery === 0 ? tr.id : null,
    });
  const topics: string[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    const inst = await service.createInstance({ ModelID: model.id, Name: `i${i}` });
    await service.createKeyValue('parameter', {
      ModelID: model.id,
      InstanceID: inst.id,
      Key: 'Dev',
      Value: `d${i}`,
    });
    topics.push(inst.topic);
  }
  const rt = new TwinRuntime({ hub, service });
  rt.rebuild();
  return {
    hub,
    topics,
    async close() {
      rt.close();
      hub.close();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const fmt = (n: number, d = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

async function main(): Promise<void> {
  console.log(
    `bench/twins: ${INSTANCES} instances x ${ATTRIBUTES} attributes, ${HZ} Hz per tag (${fmt(INSTANCES * ATTRIBUTES * HZ)} inputs/s), ${SECONDS} s per case after ${WARMUP_S} s warm-up; ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(1)}`,
  );
  const worlds = [await ceiling(), await runtime(0), await runtime(20)];
  // Paced: one case after the other.
  const paced: Result[] = [];
  for (const w of worlds) paced.push(await drive(w.hub, (i) => w.topics[i]!));
  // Saturated: rounds alternate the cases, so that the drift of a shared machine hits all; median.
  const sats: Saturated[][] = [[], [], []];
  for (let r = 0; r < ROUNDS; r++)
    for (let k = 0; k < worlds.length; k++)
      sats[k]!.push(await saturate(worlds[k]!.hub, (i) => worlds[k]!.topics[i]!));
  for (const w of worlds) await w.close();
  const median = (list: Saturated[]): Saturated => {
    const sorted = [...list].sort((x, y) => x.payloadsPerSec - y.payloadsPerSec);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  const [a, b, c] = paced as [Result, Result, Result];
  const [aSat, bSat, cSat] = sats.map(median) as [Saturated, Saturated, Saturated];
  const names = [
    '(a) bare bus subscriber + JSON assembly (ceiling)',
    '(b) twins runtime',
    '(c) twins runtime, JSONata on 1 attribute in 20',
  ];
  const rows: [string, Result][] = [
    [names[0]!, a],
    [names[1]!, b],
    [names[2]!, c],
  ];
  const head = [
    'case',
    'inputs/s',
    'payloads/s',
    'share of ceiling',
    'p50 ms',
    'p99 ms',
    'CPU (1 core = 100%)',
  ];
  const lines = rows.map(([name, r]) => [
    name,
    fmt(r.inputsPerSec),
    fmt(r.payloadsPerSec),
    `${fmt((r.payloadsPerSec / a.payloadsPerSec) * 100, 1)}%`,
    fmt(r.p50ms, 1),
    fmt(r.p99ms, 1),
    `${fmt(r.cpuPct)}%`,
  ]);
  const widths = head.map((h, col) => Math.max(h.length, ...lines.map((l) => l[col]!.length)));
  const row = (cells: string[]) =>
    `| ${cells.map((c, col) => (col === 0 ? c.padEnd(widths[col]!) : c.padStart(widths[col]!))).join(' | ')} |`;
  console.log(row(head));
  console.log(
    `| ${widths.map((w, col) => (col === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`,
  );
  for (const l of lines) console.log(row(l));
  console.log('');
  console.log(
    `saturated (inputs as fast as the process takes them; median of ${ROUNDS} alternating rounds of ${SAT_SECONDS} s):`,
  );
  const satRows: [string, Saturated][] = [
    [names[0]!, aSat],
    [names[1]!, bSat],
    [names[2]!, cSat],
  ];
  const sHead = [
    'case',
    'inputs/s',
    'payloads/s',
    'share of ceiling',
    'CPU (1 core = 100%)',
    'payloads per CPU-second',
    'share of ceiling per CPU-second',
  ];
  const sLines = satRows.map(([name, r]) => [
    name,
    fmt(r.inputsPerSec),
    fmt(r.payloadsPerSec),
    `${fmt((r.payloadsPerSec / aSat.payloadsPerSec) * 100, 1)}%`,
    `${fmt(r.cpuPct)}%`,
    fmt(r.payloadsPerCpuSecond),
    `${fmt((r.payloadsPerCpuSecond / aSat.payloadsPerCpuSecond) * 100, 1)}%`,
  ]);
  const sWidths = sHead.map((h, col) => Math.max(h.length, ...sLines.map((l) => l[col]!.length)));
  const sRow = (cells: string[]) =>
    `| ${cells.map((c, col) => (col === 0 ? c.padEnd(sWidths[col]!) : c.padStart(sWidths[col]!))).join(' | ')} |`;
  console.log(sRow(sHead));
  console.log(
    `| ${sWidths.map((w, col) => (col === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`,
  );
  for (const l of sLines) console.log(sRow(l));
  const share = bSat.payloadsPerSec / aSat.payloadsPerSec;
  const perCpu = bSat.payloadsPerCpuSecond / aSat.payloadsPerCpuSecond;
  console.log(
    `target: (b) >= 50% of (a) payloads/s, saturated: ${share >= 0.5 ? 'met' : 'NOT met'} (${fmt(share * 100, 1)}%; per CPU-second ${fmt(perCpu * 100, 1)}%); p99 < 50 ms: ${b.p99ms < 50 ? 'met' : 'NOT met'} (${fmt(b.p99ms, 1)} ms); load average now ${loadavg()[0]!.toFixed(1)}`,
  );
}

await main();
