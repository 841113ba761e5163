/**
 * bench/history: the tag history's ingest, queries and retention.
 *
 * Ingest: the acquisition bench's tags (10 devices × 10,000 tags, blocks of 125 sharing a time,
 * 1 in 97 registers changing every 250 ms) published on an in-process DataHub at 100,000 values/s
 * for --seconds (60), recorded by the history service (policy `all`, DuckDB worker store) as the
 * edge runs it; beside it the floor: the same values appended to a plain file (one JSON line per
 * value, one write per 250 ms). Reported: CPU of the process over wall time (the publishing loop
 * included in both), bytes on disk per value, values lost.
 * Queries: one tag's 24 h at 1 value/s bucketed to 1,000 points (p50/p99 of 50), and 100 tags'
 * last hour bucketed to 60 points (whole minutes) and to 1,000 points (5 s). Retention: a store
 * capped at --cap MiB (16) written with ten times that (random values), its largest size on disk.
 *
 *   npm run bench -- history [--seconds 60] [--cap 16] [--unaligned]
 */
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataHub } from '../src/edge/datahub/index.js';
import { DuckWorkerStore, HistoryService, type HistoryStore } from '../src/edge/history/index.js';
import { DuckStore } from '../src/edge/history/duckdb/repository.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const SECONDS = arg('seconds', 60);
const CAP_MB = arg('cap', 16);
const ALIGNED = !process.argv.includes('--unaligned');
const DEVICES = 10;
const PER = 10_000;
const dir = mkdtempSync(join(tmpdir(), 'mw-bench-history-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const size = (p: string) => {
  try {
    return statSync(p).size;
  } catch {
    return 0;
  }
};
/** Every file of a store's directory. */
const dirSize = (d: string) => {
  try {
    return readdirSync(d).reduce((a, f) => a + size(join(d, f)), 0);
  } catch {
    return 0;
  }
};

function service(hub: DataHub, store: HistoryStore, maxBytes = 0) {
  return new HistoryService({
    hub,
    store,
    policies: [],
    retention: { maxAgeMs: 0, maxBytes },
    flushMs: 250,
    maintainMs: 5000,
    batchSize: 65_536,
    maxTags: 1_000_000,
    maxPending: 4_000_000,
  });
}

/** Publishes the acquisition bench's values for `seconds` (every 250 ms a quarter of the tags). */
async function publishLoad(hub: DataHub, seconds: number): Promise<number> {
  const regs = new Float64Array(DEVICES * PER).map((_, i) => ((i % PER) * 7 + Math.floor(i / PER)) & 0xffff);
  const subjects = Array.from(
    { length: DEVICES * PER },
    (_, i) => `devicehub.raw.D${Math.floor(i / PER)}.T${i % PER}`,
  );
  let n = 0;
  const start = Date.now();
  for (let q = 0; q < seconds * 4; q++) {
    const due = start + q * 250;
    while (Date.now() < due) await sleep(Math.min(20, due - Date.now()));
    for (let i = 0; i < regs.length; i += 97) regs[i] = (regs[i]! + q) & 0xffff;
    const now = Date.now();
    const quarter = q % 4;
    for (let i = quarter * (regs.length / 4); i < (quarter + 1) * (regs.length / 4); i++) {
      hub.publish(subjects[i]!, {
        success: true,
        timestamp: now + (Math.floor(i / 125) % 3),
        value: regs[i],
      });
      n++;
    }
  }
  return n;
}

async function ingest() {
  // History.
  const hub = new DataHub();
  const path = join(dir, 'ingest');
  const h = service(hub, new DuckWorkerStore({ dir: path, memoryMb: 256 }));
  await h.start();
  // The run starts on a minute (unless --unaligned): its 60 s are one whole minute of a long run,
  // without the partial minutes at a run's two ends (see docs/performance.md for both).
  if (ALIGNED) await sleep(60_000 - (Date.now() % 60_000) + 20);
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, dirSize(path))), 1000);
  let c0 = cpuMs();
  let t0 = performance.now();
  const published = await publishLoad(hub, SECONDS);
  clearInterval(sampler);
  await h.flush();
  await h.maintain();
  const histCpu = (cpuMs() - c0) / (performance.now() - t0);
  // The minutes still in progress are moved as if two minutes had passed (the edge does it then).
  const m0 = cpuMs();
  await h.maintain(Date.now() + 2 * 60_000);
  const moveCpuS = (cpuMs() - m0) / 1000;
  const st = await h.status();
  await h.close();
  const bytes = dirSize(path);
  const files = readdirSync(path)
    .map((f) => `${f} ${(size(join(path, f)) / 1048576).toFixed(2)}`)
    .join(', ');
  // Floor: the same values as JSON lines in a plain file.
  const hub2 = new DataHub();
  const file = join(dir, 'floor.jsonl');
  let lines: string[] = [];
  hub2.subscribe('devicehub.raw.>', {
    callback: (m) => {
      const p = m.data as { timestamp: number; value: number };
      lines.push(`{"tag":"${m.subject.slice(14)}","ts":${p.timestamp},"v":${p.value}}\n`);
    },
  });
  const timer = setInterval(() => {
    appendFileSync(file, lines.join(''));
    lines = [];
  }, 250);
  c0 = cpuMs();
  t0 = performance.now();
  const published2 = await publishLoad(hub2, SECONDS);
  clearInterval(timer);
  appendFileSync(file, lines.join(''));
  const floorCpu = (cpuMs() - c0) / (performance.now() - t0);
  return {
    published,
    st,
    bytes,
    files,
    peak,
    histCpu,
    moveCpuS,
    published2,
    floorBytes: size(file),
    floorCpu,
  };
}

