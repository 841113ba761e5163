// Loaded by scripts/run-tests.mjs in every test file's process (`--import`): on exit, the file's
// time from process start (module loading included) and the CPU time it used (its own and that
// of the processes it started and waited for) go to MILLWRIGHT_TEST_TIMES, for the runner's list
// of the slowest files and its CPU figure. Nothing happens in any other process.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** CPU seconds of the processes this one started and waited for (Linux: /proc/self/stat). */
function childrenCpu() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of proc(5) (cutime, cstime), counted from the state (field 3).
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

const dir = process.env.MILLWRIGHT_TEST_TIMES;
if (dir && process.env.NODE_TEST_CONTEXT && process.argv[1]) {
  const file = process.argv[1];
  process.on('exit', () => {
    const own = process.cpuUsage();
    const cpu = (own.user + own.system) / 1e6 + childrenCpu();
    try {
      writeFileSync(join(dir, `${process.pid}.json`), JSON.stringify({ file, ms: performance.now(), cpu }));
    } catch {
      // The runner is gone: nothing to report to.
    }
  });
}
