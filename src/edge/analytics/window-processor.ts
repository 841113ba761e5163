/** The window processor: statistics over tumbling or sliding windows, by time or by count. */
import { LIMITS, type Statistic } from './catalogue.js';
import { num, type Output, type Processor, type Sink } from './processor.js';

function percentileOf(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

/** A statistic of the running sums: the window's sum, sum of squares and length (not empty). */
type Running = (sum: number, sumSq: number, n: number) => number;

/**
 * The statistics that need no pass over the window, one small function each: the processor calls
 * its own (one target per statistic, so that it inlines into the runtime's path of a value and
 * leaves room there for the output's publish); min, max and percentile go through `scanned`.
 */
const RUNNING: Partial<Record<Statistic, Running>> = {
  count: (_sum, _sumSq, n) => n,
  mean: (sum, _sumSq, n) => sum / n,
  sum: (sum) => sum,
  stddev: (sum, sumSq, n) => {
    const mean = sum / n;
    return Math.sqrt(Math.max(0, sumSq / n - mean * mean));
  },
};

/** min, max and percentile: a pass over the window's values. */
function scanned(stat: Statistic, p: number, values: ArrayLike<number>, from: number, to: number): number {
  switch (stat) {
    case 'min': {
      let m = Infinity;
      for (let i = from; i < to; i++) if (values[i]! < m) m = values[i]!;
      return m;
    }
    case 'max': {
      let m = -Infinity;
      for (let i = from; i < to; i++) if (values[i]! > m) m = values[i]!;
      return m;
    }
    default: {
      const s: number[] = [];
      for (let i = from; i < to; i++) s.push(values[i]!);
      s.sort((a, b) => a - b);
      return percentileOf(s, p);
    }
  }
}

/** Windowed statistics over tumbling or sliding windows, by time (payload timestamps) or by count. */
export class WindowProcessor implements Processor {
  readonly #stat: Statistic;
  readonly #running: Running | undefined;
  readonly #p: number;
  readonly #sliding: boolean;
  readonly #ms: number | undefined;
  readonly #count: number | undefined;
  // Values and times in arrays with a moving head (compacted now and then): O(1) per value.
  #values: number[] = [];
  #times: number[] = [];
  #head = 0;
  #sum = 0;
  #sumSq = 0;
  /** Tumbling by time: start of the open window. */
  #windowStart: number | undefined;
  #sinceExact = 0;

  constructor(params: Record<string, unknown>) {
    this.#stat = params.statistic as Statistic;
    this.#running = RUNNING[this.#stat];
    this.#p = params.percentile as number;
    this.#sliding = params.windowType === 'sliding';
    this.#ms = params.windowMs as number | undefined;
    this.#count = params.windowCount as number | undefined;
  }

  get windowMs(): number | undefined {
    return this.#ms;
  }

  #push(v: number, t: number): void {
    this.#values.push(v);
    this.#times.push(t);
    this.#sum += v;
    this.#sumSq += v * v;
    if (this.#values.length - this.#head > LIMITS.maxWindowValues) this.#overflow();
  }

  /** A window over `LIMITS.maxWindowValues`: its oldest value goes. */
  #overflow(): void {
    this.#shift();
    this.#trim();
  }

  /** The oldest value leaves the window (the arrays are trimmed by `#trim` after the shifts). */
  #shift(): void {
    const v = this.#values[this.#head++]!;
    this.#sum -= v;
    this.#sumSq -= v * v;
  }

  /** The values that left drop off the arrays' front, when they are half of them. */
  #trim(): void {
    if (this.#head > 1024 && this.#head * 2 > this.#values.length) this.#compact();
  }

  #compact(): void {
    this.#values = this.#values.slice(this.#head);
    this.#times = this.#times.slice(this.#head);
    this.#head = 0;
  }

  #reset(): void {
    this.#values = [];
    this.#times = [];
    this.#head = 0;
    this.#sum = 0;
    this.#sumSq = 0;
  }

  /** Running sums drift with many subtractions: recomputed every 10,000 values (kept off the hot path). */
  #exact(): void {
    this.#sinceExact = 0;
    let s = 0;
    let q = 0;
    for (let i = this.#head; i < this.#values.length; i++) {
      const v = this.#values[i]!;
      s += v;
      q += v * v;
    }
    this.#sum = s;
    this.#sumSq = q;
  }

  #value(): number | null {
    const n = this.#values.length - this.#head;
    const running = this.#running;
    if (running !== undefined)
      return n === 0 && this.#stat !== 'count' ? null : running(this.#sum, this.#sumSq, n);
    return n === 0 ? null : scanned(this.#stat, this.#p, this.#values, this.#head, this.#values.length);
  }

  #out(timestamp: number, windowStart?: number, windowEnd?: number): Output {
    const count = this.#values.length - this.#head;
    return {
      value: this.#value(),
      timestamp,
      metadata:
        windowStart === undefined
          ? { statistic: this.#stat, count }
          : { statistic: this.#stat, count, windowStart, windowEnd },
    };
  }

  /** A sliding window takes `v`: the values that left the window go. */
  #slide(v: number, t: number): void {
    // `#push` and the shifts written out, in locals: this path inlines into the runtime's (V8's
    // budget of inlined bytecode leaves room for the output's publish only so), and a call here
    // would box `v` and `t`.
    const values = this.#values;
    const times = this.#times;
    values.push(v);
    times.push(t);
    const n = values.length;
    const ms = this.#ms;
    let head = this.#head;
    let sum = this.#sum + v;
    let sumSq = this.#sumSq + v * v;
    const from = ms === undefined ? -Infinity : t - ms;
    const keep = Math.min(ms === undefined ? this.#count! : n, LIMITS.maxWindowValues);
    while (head < n && (times[head]! <= from || n - head > keep)) {
      const x = values[head++]!;
      sum -= x;
      sumSq -= x * x;
    }
    this.#head = head;
    this.#sum = sum;
    this.#sumSq = sumSq;
    this.#trim();
    if (++this.#sinceExact >= 10_000) this.#exact();
  }

  inputTo(i: number, raw: unknown, t: number, _payload: unknown, out: Sink): void {
    if (!this.#sliding) {
      this.#tumblingTo(i, raw, t, out);
      return;
    }
    // The runtime's path of a sliding window: one output per value, without an `Output` object.
    const v = num(raw);
    if (v === undefined) return;
    this.#slide(v, t);
    // The statistics of the running sums straight from them (one small call that inlines); min,
    // max, percentile and an empty window through `#value`.
    const count = this.#values.length - this.#head;
    const running = this.#running;
    out.emit(running !== undefined && count > 0 ? running(this.#sum, this.#sumSq, count) : this.#value(), t, {
      statistic: this.#stat,
      count,
    });
  }

  #tumblingTo(i: number, raw: unknown, t: number, out: Sink): void {
    const o = this.input(i, raw, t);
    if (o !== undefined) out.emit(o.value, o.timestamp, o.metadata);
  }

  input(_i: number, raw: unknown, t: number): Output | undefined {
    const v = num(raw);
    if (v === undefined) return undefined;
    if (this.#sliding) {
      this.#slide(v, t);
      return this.#out(t);
    }
    if (this.#count !== undefined) {
      this.#push(v, t);
      if (this.#values.length - this.#head < this.#count) return undefined;
      const o = this.#out(t, this.#times[this.#head], t);
      this.#reset();
      return o;
    }
    // Tumbling by time: windows aligned to multiples of windowMs, [start, start + windowMs).
    const ms = this.#ms!;
    const start = Math.floor(t / ms) * ms;
    let out: Output | undefined;
    if (this.#windowStart !== undefined && start !== this.#windowStart) {
      if (start > this.#windowStart) out = this.#close();
      else return undefined; // late value of a window already closed
    }
    this.#windowStart = start;
    this.#push(v, t);
    return out;
  }

  #close(): Output | undefined {
    const start = this.#windowStart!;
    const end = start + this.#ms!;
    const o = this.#values.length - this.#head > 0 ? this.#out(end, start, end) : undefined;
    this.#reset();
    this.#windowStart = undefined;
    return o;
  }

  tick(now: number): Output | undefined {
    // A tumbling time window closes by the clock too, a quarter of a second after its end (or a
    // tenth of it), when no later value came to close it.
    if (this.#sliding || this.#ms === undefined || this.#windowStart === undefined) return undefined;
    const grace = Math.min(250, this.#ms / 10);
    if (now < this.#windowStart + this.#ms + grace) return undefined;
    return this.#close();
  }

  snapshot(): unknown {
    return {
      values: this.#values.slice(this.#head),
      times: this.#times.slice(this.#head),
      windowStart: this.#windowStart ?? null,
    };
  }

  restore(state: unknown): void {
    const s = state as { values?: number[]; times?: number[]; windowStart?: number | null };
    if (!Array.isArray(s?.values) || !Array.isArray(s.times) || s.values.length !== s.times.length) return;
    this.#reset();
    for (let i = 0; i < s.values.length; i++) this.#push(Number(s.values[i]), Number(s.times[i]));
    this.#windowStart = typeof s.windowStart === 'number' ? s.windowStart : undefined;
  }
}
