/**
 * bench/analytics-cpu: CPU time per value of bench/analytics's (a) and (b) in one process,
 * alternating, for a loaded machine (issue 34). Wall-clock throughput says little while other
 * work shares the CPUs; this bench measures the process's user + system CPU time of each round
 * (`process.cpuUsage()`) and keeps the least per case over the rounds.
 *
 *   (a) a bare bus subscriber per tag computing a 10 s sliding mean in plain code and publishing
 *       it as (b) does (the ceiling);
 *   (b) 1,000 built-in `window` processors (mean, sliding, 10 s), each output published on
 *       `analytics.publish.<id>` and read by one subscriber (as in bench/analytics).
 *
 * Both run on their own bus with the same value sequence, after a warm-up that fills the windows;
 * then --rounds rounds of --values values each, (a) and (b) alternating.
 *
 *   npm run bench -- analytics-cpu [--processors 1000] [--values 100000] [--rounds 20]
 *                                  [--warmup 300000] [--stable-subjects] [--only a|b] [--verbose] [--short]
 *                                  [--no-reader] [--mean-only]
 *
 * `--stable-subjects`: the publisher uses one subject string per tag, made once (as the
 * acquisition engine does), instead of a fresh string per value (as bench/analytics does).
 * `--no-reader`: nobody reads the outputs of (a) and (b) (the means are then not compared).
 * `--mean-only`: (a) publishes nothing (a reference: the mean alone, not the job (b) does).
 * `--only a|b`: one case (the other is set up, not fed); `--verbose`: every round's figure on stderr.
 * `--short`: 10 rounds of 50,000 values after 150,000 of warm-up.
 * Besides CPU time: the young-generation bytes allocated per value (median of batches of 500
 * values without a scavenge), which the load does not change.
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { DataHub } from '../src/edge/datahub/index.js';
import type { AnalyticsRuntime } from '../src/edge/analytics/runtime.js';
import { bareSubscribers, meanProcessors, subject } from './analytics-cases.js';
import { numArg as arg, reportFigures } from './support.js';

const N = arg('processors', 1000);
const VALUES = arg('values', 100_000, 50_000);
const ROUNDS = arg('rounds', 20, 10);
const WARMUP = arg('warmup', 300_000, 150_000);
const STABLE = process.argv.includes('--stable-subjects');
/** `--no-reader`: nobody subscribes to (b)'s outputs (its means are then not compared). */
const NO_READER = process.argv.includes('--no-reader');
const VERBOSE = process.argv.includes('--verbose');
/** `--mean-only`: (a) computes the mean and publishes nothing (the ceiling before 2026-11-28). */
const MEAN_ONLY = process.argv.includes('--mean-only');
const stable = Array.from({ length: N }, (_, i) => subject(i));

/** One case: its bus, and its own position in the (shared) value sequence. */
interface Case {
  hub: DataHub;
  means: Float64Array;
  seq: number;
  ts: number;
  best: number;
  outputs: () => number;
}

const start = Date.now();
function publish(c: Case, n: number): void {
  const hub = c.hub;
  for (let k = 0; k < n; k++) {
    const seq = c.seq++;
    const i = seq % N;
    const v = Math.sin(seq / 7) * 100 + (seq % 13);
    if (seq % 100 === 0) c.ts++;
    hub.publish(STABLE ? stable[i]! : subject(i), {
      success: true,
      datatype: 'float64',
      timestamp: c.ts,
      registerId: `r${i}`,
      value: v,
      deviceID: 'd',
      deviceName: 'bench',
      tagName: `t${i}`,
      description: '',
      metadata: {},
    });
  }
}

function bare(): Case {
  const hub = new DataHub();
  return { hub, ...bareSubscribers(hub, N, !MEAN_ONLY, !NO_READER), seq: 0, ts: start, best: Infinity };
}

async function builtIn(): Promise<Case & { rt: AnalyticsRuntime }> {
  const hub = new DataHub();
  return { hub, ...(await meanProcessors(hub, N, 'window', !NO_READER)), seq: 0, ts: start, best: Infinity };
}

function round(c: Case): void {
  const cpu0 = process.cpuUsage();
  publish(c, VALUES);
  const cpu = process.cpuUsage(cpu0);
  const ns = ((cpu.user + cpu.system) * 1000) / VALUES;
  if (VERBOSE) process.stderr.write(`${c === a ? 'a' : 'b'} ${ns.toFixed(0)} `);
  c.best = Math.min(c.best, ns);
}

// `--only a|b` (for instruction counts under callgrind: one case per process).
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const a = bare();
const b = await builtIn();
if (ONLY !== 'b') publish(a, WARMUP);
if (ONLY !== 'a') publish(b, WARMUP);
for (let r = 0; r < ROUNDS; r++) {
  if (ONLY !== 'b') round(a);
  if (ONLY !== 'a') round(b);
}
// The means, before the allocation batches below (whose count differs between the cases).
let worst = 0;
for (let i = 0; i < N; i++)
  worst = Math.max(worst, Math.abs(a.means[i]! - b.means[i]!) / Math.max(1, Math.abs(a.means[i]!)));
/**
 * Bytes allocated per value in the young generation: the growth of new space over batches of 500
 * values, a batch during which a scavenge ran (new space shrank) left out; the median batch.
 */
function allocated(c: Case): number {
  const used = () => getHeapSpaceStatistics().find((sp) => sp.space_name === 'new_space')!.space_used_size;
  const per: number[] = [];
  for (let k = 0; k < 200 && per.length < 40; k++) {
    const u0 = used();
    publish(c, 500);
    const u1 = used();
    if (u1 > u0) per.push((u1 - u0) / 500);
  }
  per.sort((x, y) => x - y);
  return per[per.length >> 1] ?? NaN;
}
const bytesA = ONLY === 'b' ? NaN : allocated(a);
const bytesB = ONLY === 'a' ? NaN : allocated(b);
const share = a.best / b.best;
console.log(
  `\nbench/analytics-cpu: ${N} processors, ${ROUNDS} alternating rounds of ${VALUES.toLocaleString('en-US')} values after ${WARMUP.toLocaleString('en-US')}, ${STABLE ? 'stable' : 'fresh'} subject strings; load average ${(await import('node:os')).loadavg()[0]!.toFixed(1)}\n`,
);
console.log('| case | least CPU per value | share of (a) | new-space bytes per value |');
console.log('| --- | ---: | ---: | ---: |');
console.log(
  `| (a) bare subscriber, plain code${MEAN_ONLY ? ', mean only' : ', same outputs'} (ceiling) | ${a.best.toFixed(0)} ns | 100.0% | ${bytesA.toFixed(0)} |`,
);
console.log(
  `| (b) 1,000 built-in mean processors | ${b.best.toFixed(0)} ns | ${(share * 100).toFixed(1)}% | ${bytesB.toFixed(0)} |`,
);
console.log(
  `\nsame means: worst relative difference ${worst.toExponential(1)}; outputs (b) ${b.outputs().toLocaleString('en-US')}`,
);
reportFigures(
  {
    bareNsPerValue: a.best,
    builtInNsPerValue: b.best,
    builtInShare: share,
    bareBytesPerValue: bytesA,
    builtInBytesPerValue: bytesB,
  },
  'sources',
);
await b.rt.close();
process.exit(0);
