// Runs test files for scripts/run-tests.mjs (which starts this script with the test files'
// Node options, `--import scripts/test-timing.mjs` and the like: the files' processes inherit
// them), each file through `run()` of node:test, in its own process, as `node --test` would.
//
// How many at once: `base` files always (MILLWRIGHT_TEST_CONCURRENCY), and one more, up to `max`
// (MILLWRIGHT_TEST_MAX_CONCURRENCY), while the cores have been idle: most of the suite's files
// start services and then wait on sockets, child processes and timers, so two files on two cores
// left a quarter of the cores unused in the fresh-clone CI runs (1,374 s of CPU in 935 s of wall
// time, 73%). A file above the base starts only when at least IDLE_CORES of the cores were idle
// over the last WINDOW_MS (from /proc/stat, the whole machine's: on a machine busy with other
// work, no file starts above the base) and not within SPACING_MS of the last one, so that a
// file's own start is counted before the next is added. Files start in the order given (the
// slowest of the previous run first).
//
// Each file's report (the spec reporter's) is printed whole when the file ends, so that the
// reports of files run at once do not interleave; then the run's totals (`ℹ pass N`...) as
// `node --test` prints them, and how many files ran above the base.
//
// `node scripts/test-scheduler.mjs <file>...` with the settings in the environment; exits 1 when
// a test or a file failed.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

/** Cores idle over the last WINDOW_MS before a file may start above the base. */
export const IDLE_CORES = Number(process.env.MILLWRIGHT_TEST_IDLE_CORES ?? 0.8);
const WINDOW_MS = 2_000;
const SPACING_MS = 3_000;
const TICK_MS = 250;
const SUMMARY = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) (\d+(?:\.\d+)?)$/;

/** The machine's CPU time so far, idle and all, in clock ticks (Linux; null elsewhere). */
function cpuTicks() {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    // idle + iowait
    return { total, idle: (f[3] ?? 0) + (f[4] ?? 0) };
  } catch {
    return null;
  }
}

/**
 * Whether one more file may start above the base: the cores idle over the window, from the
 * samples' first and last (each `{ at, total, idle }`), are at least `idleCores`.
 */
export function idleEnough(samples, cores, idleCores = IDLE_CORES) {
  if (samples.length < 2) return false;
  const first = samples[0];
  const last = samples[samples.length - 1];
  const total = last.total - first.total;
  if (total <= 0) return false;
  return ((last.idle - first.idle) / total) * cores >= idleCores;
}

/** Runs one file; resolves with its report (text) and its totals. */
function runFile(file, signal) {
  const totals = {};
  let failedFile = false;
  const events = run({ files: [file], signal });
  events.on('test:fail', (d) => {
    if (d.nesting === 0) failedFile = true;
  });
  const filtered = events.compose(async function* (source) {
    for await (const event of source) {
      if (event.type === 'test:diagnostic' && event.data.nesting === 0) {
        const m = SUMMARY.exec(event.data.message);
        if (m) {
          totals[m[1]] = (totals[m[1]] ?? 0) + Number(m[2]);
          continue;
        }
      }
      yield event;
    }
  });
  let text = '';
  const report = filtered.compose(spec);
  report.on('data', (chunk) => (text += chunk));
  return new Promise((resolve, reject) => {
    report.on('end', () => resolve({ text, totals, failedFile }));
    report.on('error', reject);
  });
}

async function main() {
  const files = process.argv.slice(2);
  const cores = availableParallelism();
  const base = Math.max(1, Number(process.env.MILLWRIGHT_TEST_CONCURRENCY ?? 2));
  const max = Math.max(base, Number(process.env.MILLWRIGHT_TEST_MAX_CONCURRENCY ?? base));
  const abort = new globalThis.AbortController();
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => abort.abort());

  const totals = {};
  let failed = false;
  let running = 0;
  let next = 0;
  let above = 0;
  let lastExtraAt = 0;
  let busyMs = 0; // files × milliseconds, for the mean number of files at once
  let lastTickAt = Date.now();
  const startedAt = Date.now();
  const samples = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));

  const start = () => {
    const file = files[next++];
    running++;
    runFile(file, abort.signal)
      .then(({ text, totals: t, failedFile }) => {
        process.stdout.write(text);
        for (const [k, v] of Object.entries(t)) totals[k] = (totals[k] ?? 0) + v;
        if (failedFile || (t.fail ?? 0) > 0) failed = true;
      })
      .catch((err) => {
        failed = true;
        console.error(`# ${file}: ${err?.stack ?? err}`);
      })
      .finally(() => {
        running--;
        if (next >= files.length && running === 0) done();
        else schedule();
      });
  };

  const schedule = () => {
    const now = Date.now();
    busyMs += running * (now - lastTickAt);
    lastTickAt = now;
    while (next < files.length && running < base) start();
    if (
      next < files.length &&
      running < max &&
      now - lastExtraAt >= SPACING_MS &&
      idleEnough(samples, cores)
    ) {
      above++;
      lastExtraAt = now;
      start();
    }
  };

  const tick = setInterval(() => {
    const s = cpuTicks();
    if (s) {
      samples.push({ at: Date.now(), ...s });
      while (samples.length > 2 && samples[1].at <= Date.now() - WINDOW_MS) samples.shift();
    }
    schedule();
  }, TICK_MS);
  schedule();
  if (files.length === 0) done();
  await finished;
  clearInterval(tick);

  const wall = (Date.now() - startedAt) / 1000;
  for (const key of ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo']) {
    console.log(`ℹ ${key} ${totals[key] ?? 0}`);
  }
  console.log(`ℹ duration_ms ${wall * 1000}`);
  console.log(
    `ℹ files at once: ${base} always, up to ${max} while ${IDLE_CORES} of ${cores} cores were idle; ` +
      `${above} of ${files.length} files started above ${base}, ${(busyMs / (wall * 1000)).toFixed(2)} at once on average`,
  );
  if (failed || (totals.fail ?? 0) > 0 || (totals.cancelled ?? 0) > 0) process.exitCode = 1;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