async function queries() {
  const qdir = join(dir, 'query');
  const store = new DuckWorkerStore({ dir: qdir, memoryMb: 256 });
  const hub = new DataHub();
  const h = service(hub, store);
  await h.start();
  const now = Date.now();
  const day = 86_400_000;
  // One tag, 24 h at 1/s; 100 tags, the last hour at 1/s (published with their own timestamps).
  for (let s = 0; s < 86_400; s++)
    hub.publish('devicehub.raw.Q.day', { timestamp: now - day + s * 1000, value: Math.sin(s / 600) });
  for (let s = 0; s < 3600; s++)
    for (let k = 0; k < 100; k++)
      hub.publish(`devicehub.raw.Q.t${k}`, { timestamp: now - 3_600_000 + s * 1000, value: (s + k) % 100 });
  await h.flush();
  await h.maintain();
  const time = async (fn: () => Promise<unknown>, runs: number) => {
    const t: number[] = [];
    for (let i = 0; i < runs; i++) {
      const a = performance.now();
      await fn();
      t.push(performance.now() - a);
    }
    t.sort((x, y) => x - y);
    return { p50: t[Math.floor(runs / 2)]!, p99: t[Math.min(runs - 1, Math.floor(runs * 0.99))]! };
  };
  const one = await time(() => h.aggregate({ tags: ['Q.day'], from: now - day, to: now, points: 1000 }), 50);
  const tags = Array.from({ length: 100 }, (_, k) => `Q.t${k}`);
  const hundred = await time(() => h.aggregate({ tags, from: now - 3_600_000, to: now, points: 1000 }), 20);
  const hundredMin = await time(() => h.aggregate({ tags, from: now - 3_600_000, to: now, points: 60 }), 20);
  await h.close();
  // The same queries on the store in this thread (no worker round trip, no service).
  const direct = new DuckStore({ dir: qdir, memoryMb: 256 });
  const ids = await direct.open();
  const id = (n: string) => ids.get(n)!;
  const q1 = { tags: [id('Q.day')], from: now - day, to: now, bucketMs: 120_000, end: now };
  const q100 = { tags: tags.map(id), from: now - 3_600_000, to: now, end: now };
  const oneD = await time(() => direct.aggregateColumns(q1), 50);
  const hundredD = await time(() => direct.aggregateColumns({ ...q100, bucketMs: 5000 }), 20);
  const hundredMinD = await time(() => direct.aggregateColumns({ ...q100, bucketMs: 60_000 }), 20);
  await direct.close();
  return { one, hundred, hundredMin, oneD, hundredD, hundredMinD };
}

