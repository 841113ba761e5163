/**
 * bench/expressions: the per-message cost of a digital-twins transformation (`value * 2` on a
 * DataHub-like payload), before and after issue 33, in one run:
 *   (a) before: JSONata evaluated on the main loop (what the twins runtime did);
 *   (b) after: the same evaluation in the expression sandbox (a worker thread, batched: what the
 *       runtime and the playground do now).
 * Reported per case: messages per second, and the main loop's busy time per message (µs; event-loop
 * utilization × wall time / messages): what each message costs the loop that serves HTTPS, the
 * DataHub and acquisition. Each case evaluates `--messages` in bursts of `--burst` (a turn of the
 * loop's worth of inputs), `--rounds` times; the median round is reported.
 *
 *   npm run bench -- expressions [--messages 50000] [--burst 500] [--rounds 3]
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import jsonata from 'jsonata';
import { ExpressionSandbox } from '../src/edge/twins/expressions.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const MESSAGES = arg('messages', 50_000);
const BURST = arg('burst', 500);
const ROUNDS = arg('rounds', 3);
const EXPRESSION = 'value * 2';
const payload = (i: number) => ({
  value: i,
  timestamp: 1_700_000_000_000 + i,
  deviceName: 'gen',
  tagName: 'speed',
});

async function measure(
  evaluate: (input: unknown) => Promise<unknown>,
): Promise<{ rate: number; busyUs: number }> {
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  let sum = 0;
  for (let done = 0; done < MESSAGES; done += BURST) {
    const burst: Promise<unknown>[] = [];
    for (let k = 0; k < BURST; k++) burst.push(evaluate(payload(done + k)));
    for (const v of await Promise.all(burst)) sum += v as number;
    // Let the loop turn, as inputs arriving from the network would.
    await new Promise((r) => setImmediate(r));
  }
  const wall = performance.now() - t0;
  const elu = performance.eventLoopUtilization(elu0);
  if (!(sum > 0)) throw new Error('no results');
  return { rate: (MESSAGES / wall) * 1000, busyUs: (elu.active * 1000) / MESSAGES };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function run(name: string, evaluate: (input: unknown) => Promise<unknown>) {
  await measure(evaluate); // warm-up
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) rounds.push(await measure(evaluate));
  return { name, rate: median(rounds.map((r) => r.rate)), busyUs: median(rounds.map((r) => r.busyUs)) };
}

const compiled = jsonata(EXPRESSION);
const before = await run('(a) main loop (before)', (input) =>
  compiled.evaluate(input as object, { params: {} }),
);
const sandbox = new ExpressionSandbox();
const after = await run('(b) expression sandbox (after)', (input) => sandbox.evaluate(EXPRESSION, input, {}));
await sandbox.close();

console.log(
  `\nexpressions: ${MESSAGES} messages in bursts of ${BURST}, median of ${ROUNDS} rounds; ${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}\n`,
);
console.log('| case | messages/s | main-loop busy per message |');
console.log('| ---- | ---------: | -------------------------: |');
for (const c of [before, after])
  console.log(`| ${c.name} | ${Math.round(c.rate).toLocaleString('en')} | ${c.busyUs.toFixed(1)} µs |`);
