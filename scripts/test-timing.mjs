// Loaded by scripts/run-tests.mjs in every test file's process (`--import`): on exit, the file's
// time from process start (module loading included) goes to MILLWRIGHT_TEST_TIMES, for the
// runner's list of the slowest files. Nothing happens in any other process.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const dir = process.env.MILLWRIGHT_TEST_TIMES;
if (dir && process.env.NODE_TEST_CONTEXT && process.argv[1]) {
  const file = process.argv[1];
  process.on('exit', () => {
    try {
      writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ file, ms: performance.now() }));
    } catch {
      // The runner is gone: nothing to report to.
    }
  });
}
