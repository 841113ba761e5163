#!/usr/bin/env node
// `npm run build`: tsc compiles src/ to dist/ (incrementally), the files the code reads at run
// time but tsc does not compile (GraphQL schemas) are copied beside the compiled modules, and the
// outputs whose source is gone are removed, so that dist/ is what a clean build would give.
//
// `node scripts/build.mjs --if-changed` builds only when a file under src/ (or the build's
// configuration) is newer than the last build: what `npm run millwright` and the test runner
// call, so that a run without a source change starts at once.
//
// The web consoles (console/, issue 25) are built by Vite into dist/console/<app>/ with hashed
// file names, after tsc; with `--if-changed`, only when console/ or src/client/ (whose typed
// clients the consoles bundle) changed since the consoles' last build.
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..');
const srcDir = join(root, 'src');
const distDir = join(root, 'dist');
const entry = join(distDir, 'cli/main.js');
// tsc's incremental build leaves unchanged outputs untouched: the build's time is kept in a stamp.
const stamp = join(distDir, '.millwright-built');
// Held while a build runs (gitignored).
const lock = join(root, '.build-lock');
const consoleDir = join(root, 'console');
const consoleStamp = join(distDir, 'console', '.millwright-built');
/** Files copied from src/ to dist/ as they are. */
const ASSETS = ['.graphql'];
/** What tsc makes of a source file: output suffix → source suffixes. */
const OUTPUTS = [
  ['.js.map', ['.ts', '.tsx']],
  ['.js', ['.ts', '.tsx']],
  ['.mjs.map', ['.mts']],
  ['.mjs', ['.mts']],
  ['.d.ts', ['.ts', '.tsx']],
];
/** Files of the build itself in dist/, not outputs of a source. */
const KEEP = new Set(['.tsbuildinfo', '.millwright-built']);

function newest(path) {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = st.mtimeMs;
  for (const name of readdirSync(path)) max = Math.max(max, newest(join(path, name)));
  return max;
}

function files(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else out.push(p);
  }
  return out;
}

/** Whether dist/ was built after the last change of a source or of the build's configuration. */
export function distIsFresh() {
  let builtAt = 0;
  try {
    statSync(entry);
    builtAt = statSync(stamp).mtimeMs;
  } catch {
    return false;
  }
  const sourcesAt = Math.max(
    newest(srcDir),
    ...['tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/build.mjs'].map((f) =>
      newest(join(root, f)),
    ),
  );
  return builtAt >= sourcesAt;
}

/** Whether dist/console was built after the last change of console/ or src/client/. */
export function consoleIsFresh() {
  if (!existsSync(consoleDir)) return true;
  let builtAt = 0;
  try {
    builtAt = statSync(consoleStamp).mtimeMs;
  } catch {
    return false;
  }
  const sourcesAt = Math.max(
    newest(consoleDir),
    newest(join(srcDir, 'client')),
    newest(join(root, 'package.json')),
    newest(join(root, 'scripts/build.mjs')),
  );
  return builtAt >= sourcesAt;
}

/** `vite build` of the consoles (console/vite.config.ts) into dist/console/. */
function buildConsole(stdio) {
  const startedAt = new Date();
  const bin = join(dirname(createRequire(import.meta.url).resolve('vite/package.json')), 'bin/vite.js');
  execFileSync(process.execPath, [bin, 'build', '--config', 'console/vite.config.ts'], { cwd: root, stdio });
  execFileSync(process.execPath, [bin, 'build', '-c', 'console/vite.uns.config.ts'], { cwd: root, stdio });
  execFileSync(process.execPath, [bin, 'build', '--config', 'console/vite.manager.config.ts'], {
    cwd: root,
    stdio,
  });
  writeFileSync(consoleStamp, `${startedAt.toISOString()}\n`);
  utimesSync(consoleStamp, startedAt, startedAt);
}

/** `noCheck`: emit without the type check (tsc's own output, the same files byte for byte). */
function tsc(stdio, noCheck = false) {
  const bin = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [bin, '-p', 'tsconfig.build.json', ...(noCheck ? ['--noCheck'] : [])], {
    cwd: root,
    stdio,
  });
}

