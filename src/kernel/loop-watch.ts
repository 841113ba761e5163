/**
 * How long the main thread runs without yielding (issue 33, item 5: no module's start blocks the
 * event loop for more than 50 ms once the API answers). A timer every `TICK_MS` measures the wall
 * time between its callbacks; a gap is a *blocked stretch* when the main thread itself was on the
 * CPU for most of it (Linux: the thread's own CPU time from /proc/self/task/<pid>/stat), which
 * tells a task that did not yield from a process the machine did not schedule (a loaded host
 * delays timers without any code blocking). Elsewhere every late gap counts.
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
const STAT = `/proc/self/task/${process.pid}/stat`;
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

/** The main thread's own CPU time, ms, or undefined where /proc has no per-thread figures. */
function threadCpuMs(): number | undefined {
  try {
    const s = readFileSync(STAT, 'latin1');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / HZ;
  } catch {
    return undefined;
  }
}

class LoopWatch {
  #timer: NodeJS.Timeout | undefined;
  #histogram: IntervalHistogram | undefined;
  #last = 0;
  #lastCpu: number | undefined;
  #ready = false;
  readonly figures: LoopFigures = { longestMs: 0, longestSinceReadyMs: 0, overSinceReady: 0, delayMaxMs: 0 };

  start(): void {
    if (this.#timer) return;
    this.#histogram = monitorEventLoopDelay({ resolution: 10 });
    this.#histogram.enable();
    this.#last = performance.now();
    this.#lastCpu = threadCpuMs();
    this.#timer = setInterval(() => this.#tick(), TICK_MS);
    this.#timer.unref();
  }

  markReady(): void {
    this.start();
    // The stretch in progress (the listen that just returned: fastify compiles its route schemas
    // there) belongs to the start, not to what follows the ready line: measure from here.
    this.#last = performance.now();
    this.#lastCpu = threadCpuMs();
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
    const cpu = threadCpuMs();
    const used = cpu !== undefined && this.#lastCpu !== undefined ? cpu - this.#lastCpu : undefined;
    this.#lastCpu = cpu;
    if (gap <= LONG_TASK_MS / 2) return;
    // /proc counts in 10 ms ticks: a gap's CPU is known to ±10 ms.
    if (used !== undefined && used + 10 < gap * ON_CPU) return;
    const f = this.figures;
    f.longestMs = Math.max(f.longestMs, gap);
    if (!this.#ready) return;
    f.longestSinceReadyMs = Math.max(f.longestSinceReadyMs, gap);
    if (gap > LONG_TASK_MS) f.overSinceReady++;
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
