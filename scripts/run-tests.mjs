#!/usr/bin/env node
// Runs the test suite with Node's own test runner (Node 20 does not expand globs, so the file
// list is built here). `node scripts/run-tests.mjs [filter...]` runs only files whose path
// contains one of the filters.
//
// - dist/ is built first when a source changed (scripts/build.mjs --if-changed): the suites that
//   start processes run the built CLI (test/helpers/cli.ts), not the sources through tsx.
// - Files run `MILLWRIGHT_TEST_CONCURRENCY` at a time (default 4: most files wait on sockets and
//   child processes, not on the CPU), the slowest of the previous run first, so that a long file
//   does not start last and run alone.
// - At the end, after the runner's own summary (`ℹ pass N`, `ℹ fail N`), the ten slowest files
//   with their times (from process start to exit, the import of the sources included).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from './build.mjs';

const root = join(import.meta.dirname, '..');
/** Each file's time in the last run, to start the slow ones first (gitignored). */
const HISTORY = join(root, '.test-times.json');
const CONCURRENCY = Number(process.env.MILLWRIGHT_TEST_CONCURRENCY ?? 4);

function walk(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

function readJson(file, fallback) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return fallback;
  }
}

const filters = process.argv.slice(2);
const history = readJson(HISTORY, {});
const files = walk('test')
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
  // Longest first; a new file (no time yet) counts as slow.
  .sort((a, b) => (history[b] ?? Infinity) - (history[a] ?? Infinity));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

try {
  build({ ifChanged: true, onBuild: () => console.log('# building dist/ (a source changed)') });
} catch (err) {
  process.exit(typeof err?.status === 'number' ? err.status : 1);
}

const times = mkdtempSync(join(tmpdir(), 'mw-test-times-'));
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--import',
    pathToFileURL(join(root, 'scripts/test-timing.mjs')).href,
    '--test',
    `--test-concurrency=${CONCURRENCY}`,
    '--test-reporter=spec',
    ...files,
  ],
  {
    stdio: 'inherit',
    env: { ...process.env, MILLWRIGHT_TEST_DIST_BUILT: '1', MILLWRIGHT_TEST_TIMES: times },
  },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
const startedAt = Date.now();
child.on('exit', (code, signal) => {
  const wall = (Date.now() - startedAt) / 1000;
  const measured = readdirSync(times)
    .map((n) => readJson(join(times, n), null))
    .filter(Boolean);
  rmSync(times, { recursive: true, force: true });
  if (measured.length > 0) {
    for (const m of measured) history[relative(root, m.file)] = Math.round(m.ms);
    writeFileSync(HISTORY, JSON.stringify(history, null, 1) + '\n');
    const cpu = measured.reduce((sum, m) => sum + (m.cpu ?? 0), 0);
    const slowest = measured.sort((a, b) => b.ms - a.ms).slice(0, 10);
    console.log(`ℹ slowest files (of ${measured.length}, concurrency ${CONCURRENCY}):`);
    for (const m of slowest)
      console.log(
        `ℹ   ${(m.ms / 1000).toFixed(1).padStart(6)} s  ${relative(root, m.file)}  (CPU ${(m.cpu ?? 0).toFixed(1)} s)`,
      );
    // CPU seconds of the files and their child processes against what the cores could give in
    // the run's time: well under the cores' share, the run waits more than it computes.
    console.log(
      `ℹ CPU ${cpu.toFixed(0)} s in ${wall.toFixed(0)} s on ${availableParallelism()} cores (${((cpu / (wall * availableParallelism())) * 100).toFixed(0)}% of them)`,
    );
  }
  process.exit(code ?? (signal ? 1 : 0));
});
