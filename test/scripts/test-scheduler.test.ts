/**
 * scripts/test-scheduler.mjs (what scripts/run-tests.mjs runs the test files with), on small test
 * files of its own in a temporary folder: the totals and the exit status are `node --test`'s, each
 * file's report is printed whole, and a file starts above the base concurrency while the cores
 * are idle (and only then).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { tempDirs } from '../helpers/cli.js';

// The clone's root, also when this file runs from .test-build/ (the suite runs the built tests).
const built = join(import.meta.dirname, '../..');
const repo = basename(built) === '.test-build' ? dirname(built) : built;
const SCHEDULER = join(repo, 'scripts/test-scheduler.mjs');
const dirs = tempDirs('mw-scheduler-');
after(() => dirs.removeAll());

function files(sources: Record<string, string>): { dir: string; paths: string[] } {
  const dir = dirs.make();
  const paths = Object.entries(sources).map(([name, text]) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  });
  return { dir, paths };
}

function schedule(paths: string[], env: Record<string, string>): { status: number | null; out: string } {
  // Run as the runner runs it, not as a test file's child (which node:test would report to its parent).
  const { NODE_TEST_CONTEXT: _, ...own } = process.env;
  const r = spawnSync(process.execPath, [SCHEDULER, ...paths], { encoding: 'utf8', env: { ...own, ...env } });
  return { status: r.status, out: r.stdout + r.stderr };
}

const PASSING = `import { test } from 'node:test';
test('one passes', () => {});
test('two passes', async () => { await new Promise((r) => setTimeout(r, 200)); });
`;
const FAILING = `import { test } from 'node:test';
test('three passes', () => {});
test('four fails', () => { throw new Error('expected failure'); });
`;
const CRASHING = `import { test } from 'node:test';
test('five passes', () => {});
setTimeout(() => process.exit(3), 100);
`;

test("the totals and the exit status are node --test's; each file's report is whole", () => {
  const { paths } = files({ 'a.test.mjs': PASSING, 'b.test.mjs': FAILING, 'c.test.mjs': CRASHING });
  const { status, out } = schedule(paths, { MILLWRIGHT_TEST_CONCURRENCY: '3' });
  assert.equal(status, 1, out);
  // 5 tests and the crashed file (a failure of its own, as node --test reports it).
  assert.match(out, /^ℹ tests 6$/m);
  assert.match(out, /^ℹ pass 4$/m);
  assert.match(out, /^ℹ fail 2$/m);
  assert.match(out, /c\.test\.mjs/);
  // The summary once, at the end; no file's own totals.
  assert.equal(out.match(/^ℹ pass /gm)?.length, 1);
  // Three files at once, their reports not interleaved: each file's tests are adjacent.
  const lines = out.split('\n').filter((l) => /^✔ (one|two) passes|^✔ three|^✖ four/.test(l));
  const a = lines.findIndex((l) => l.includes('one passes'));
  assert.ok(lines[a + 1]?.includes('two passes'), out);

  const ok = schedule([paths[0]!], {});
  assert.equal(ok.status, 0, ok.out);
  assert.match(ok.out, /^ℹ pass 2$/m);
});

/** A file that passes only while the other runs at the same time (each waits for the other's mark). */
function meeting(dir: string, me: string, other: string): string {
  return `import { test } from 'node:test';
import { existsSync, writeFileSync } from 'node:fs';
test('${me} meets ${other}', async () => {
  writeFileSync(${JSON.stringify(join(dir, me))}, '');
  const until = Date.now() + 60_000;
  while (!existsSync(${JSON.stringify(join(dir, other))})) {
    if (Date.now() > until) throw new Error('${other} did not run at the same time');
    await new Promise((r) => setTimeout(r, 50));
  }
});
`;
}

test('a file starts above the base while the cores are idle', () => {
  const dir = dirs.make();
  writeFileSync(join(dir, 'x.test.mjs'), meeting(dir, 'x', 'y'));
  writeFileSync(join(dir, 'y.test.mjs'), meeting(dir, 'y', 'x'));
  // One file at once, two while "0 cores" are idle: the second starts while the first waits.
  const { status, out } = schedule([join(dir, 'x.test.mjs'), join(dir, 'y.test.mjs')], {
    MILLWRIGHT_TEST_CONCURRENCY: '1',
    MILLWRIGHT_TEST_MAX_CONCURRENCY: '2',
    MILLWRIGHT_TEST_IDLE_CORES: '0',
  });
  assert.equal(status, 0, out);
  assert.match(out, /1 of 2 files started above 1/);
});

test('a file starts above the base only when the idle cores reach the bound', async () => {
  const { idleEnough } = (await import(SCHEDULER)) as {
    idleEnough: (
      s: { at: number; total: number; idle: number }[],
      cores: number,
      idleCores: number,
    ) => boolean;
  };
  const at = (t: number, total: number, idle: number) => ({ at: t, total, idle });
  // 2 cores, 200 ticks in the window: 100 idle is 1 core idle, 60 is 0.6 of a core.
  assert.equal(idleEnough([at(0, 1000, 500), at(2000, 1200, 600)], 2, 0.8), true);
  assert.equal(idleEnough([at(0, 1000, 500), at(2000, 1200, 560)], 2, 0.8), false);
  assert.equal(idleEnough([at(0, 1000, 500)], 2, 0.8), false, 'one sample is no window');
  assert.equal(idleEnough([at(0, 1000, 500), at(2000, 1000, 500)], 2, 0.8), false, 'no ticks');
});
