/**
 * The main-thread watch (issue 33, item 5) counts a stretch the thread spent on the CPU without
 * yielding, not the time a loaded host left it unscheduled: a CI machine that preempts a 25 ms task
 * for 30 ms must not report a 55 ms block (an opcua-start failure on CI, 2026-11-28).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { blockedPart, loopWatch } from '../../src/kernel/loop-watch.js';

test('a late gap counts its run time when the kernel gives it exactly, else whole or not at all', () => {
  // schedstat: the run time, never more than the gap.
  assert.equal(blockedPart(58, 24.5, true), 24.5);
  assert.equal(blockedPart(40, 55, true), 40);
  // 10 ms ticks: the whole gap when the thread was on the CPU for most of it (±10 ms), else none.
  assert.equal(blockedPart(58, 30, false), 58);
  assert.equal(blockedPart(100, 40, false), 0);
  // No per-thread figures: every late gap counts.
  assert.equal(blockedPart(58, undefined, false), 58);
});

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;

/** The main thread's run time, ms (schedstat). */
function runMs(): number {
  return Number(readFileSync(SCHEDSTAT, 'latin1').split(' ', 1)[0]) / 1e6;
}

/** On the CPU for `ms` of the thread's own run time, without yielding. */
function spin(ms: number): void {
  const start = runMs();
  while (runMs() - start < ms) {
    // spin
  }
}

test(
  'a busy stretch counts; a thread asleep or preempted does not (the watch in this process)',
  { skip: existsSync(SCHEDSTAT) ? false : 'no /proc/<pid>/task/<tid>/schedstat on this kernel' },
  async () => {
    loopWatch.markReady();
    await sleep(30);
    // Off the CPU for 150 ms without yielding: the loop is late, but nothing ran.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 150);
    await sleep(30);
    assert.equal(loopWatch.read().overSinceReady, 0, 'a thread asleep is not a blocked one');
    // Preempted in the middle of a task (stopped by a signal, as a loaded host deschedules it):
    // 30 ms of run time around a stop of at least 50 ms counts as 30 ms (not the 80 of the gap).
    spin(15);
    spawn('sh', ['-c', `sleep 0.05; kill -CONT ${process.pid}`], { stdio: 'ignore' });
    process.kill(process.pid, 'SIGSTOP');
    spin(15);
    await sleep(30);
    const stopped = loopWatch.read();
    assert.ok(stopped.delayMaxMs >= 50, `the loop was late ${stopped.delayMaxMs} ms`);
    assert.ok(stopped.longestSinceReadyMs < 50, `a preempted task counted ${stopped.longestSinceReadyMs} ms`);
    assert.equal(stopped.overSinceReady, 0);
    // On the CPU for 120 ms of its own run time without yielding, however long the host takes.
    spin(120);
    await sleep(30);
    const f = loopWatch.read();
    assert.ok(f.longestSinceReadyMs >= 100, `the busy stretch counted ${f.longestSinceReadyMs} ms`);
    assert.equal(f.overSinceReady, 1);
    loopWatch.stop();
  },
);
