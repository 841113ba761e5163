/**
 * How long the main thread runs without yielding (issue 33, item 5: no module's start blocks the
 * event loop for more than 50 ms once the API answers). A timer every `TICK_MS` measures the wall
 * time between its callbacks. A late gap is one loop turn that did not come back to its timers; its
 * *blocked stretch* is the time the main thread itself was on the CPU during it (Linux: the
 * thread's run time in nanoseconds from /proc/self/task/<pid>/schedstat), so that a 25 ms task a
 * loaded host preempted for 30 ms counts 25 ms, not 55. Where schedstat is absent, the thread's
 * CPU ticks from .../stat (10 ms each) decide whether the gap counts whole (on the CPU for most of
 * it); elsewhere every late gap counts.
 *
 * `markReady()` (the service, once it listens) starts the "since ready" figures; both are in the
 * process metrics (`writeProcessMetrics`): the longest blocked stretch and how many went past 50 ms.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

const TICK_MS = 10;
/** A stretch longer than this counts in `over`. */
export const LONG_TASK_MS = 50;
/** Share of a gap the main thread must have been on the CPU for the gap to count as blocked. */
const ON_CPU = 0.6;
const TASK = `/proc/self/task/${process.pid}`;
/** Clock ticks per second of /proc's CPU times (USER_HZ). */
const HZ = 100;

export interface LoopFigures {
  /** Longest blocked stretch, ms (since start, since ready). */
  longestMs: number;
  longestSinceReadyMs: number;
  /** Stretches over `LONG_TASK_MS` since ready. */
  overSinceReady: number;
  /** Largest event-loop delay since ready (Node's histogram, starvation included), ms. */
  delayMaxMs: number;
}

interface ThreadCpu {
  ms: number;
  /** Nanosecond run time (schedstat), not 10 ms ticks (stat). */
  exact: boolean;
}

/** The main thread's own CPU time, or undefined where /proc has no per-thread figures. */
function threadCpu(): ThreadCpu | undefined {
  try {
    // schedstat: time on the CPU (ns), time waiting on a run queue (ns), time slices.
    const ns = Number(readFileSync(`${TASK}/schedstat`, 'latin1').split(' ', 1)[0]);
    if (Number.isFinite(ns)) return { ms: ns / 1e6, exact: true };
  } catch {
    // A kernel without schedstat: the stat ticks below.
  }
  try {
    const s = readFileSync(`${TASK}/stat`, 'latin1');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ms: ((Number(f[11]) + Number(f[12])) * 1000) / HZ, exact: false };
  } catch {
    return undefined;
  }
}

/**
 * How much of a late gap of `gap` ms counts as blocked, given the thread's CPU time over it:
 * exactly its run time (schedstat); with 10 ms ticks, the whole gap when the thread was on the CPU
 * for most of it, else none; without /proc, the whole gap.
 */
export function blockedPart(gap: number, used: number | undefined, exact: boolean): number {
  if (used === undefined) return gap;
  if (exact) return Math.min(gap, used);
  // /proc counts in 10 ms ticks: a gap's CPU is known to ±10 ms.
  return used + 10 < gap * ON_CPU ? 0 : gap;
}

class LoopWatch {
  #timer: NodeJS.Timeout | undefined;
  #histogram: IntervalHistogram | undefined;
  #last = 0;
  #lastCpu: ThreadCpu | undefined;
  #ready = false;
  readonly figures: LoopFigures = { longestMs: 0, longestSinceReadyMs: 0, overSinceReady: 0, delayMaxMs: 0 };

  start(): void {
    if (this.#timer) return;
    this.#histogram = monitorEventLoopDelay({ resolution: 10 });
    this.#histogram.enable();
    this.#last = performance.now();
    this.#lastCpu = threadCpu();
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
    this.#timer.unref();
  }

  markReady(): void {
    this.start();
    // The stretch in progress (the listen that just returned: fastify compiles its route schemas
    // there) belongs to the start, not to what follows the ready line: measure from here.
    this.#last = performance.now();
    this.#lastCpu = threadCpu();
    this.#histogram?.reset();
    this.#ready = true;
    this.figures.longestSinceReadyMs = 0;
    this.figures.overSinceReady = 0;
  }

  #tick(): void {
    const now = performance.now();
    const gap = now - this.#last - TICK_MS;
    this.#last = now;
    // The CPU is read on every tick (a small /proc read) so that a late tick knows its gap's share.
    const cpu = threadCpu();
    const last = this.#lastCpu;
    this.#lastCpu = cpu;
    if (gap <= LONG_TASK_MS / 2) return;
    const used = cpu !== undefined && last !== undefined ? cpu.ms - last.ms : undefined;
    const blocked = blockedPart(gap, used, cpu?.exact === true && last?.exact === true);
    if (blocked <= LONG_TASK_MS / 2) return;
    const f = this.figures;
    f.longestMs = Math.max(f.longestMs, blocked);
    if (!this.#ready) return;
    f.longestSinceReadyMs = Math.max(f.longestSinceReadyMs, blocked);
    if (blocked > LONG_TASK_MS) f.overSinceReady++;
  }

  read(): LoopFigures {
    this.figures.delayMaxMs = this.#histogram ? this.#histogram.max / 1e6 : 0;
    const out = { ...this.figures };
    // A stretch the thread ran without yielding is also a delay of its loop: Node's histogram
    // (reset at ready, 10 ms resolution) bounds the timer-and-/proc estimate, which is only good
    // to about ±15 ms (a late interval, /proc's 10 ms ticks).
    if (this.#ready && this.#histogram)
      out.longestSinceReadyMs = Math.min(out.longestSinceReadyMs, out.delayMaxMs);
    return out;
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#histogram?.disable();
  }
}

/** The process's one watch (started by the first service that starts). */
export const loopWatch = new LoopWatch();
