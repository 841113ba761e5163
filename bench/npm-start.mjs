#!/usr/bin/env node
// bench/npm-start.mjs (issue 35): one real `npm start`, as a person runs it, timed from the
// spawn of `npm start` to its `millwright-ready` line, then stopped with Ctrl-C (SIGINT to the
// process group) and waited for. Prints one line: the time to ready, the time to exit and whether
// the build step rebuilt dist/ (the build stamp's time changed).
//
//   node bench/npm-start.mjs --home DIR [--touch]
//
// --home: the HOME of the start (its data directories are DIR/.millwright/...); the same DIR twice
// in a row is a first start then a restart. --touch: change the time of a source file first, so
// the start has to rebuild (the first start after a `git pull`). Wrap it in a whole-process timer
// (`/usr/bin/time -v node bench/npm-start.mjs ...`) for CPU and memory.
import { spawn } from 'node:child_process';
import { mkdirSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const root = join(import.meta.dirname, '..');
const arg = (name) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const home = arg('home');
if (!home) {
  console.error('usage: node bench/npm-start.mjs --home DIR [--touch]');
  process.exit(2);
}
mkdirSync(home, { recursive: true });
const stamp = join(root, 'dist', '.millwright-built');
const stampAt = () => {
  try {
    return statSync(stamp).mtimeMs;
  } catch {
    return 0;
  }
};
if (process.argv.includes('--touch')) {
  const now = new Date();
  utimesSync(join(root, 'src', 'kernel', 'version.ts'), now, now);
}
const before = stampAt();
const started = performance.now();
const child = spawn('npm', ['start'], {
  cwd: root,
  env: { ...process.env, HOME: home },
  detached: true,
  stdio: ['ignore', 'pipe', 'pipe'],
});
let readyMs = 0;
let buffered = '';
child.stderr.resume();
child.stdout.on('data', (chunk) => {
  if (readyMs) return;
  buffered += chunk.toString();
  if (/^millwright-ready /m.test(buffered)) {
    readyMs = performance.now() - started;
    buffered = '';
    process.kill(-child.pid, 'SIGINT');
  }
});
const timer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), 300_000);
child.on('exit', (code, signal) => {
  clearTimeout(timer);
  const exitMs = performance.now() - started;
  const rebuilt = stampAt() !== before;
  console.log(
    `ready_s=${(readyMs / 1000).toFixed(2)} exit_s=${(exitMs / 1000).toFixed(2)} rebuilt=${rebuilt} ` +
      `exit=${code ?? signal}`,
  );
  process.exit(readyMs ? 0 : 1);
});