async function retention() {
  const path = join(dir, 'capped');
  const cap = CAP_MB * 1024 * 1024;
  const hub = new DataHub();
  const h = service(hub, new DuckWorkerStore({ dir: path, memoryMb: 128 }), cap);
  await h.start();
  await h.maintain();
  let max = 0;
  let batchMax = 0;
  let written = 0;
  const t = Date.now() - 86_400_000;
  let s = 0;
  // Random values at 12 bytes or so each: ten times the cap in values.
  while (written < (10 * cap) / 12) {
    for (let k = 0; k < 50_000; k++, s++)
      hub.publish(`devicehub.raw.R.t${k % 500}`, { timestamp: t + s * 10, value: Math.random() });
    written += 50_000;
    const before = dirSize(path);
    await h.flush();
    const after = dirSize(path);
    batchMax = Math.max(batchMax, after - before);
    max = Math.max(max, after);
  }
  await h.maintain();
  max = Math.max(max, dirSize(path));
  const st = await h.status();
  await h.close();
  return { cap, max, batchMax, written, kept: st.values, deleted: st.deletedBySize };
}

try {
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const i = await ingest();
  const q = await queries();
  const r = await retention();
  const mb = (b: number) => (b / 1048576).toFixed(1);
  console.log(
    `\nbench/history (${SECONDS} s${ALIGNED ? ' from a whole minute' : ', unaligned'}, load average at start ${load}, after ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')})\n`,
  );
  console.log('| ingest, 100,000 values/s | history (DuckDB) | floor: plain file |');
  console.log('|---|---|---|');
  console.log(`| values published | ${i.published} | ${i.published2} |`);
  console.log(
    `| CPU of the process (cores, publishing included) | ${i.histCpu.toFixed(2)} | ${i.floorCpu.toFixed(2)} |`,
  );
  console.log(`| bytes on disk | ${mb(i.bytes)} MiB | ${mb(i.floorBytes)} MiB |`);
  console.log(`| largest size during the run (hot file included) | ${mb(i.peak)} MiB | |`);
  console.log(`| files at the end (MiB) | ${i.files} | |`);
  console.log(
    `| bytes per value | ${(i.bytes / i.published).toFixed(2)} | ${(i.floorBytes / i.published2).toFixed(2)} |`,
  );
  console.log(`| CPU of the last move (worker, s) | ${i.moveCpuS.toFixed(2)} | |`);
  console.log(`| values lost | ${i.published - i.st.values} (dropped ${i.st.dropped}) | 0 |`);
  const ms = (t: { p50: number; p99: number }) => `${t.p50.toFixed(1)} ms | ${t.p99.toFixed(1)} ms`;
  console.log('\n| query | p50 | p99 | target |\n|---|---|---|---|');
  console.log(
    `| one tag, 24 h at 1/s, 1,000 buckets | ${q.one.p50.toFixed(1)} ms | ${q.one.p99.toFixed(1)} ms | p99 < 50 ms |`,
  );
  console.log(
    `| 100 tags, last hour, 60 buckets (1 min) | ${q.hundredMin.p50.toFixed(1)} ms | ${q.hundredMin.p99.toFixed(1)} ms | < 200 ms |`,
  );
  console.log(
    `| 100 tags, last hour, 1,000 buckets | ${q.hundred.p50.toFixed(1)} ms | ${q.hundred.p99.toFixed(1)} ms | < 200 ms |`,
  );
  console.log(`| store alone (same thread): one tag, 24 h | ${ms(q.oneD)} | |`);
  console.log(`| store alone: 100 tags, hour, 60 buckets | ${ms(q.hundredMinD)} | |`);
  console.log(`| store alone: 100 tags, hour, 1,000 buckets | ${ms(q.hundredD)} | |`);
  console.log('\n| retention | value |\n|---|---|');
  console.log(
    `| cap | ${mb(r.cap)} MiB |\n| values written | ${r.written} |\n| largest size on disk | ${mb(r.max)} MiB |`,
  );
  console.log(`| largest growth of one batch (50,000 values) | ${mb(r.batchMax)} MiB |`);
  console.log(`| values kept at the end / deleted by size | ${r.kept} / ${r.deleted} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
