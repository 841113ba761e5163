/**
 * bench/analytics-model: the `onnx` processor kind (issue 31) beside the same model run in a bare
 * loop, in one process. The model is a dense layer (y = x·W + b, x: [1, 16], y: [1, 4]) made by
 * the bench (test/helpers/onnx-model.ts), on a window of 16 values of one tag:
 *   (a) the ceiling: onnxruntime-node's InferenceSession.run in a plain loop, one run per value
 *       on the sliding window, each awaited;
 *   (b) an `onnx` processor of the analytics runtime on the in-process DataHub bus: each value
 *       published on the tag's subject, its output awaited on `analytics.publish.<id>` before the
 *       next value (closed loop, one value in flight, as in (a)).
 * Values/s is the best of --rounds rounds of --values values; latency per value (publish to
 * output received, or run start to end in (a)) over all rounds, p50 and p99. The bench checks that
 * (a) and (b) computed the same outputs for the same values.
 *
 *   npm run bench -- analytics-model [--values 20000] [--rounds 3]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { DataHub } from '../src/edge/datahub/index.js';
import { benchRuntime } from './analytics-cases.js';
import { checkParameters } from '../src/edge/analytics/catalogue.js';
import { loadOrt } from '../src/edge/analytics/onnx-processor.js';
import { denseModel } from '../test/helpers/onnx-model.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const VALUES = arg('values', 20_000);
const ROUNDS = arg('rounds', 3);
const WINDOW = 16;
const value = (k: number) => Math.sin(k / 7) * 100 + (k % 13);

interface Row {
  name: string;
  throughput: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
  last: number[];
}

const pct = (sorted: Float64Array, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function rounds(name: string, one: (k: number) => Promise<number[]>): Promise<Row> {
  for (let k = 0; k < Math.min(2000, VALUES); k++) await one(k); // warm-up
  const lat = new Float64Array(VALUES * ROUNDS);
  let n = 0;
  let best = 0;
  let last: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let k = 0; k < VALUES; k++) {
      const s = performance.now();
      last = await one(k);
      lat[n++] = performance.now() - s;
    }
    best = Math.max(best, VALUES / ((performance.now() - t0) / 1000));
  }
  const sorted = lat.sort();
  const mean = sorted.reduce((x, y) => x + y, 0) / sorted.length;
  return {
    name,
    throughput: best,
    p50: pct(sorted, 50),
    p99: pct(sorted, 99),
    mean,
    max: sorted[sorted.length - 1]!,
    last,
  };
}

const model = denseModel(WINDOW, 4, 5);
const dir = mkdtempSync(join(tmpdir(), 'mw-bench-model-'));
const path = join(dir, 'dense.onnx');
writeFileSync(path, model.bytes);

async function bare(): Promise<Row> {
  const ort = await loadOrt();
  const session = await ort.InferenceSession.create(path, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const ring = new Float32Array(WINDOW);
  const row = await rounds('(a) bare loop: InferenceSession.run per value', async (k) => {
    ring.copyWithin(0, 1);
    ring[WINDOW - 1] = value(k);
    const out = await session.run({ x: new ort.Tensor('float32', ring.slice(), [1, WINDOW]) }, ['y']);
    return Array.from(out.y!.data as Float32Array);
  });
  await session.release();
  return row;
}

async function processor(): Promise<Row> {
  const hub = new DataHub();
  const rt = benchRuntime(hub, () => path);
  await rt.apply({
    id: 'm',
    workspaceId: 'bench',
    name: 'dense',
    kind: 'onnx',
    parameters: checkParameters('onnx', {
      inputs: [{ subject: 'bench.tag' }],
      model: 'dense.onnx',
      window: WINDOW,
    }),
    enabled: true,
  });
  if (rt.status('m')?.state !== 'Running') throw new Error(`processor: ${rt.status('m')?.error}`);
  let waiting: ((v: number[]) => void) | undefined;
  hub.subscribe('analytics.publish.m', {
    callback: (msg) => waiting?.((msg.data as { value: number[] }).value),
  });
  // The window fills first: outputs come from the 16th value on.
  for (let k = 0; k < WINDOW - 1; k++) hub.publish('bench.tag', { value: value(k), timestamp: k });
  let ts = WINDOW;
  const row = await rounds('(b) `onnx` processor on the DataHub bus', (k) => {
    const p = new Promise<number[]>((r) => (waiting = r));
    hub.publish('bench.tag', { value: value(k), timestamp: ts++ });
    return p;
  });
  await rt.close();
  hub.close();
  return row;
}

const load = loadavg()[0]!.toFixed(1);
const a = await bare();
const b = await processor();
rmSync(dir, { recursive: true, force: true });
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(
  `\nbench/analytics-model: dense ${WINDOW}→4 model, window of ${WINDOW} values, ${ROUNDS} rounds of ${fmt(VALUES)} values, one value in flight; ${cpus().length} CPUs (${cpus()[0]?.model}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, load average ${load} at start\n`,
);
console.log(
  '| case | values/s (best round) | share of bare loop | p50 latency | p99 latency | mean latency | max latency |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of [a, b])
  console.log(
    `| ${r.name} | ${fmt(r.throughput)} | ${((r.throughput / a.throughput) * 100).toFixed(1)}% | ${r.p50.toFixed(3)} ms | ${r.p99.toFixed(3)} ms | ${r.mean.toFixed(3)} ms | ${r.max.toFixed(1)} ms |`,
  );
// Both saw the same value sequence: the window of their last value is the same, so its output.
const worst = Math.max(...a.last.map((x, j) => Math.abs(x - b.last[j]!)));
const want = model.apply(Array.from({ length: WINDOW }, (_, j) => value(VALUES - WINDOW + j)));
const vsModel = Math.max(...a.last.map((x, j) => Math.abs(x - want[j]!) / Math.max(1, Math.abs(want[j]!))));
console.log(
  `\nsame outputs: processor vs bare loop, largest difference ${worst}; bare loop vs x·W+b in JavaScript ${vsModel.toExponential(1)}`,
);
process.exit(worst === 0 && vsModel < 1e-4 ? 0 : 1);
