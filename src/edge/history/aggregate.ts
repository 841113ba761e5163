/**
 * Aggregates per bucket computed from the values in one pass (buckets under a minute): the store
 * hands over the values of a range as typed columns, in the order it holds them (each tag's values
 * in time order but for late ones), and this groups them by tag, sorts a tag only when its values
 * are out of order, and sweeps them. The same figures as the SQL of whole-minute buckets: each
 * value holds until the next one of its tag (in the range) or the bucket's end (capped at `end`).
 */
import type { AggregateColumns } from './store.js';

/** Values of one range: tag, time (epoch ms) and value by row. */
export interface ValueColumns {
  tag: Float64Array;
  ts: Float64Array;
  v: Float64Array;
}

/** Rows grouped by tag (ascending), each tag's rows in time order. */
function groupByTag(c: ValueColumns): {
  tags: number[];
  starts: number[];
  ts: Float64Array;
  v: Float64Array;
} {
  const n = c.tag.length;
  // Dense index of each row's tag (rows of a tag mostly come together: the last one is cached).
  const index = new Map<number, number>();
  const slot = new Int32Array(n);
  const counts: number[] = [];
  let lastTag = NaN;
  let lastSlot = -1;
  for (let i = 0; i < n; i++) {
    const t = c.tag[i]!;
    if (t !== lastTag) {
      lastTag = t;
      let k = index.get(t);
      if (k === undefined) {
        k = counts.length;
        index.set(t, k);
        counts.push(0);
      }
      lastSlot = k;
    }
    slot[i] = lastSlot;
    counts[lastSlot]!++;
  }
  const order = [...index.entries()].sort((a, b) => a[0] - b[0]);
  const at = new Int32Array(counts.length);
  const starts: number[] = [];
  let off = 0;
  for (const [, k] of order) {
    starts.push(off);
    at[k] = off;
    off += counts[k]!;
  }
  starts.push(n);
  const ts = new Float64Array(n);
  const v = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const j = at[slot[i]!]!++;
    ts[j] = c.ts[i]!;
    v[j] = c.v[i]!;
  }
  for (let k = 0; k < order.length; k++) sortRange(ts, v, starts[k]!, starts[k + 1]!);
  return { tags: order.map((e) => e[0]), starts, ts, v };
}

/** Sorts rows [a, b) by time when they are not in order already (late values). */
function sortRange(ts: Float64Array, v: Float64Array, a: number, b: number): void {
  let sorted = true;
  for (let i = a + 1; i < b && sorted; i++) if (ts[i]! < ts[i - 1]!) sorted = false;
  if (sorted) return;
  const idx = Array.from({ length: b - a }, (_, i) => a + i).sort((x, y) => ts[x]! - ts[y]!);
  const t2 = idx.map((i) => ts[i]!);
  const v2 = idx.map((i) => v[i]!);
  ts.set(t2, a);
  v.set(v2, a);
}

export function bucketize(c: ValueColumns, width: number, end: number): AggregateColumns {
  const { tags, starts, ts: T, v: V } = groupByTag(c);
  // At most one bucket per value, and per tag and bucket of the range: the columns are cut to the
  // buckets found at the end (sized by values alone, a 100-tag hour allocated five times the room).
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < T.length; i++) {
    const t = T[i]!;
    if (t < lo) lo = t;
    if (t > hi) hi = t;
  }
  const perTag = T.length === 0 ? 0 : Math.floor(hi / width) - Math.floor(lo / width) + 1;
  const n = Math.min(T.length, tags.length * perTag);
  const o = {
    tag: new Float64Array(n),
    bucket: new Float64Array(n),
    first: new Float64Array(n),
    last: new Float64Array(n),
    min: new Float64Array(n),
    max: new Float64Array(n),
    mean: new Float64Array(n),
    count: new Float64Array(n),
    twa: new Float64Array(n),
  };
  let m = 0;
  for (let k = 0; k < tags.length; k++) {
    const b = starts[k + 1]!;
    let i = starts[k]!;
    while (i < b) {
      const bucket = Math.floor(T[i]! / width) * width;
      const until = bucket + width;
      const stop = Math.min(until, end);
      const first = V[i]!;
      let min = first;
      let max = first;
      let sum = 0;
      let count = 0;
      let tws = 0;
      let twd = 0;
      let last = first;
      for (; i < b && T[i]! < until; i++) {
        const x = V[i]!;
        const next = i + 1 < b ? T[i + 1]! : end;
        const dt = Math.max(0, Math.min(next, stop) - T[i]!);
        if (x < min) min = x;
        if (x > max) max = x;
        sum += x;
        count++;
        tws += x * dt;
        twd += dt;
        last = x;
      }
      o.tag[m] = tags[k]!;
      o.bucket[m] = bucket;
      o.first[m] = first;
      o.last[m] = last;
      o.min[m] = min;
      o.max[m] = max;
      o.mean[m] = sum / count;
      o.count[m] = count;
      o.twa[m] = twd === 0 ? NaN : tws / twd;
      m++;
    }
  }
  return Object.fromEntries(
    Object.entries(o).map(([key, a]) => [key, m === n ? a : a.slice(0, m)]),
  ) as AggregateColumns;
}
