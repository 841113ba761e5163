// Loaded by scripts/run-tests.mjs in every test file's process (`--import`): on exit, the file's
// time from process start (module loading included) and the CPU time it used (its own and that
// of the processes it started and waited for) go to MILLWRIGHT_TEST_TIMES, for the runner's list
// of the slowest files and its CPU figure. A file still running after MILLWRIGHT_TEST_FILE_TIMEOUT_S
// seconds (default 600) is stopped: it prints what it was waiting on, kills the processes it
// started and exits 1, so that one hang fails the run naming its file instead of eating CI's time.
// Nothing happens in any other process.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/** The processes this one started (Linux: their parent pid in /proc/N/stat). */
function children() {
  const out = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) out.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

if (process.env.NODE_TEST_CONTEXT && process.argv[1]) {
  const limit = Number(process.env.MILLWRIGHT_TEST_FILE_TIMEOUT_S ?? 600);
  setTimeout(() => {
    const handles = process
      .getActiveResourcesInfo()
      .reduce((m, r) => m.set(r, (m.get(r) ?? 0) + 1), new Map());
    console.error(
      `# ${process.argv[1]} still runs after ${limit} s: stopped. Waiting on: ${[...handles]
        .map(([k, n]) => `${k} x${n}`)
        .join(', ')}`,
    );
    for (const pid of children()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    process.exit(1);
  }, limit * 1000).unref();
}
