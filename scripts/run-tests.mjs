#!/usr/bin/env node
// Runs the test suite with Node's own test runner (Node 20 does not expand globs, so the file
// list is built here). `node scripts/run-tests.mjs [--typecheck] [filter...]` runs only files
// whose path contains one of the filters; `--typecheck` (what `npm test` passes) fails the run on
// a type error.
//
// - dist/ is built first when a source changed (scripts/build.mjs --if-changed): the suites that
//   start processes run the built CLI (test/helpers/cli.ts), not the sources through tsx. That
//   build emits without type-checking (`noCheck`) unless the tests run through tsx: the compile
//   into .test-build/ below checks src/ with test/, and checking src/ twice cost about 30 s of
//   CPU on a fresh clone.
// - At the same time tsc compiles src/ and test/ into .test-build/ (tsconfig.test.json,
//   incremental), which is the typecheck too; the test files then run as JavaScript, without a
//   source loader in each file's process. .test-build/ mirrors the clone: whatever tsc does not
//   write there (the .ts files themselves, schemas, package.json, dist/, scripts/, docs/...) is a
//   symbolic link to the original, so paths relative to a test file mean what they mean in the
//   clone. `MILLWRIGHT_TEST_TSX=1` runs the .ts files through tsx instead.
// - Files run `MILLWRIGHT_TEST_CONCURRENCY` at a time (default 4: most files wait on sockets and
//   child processes; on this 2-core machine, at load 5, `npm test` took 3:18 four at a time and
//   5:59 two at a time, the files using 92% and 50% of the cores), the slowest of the previous
//   run first, so that a long file does not start last and run alone; a fresh clone, with no
//   run of its own, takes the order of scripts/test-times.json (a whole run's). With CI=true, 2
//   at a time, and a third while the cores are idle (`MILLWRIGHT_TEST_MAX_CONCURRENCY`,
//   scripts/test-scheduler.mjs, which runs the files): on a slower 2-core machine (2026-11-27,
//   Intel Xeon 2.5 GHz) four at a time took 1,313 s of wall time for 2,326 s of CPU, and files
//   starved of CPU missed their deadlines (an OPC UA sync of 10,000 tags past 180 s, an MQTT
//   keep-alive past 60 s, a PostgreSQL connect); two at a time left a quarter of the cores idle
//   (2026-11-28: 1,374 s of CPU in 935 s).
// - At the end, after the runner's own summary (`ℹ pass N`, `ℹ fail N`), the ten slowest files
//   with their times (from process start to exit, module loading included) and the CPU used, then
//   the twenty files that used the most CPU; `MILLWRIGHT_TEST_FILE_FIGURES=<file>` writes every
//   file's wall time and CPU to that file as JSON.
import { spawn } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from './build.mjs';

const root = join(import.meta.dirname, '..');
const OUT = join(root, '.test-build');
/** Each file's time in the last run, to start the slow ones first (gitignored). */
const HISTORY = join(root, '.test-times.json');
/**
 * The same from a whole run of the suite, kept in the repository: the order of a fresh clone (CI),
 * which has no history of its own, for the files the history does not list.
 */
const SEED = join(root, 'scripts/test-times.json');
const CONCURRENCY = Number(process.env.MILLWRIGHT_TEST_CONCURRENCY ?? (process.env.CI === 'true' ? 2 : 4));
/**
 * Files at once while the cores are idle (scripts/test-scheduler.mjs): with CI=true and no
 * concurrency given, one more than the base; otherwise the base.
 */
const MAX_CONCURRENCY = Number(
  process.env.MILLWRIGHT_TEST_MAX_CONCURRENCY ??
    (process.env.CI === 'true' && process.env.MILLWRIGHT_TEST_CONCURRENCY === undefined ? 3 : CONCURRENCY),
);
const TSX = process.env.MILLWRIGHT_TEST_TSX === '1';
/** The folders tsc compiles (tsconfig.json's include); everything else is linked whole. */
const COMPILED = ['src', 'test', 'bench', 'scripts'];

function walk(dir, keep = (name) => name.endsWith('.test.ts')) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p, keep));
    else if (keep(name)) out.push(p);
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

const args = process.argv.slice(2);
const typecheck = args.includes('--typecheck');
const filters = args.filter((a) => a !== '--typecheck');
const history = readJson(HISTORY, {});
const seed = readJson(SEED, {});
const timeOf = (file) => history[file] ?? seed[file] ?? Infinity;
const files = walk('test')
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
  // Longest first; a new file (no time yet) counts as slow.
  .sort((a, b) => timeOf(b) - timeOf(a));
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

/** tsc on tsconfig.test.json in the background; resolves with its exit code and output. */
function compileTests() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.test.json', '--pretty'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code: code ?? 1, output })));
}

function link(target, path) {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    st = null;
  }
  if (st?.isSymbolicLink()) return;
  if (st) return; // written by tsc
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path);
}