/** The source a file of dist/ was made from, or null when it is not an output of the build. */
function sourcesOf(distFile) {
  const rel = relative(distDir, distFile);
  if (KEEP.has(rel)) return null;
  // The consoles' bundles are Vite's outputs, not tsc's.
  if (rel.startsWith(`console${sep}`)) return null;
  if (ASSETS.some((ext) => rel.endsWith(ext))) return [join(srcDir, rel)];
  for (const [out, exts] of OUTPUTS) {
    if (rel.endsWith(out)) return exts.map((ext) => join(srcDir, rel.slice(0, -out.length) + ext));
  }
  return null;
}

/** Removes the outputs whose source is gone (a deleted or renamed file), then empty folders. */
function prune() {
  let removed = 0;
  for (const f of files(distDir)) {
    const sources = sourcesOf(f);
    if (sources && !sources.some((s) => existsSync(s))) {
      rmSync(f);
      removed++;
    }
  }
  const dropEmpty = (dir) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) dropEmpty(p);
    }
    if (dir !== distDir && readdirSync(dir).length === 0) rmdirSync(dir);
  };
  if (existsSync(distDir)) dropEmpty(distDir);
  return removed;
}

/** Whether every source has its output (tsc's incremental state does not look at dist/ itself). */
function complete() {
  return files(srcDir).every((s) => {
    if (ASSETS.some((ext) => s.endsWith(ext))) return true;
    if (s.endsWith('.d.ts')) return true;
    const rel = relative(srcDir, s);
    const out = rel.replace(/\.tsx?$/, '.js').replace(/\.mts$/, '.mjs');
    return out === rel || existsSync(join(distDir, out));
  });
}

function copyAssets() {
  for (const f of files(srcDir)) {
    if (!ASSETS.some((ext) => f.endsWith(ext))) continue;
    const target = join(distDir, relative(srcDir, f));
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(f, target);
  }
}

/** One build at a time in a clone: a second caller waits for the first, then looks again. */
function withLock(fn) {
  const until = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      // A lock left by a killed build is stale after five minutes.
      try {
        if (Date.now() - statSync(lock).mtimeMs > 300_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        /* gone meanwhile */
      }
      if (Date.now() > until) throw new Error(`${lock} held for five minutes`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Builds dist/ (always, or with `ifChanged` only when a source changed); answers whether it built.
 * `noCheck`: tsc emits without type-checking src/, for a caller that type-checks it anyway (the
 * test runner, whose compile into .test-build/ checks src/ with test/): the check was made twice,
 * about 30 s of CPU of a fresh clone's 50 (2026-11-28). tsc's incremental state records the check
 * as pending, so the next build without `noCheck` (`npm run build`) checks every file.
 */
export function build({ ifChanged = false, onBuild, stdio = 'inherit', noCheck = false } = {}) {
  if (ifChanged && distIsFresh() && consoleIsFresh()) return false;
  return withLock(() => {
    const server = !ifChanged || !distIsFresh();
    const consoles = !ifChanged || !consoleIsFresh();
    if (!server && !consoles) return false;
    onBuild?.();
    if (server) {
      const startedAt = new Date();
      tsc(stdio, noCheck);
      prune();
      if (!complete()) {
        // An output removed by hand: tsc's incremental state still counts it as written.
        rmSync(join(distDir, '.tsbuildinfo'), { force: true });
        tsc(stdio, noCheck);
      }
      copyAssets();
      writeFileSync(stamp, `${startedAt.toISOString()}\n`);
      utimesSync(stamp, startedAt, startedAt); // a source saved during the build builds again
    }
    if (consoles && existsSync(consoleDir)) buildConsole(stdio);
    return true;
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    build({ ifChanged: process.argv.includes('--if-changed') });
  } catch (err) {
    // tsc printed its errors already.
    process.exit(typeof err?.status === 'number' ? err.status : 1);
  }
}