/** Removes the links whose source is gone (a file deleted or renamed since the last run). */
function prune(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = lstatSync(p);
    if (st.isSymbolicLink() && !existsSync(p)) rmSync(p);
    else if (st.isDirectory()) prune(p);
  }
}

/** Links into .test-build/ what tsc does not write there (see the head of this file). */
function mirror() {
  for (const dir of COMPILED) prune(join(OUT, dir));
  for (const name of readdirSync(root)) {
    if (name === '.git' || name === '.test-build' || COMPILED.includes(name)) continue;
    link(join(root, name), join(OUT, name));
  }
  for (const dir of COMPILED) {
    if (!existsSync(join(root, dir))) continue;
    for (const f of walk(join(root, dir), () => true)) link(f, join(OUT, relative(root, f)));
  }
}

const compiling = TSX ? null : compileTests();
try {
  // Without the type check when tsc checks src/ here anyway (.test-build/): not twice.
  build({
    ifChanged: true,
    noCheck: !TSX,
    onBuild: () => console.log('# building dist/ (a source changed)'),
  });
} catch (err) {
  process.exit(typeof err?.status === 'number' ? err.status : 1);
}
if (compiling) {
  const { code, output } = await compiling;
  if (code !== 0) {
    process.stdout.write(output);
    if (typecheck) process.exit(code);
    console.log('# type errors (above): the tests run all the same');
  }
  mirror();
} else if (typecheck) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = await new Promise((resolve) =>
    spawn(process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit'], { cwd: root, stdio: 'inherit' }).on(
      'exit',
      resolve,
    ),
  );
  if (r !== 0) process.exit(r ?? 1);
}

const toRun = TSX ? files : files.map((f) => join(OUT, f.replace(/\.ts$/, '.js')));
/** The test file (as listed in test/) a process ran. */
const source = (file) => relative(TSX ? root : OUT, file).replace(/\.js$/, '.ts');

const times = mkdtempSync(join(tmpdir(), 'mw-test-times-'));
const child = spawn(
  process.execPath,
  [
    ...(TSX ? ['--import', 'tsx'] : ['--enable-source-maps']),
    '--import',
    pathToFileURL(join(root, 'scripts/test-timing.mjs')).href,
    join(root, 'scripts/test-scheduler.mjs'),
    ...toRun,
  ],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      MILLWRIGHT_TEST_DIST_BUILT: '1',
      MILLWRIGHT_TEST_TIMES: times,
      MILLWRIGHT_TEST_CONCURRENCY: String(CONCURRENCY),
      MILLWRIGHT_TEST_MAX_CONCURRENCY: String(MAX_CONCURRENCY),
    },
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
    for (const m of measured) history[source(m.file)] = Math.round(m.ms);
    writeFileSync(HISTORY, JSON.stringify(history, null, 1) + '\n');
    const cpu = measured.reduce((sum, m) => sum + (m.cpu ?? 0), 0);
    const line = (m) =>
      `ℹ   ${(m.ms / 1000).toFixed(1).padStart(6)} s  ${source(m.file)}  (CPU ${(m.cpu ?? 0).toFixed(1)} s)`;
    const slowest = [...measured].sort((a, b) => b.ms - a.ms).slice(0, 10);
    console.log(`ℹ slowest files (of ${measured.length}, concurrency ${CONCURRENCY} to ${MAX_CONCURRENCY}):`);
    for (const m of slowest) console.log(line(m));
    // What the suite's time is made of on a busy machine: the files that use the most CPU.
    const heaviest = [...measured].sort((a, b) => (b.cpu ?? 0) - (a.cpu ?? 0)).slice(0, 20);
    console.log(`ℹ most CPU (of ${measured.length}):`);
    for (const m of heaviest) console.log(line(m));
    // CPU seconds of the files and their child processes against what the cores could give in
    // the run's time: well under the cores' share, the run waits more than it computes.
    // MILLWRIGHT_TEST_FILE_FIGURES=<file>: every file's wall time (ms) and CPU (s), as JSON.
    const figures = process.env.MILLWRIGHT_TEST_FILE_FIGURES;
    if (figures) {
      const rows = measured.map((m) => ({ file: source(m.file), ms: Math.round(m.ms), cpu: m.cpu ?? 0 }));
      writeFileSync(
        figures,
        JSON.stringify({ wallS: wall, concurrency: [CONCURRENCY, MAX_CONCURRENCY], files: rows }, null, 1) +
          '\n',
      );
    }
    const cores = availableParallelism();
    console.log(
      `ℹ CPU ${cpu.toFixed(0)} s in ${wall.toFixed(0)} s on ${cores} cores (${((cpu / (wall * cores)) * 100).toFixed(0)}% of them)`,
    );
  }
  process.exit(code ?? (signal ? 1 : 0));
});
