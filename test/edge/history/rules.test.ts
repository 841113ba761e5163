/** The history's rules: recording policies, bucket choice, and the store's queries on a DuckDB file. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bucketOf,
  chooseBucket,
  keep,
  PolicyTable,
  policyTagProblem,
  type HistoryPolicy,
} from '../../../src/edge/history/index.js';
import { DuckStore } from '../../../src/edge/history/duckdb/repository.js';

const state = (p: Partial<HistoryPolicy>) => ({
  id: 1,
  policy: { tag: '*', mode: 'all' as const, deadband: 0, minIntervalMs: 0, ...p },
  lastTs: -Infinity,
  last: undefined,
});

test('policies: every value, on change, deadband, minimum interval, off', () => {
  const all = state({});
  assert.deepEqual(
    [1, 1, 1].map((v, i) => keep(all, i, v)),
    [true, true, true],
  );
  const change = state({ mode: 'change' });
  assert.deepEqual(
    [1, 1, 2, 2, 'a', 'a'].map((v, i) => keep(change, i, v)),
    [true, false, true, false, true, false],
  );
  const db = state({ mode: 'deadband', deadband: 0.5 });
  assert.deepEqual(
    [10, 10.4, 10.6, 10.2, 11.2].map((v, i) => keep(db, i, v)),
    [true, false, true, false, true],
  );
  const min = state({ minIntervalMs: 1000 });
  assert.deepEqual(
    [0, 500, 999, 1000, 1500, 2100].map((t) => keep(min, t, t)),
    [true, false, false, true, false, true],
  );
  const off = state({ mode: 'off' });
  assert.equal(keep(off, 0, 1), false);
});

test('policies: the most precise pattern wins; bad patterns are named', () => {
  const t = new PolicyTable([
    { tag: '*', mode: 'change', deadband: 0, minIntervalMs: 0 },
    { tag: 'Press.*', mode: 'deadband', deadband: 1, minIntervalMs: 0 },
    { tag: 'Press.Temp', mode: 'off', deadband: 0, minIntervalMs: 0 },
  ]);
  assert.equal(t.of('Press', 'Temp').mode, 'off');
  assert.equal(t.of('Press', 'Speed').mode, 'deadband');
  assert.equal(t.of('Oven', 'Temp').mode, 'change');
  assert.equal(new PolicyTable([]).of('a', 'b').mode, 'all');
  assert.equal(policyTagProblem('Press.Temp'), null);
  assert.equal(policyTagProblem('*'), null);
  assert.match(policyTagProblem('Press') ?? '', /Device\.Tag/);
  assert.match(policyTagProblem('Pr ess.x') ?? '', /device name/);
});

test('buckets: a nice width from the range and the point budget; a given bucket is bounded', () => {
  const day = 86_400_000;
  assert.equal(chooseBucket(0, day, 1000), 120_000);
  assert.equal(chooseBucket(0, 3_600_000, 1000), 5000);
  assert.equal(chooseBucket(0, 1000, 1000), 1);
  assert.equal(bucketOf(0, day, undefined, 60_000), 60_000);
  assert.throws(() => bucketOf(0, day, undefined, 1), /more than 10000 buckets/);
  assert.throws(() => bucketOf(0, day, 0, undefined), /points must be/);
});

test('DuckDB store: raw, aggregates (first, last, min, max, mean, count, time-weighted), last before, after compaction', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mw-history-'));
  const store = new DuckStore({ dir: join(dir, 'h'), memoryMb: 64 });
  try {
    assert.equal((await store.open()).size, 0);
    const base = 1_700_000_000_000 - (1_700_000_000_000 % 60_000);
    // Tag 1: 0 at base, 10 at base+1s, 4 at base+3s; tag 2: text.
    const batch = (
      rows: Array<[number, number, number | string]>,
      newTags: Array<[number, string]> = [],
    ) => ({
      n: rows.length,
      tag: Int32Array.from(rows.map((r) => r[0])),
      ts: Float64Array.from(rows.map((r) => r[1])),
      v: Float64Array.from(rows.map((r) => (typeof r[2] === 'number' ? r[2] : NaN))),
      s: rows.map((r) => (typeof r[2] === 'string' ? r[2] : null)),
      newTags,
    });
    await store.append(
      batch(
        [
          [1, base, 0],
          [1, base + 1000, 10],
          [2, base + 500, 'on'],
        ],
        [
          [1, 'D.a'],
          [2, 'D.b'],
        ],
      ),
    );
    await store.append(batch([[1, base + 3000, 4]]));
    for (const compacted of [false, true]) {
      if (compacted) await store.maintain(base + 10 * 60_000, { maxAgeMs: 0, maxBytes: 0 });
      const raw = await store.raw({ tags: [1, 2], from: base, to: base + 4000, limit: 2, offset: 1 });
      assert.equal(raw.total, 4, `compacted ${compacted}`);
      assert.deepEqual(raw.items, [
        { tag: 2, ts: base + 500, v: null, s: 'on' },
        { tag: 1, ts: base + 1000, v: 10, s: null },
      ]);
      const [agg] = await store.aggregate({
        tags: [1],
        from: base,
        to: base + 4000,
        bucketMs: 4000,
        end: base + 4000,
      });
      assert.deepEqual(
        { ...agg, mean: Math.round(agg!.mean * 1000) / 1000 },
        {
          tag: 1,
          bucket: base,
          first: 0,
          last: 4,
          min: 0,
          max: 10,
          mean: 4.667,
          count: 3,
          twa: (0 * 1 + 10 * 2 + 4 * 1) / 4,
        },
      );
      // Buckets of whole minutes read the per-minute partial aggregates (and `hot`): the same figures.
      const [byMinute] = await store.aggregate({
        tags: [1],
        from: base,
        to: base + 60_000,
        bucketMs: 60_000,
        end: base + 4000,
      });
      assert.deepEqual(
        { ...byMinute, mean: Math.round(byMinute!.mean * 1000) / 1000, twa: null },
        { tag: 1, bucket: base, first: 0, last: 4, min: 0, max: 10, mean: 4.667, count: 3, twa: null },
      );
      // Before the move, the last value holds until `end`; after it, until the end of its minute.
      assert.equal(byMinute!.twa, compacted ? (0 * 1 + 10 * 2 + 4 * 57) / 60 : (0 * 1 + 10 * 2 + 4 * 1) / 4);
      const last = await store.last([1, 2], base + 2000);
      assert.deepEqual(last, [
        { tag: 1, ts: base + 1000, v: 10, s: null },
        { tag: 2, ts: base + 500, v: null, s: 'on' },
      ]);
      assert.equal(
        (await store.scan({ tag: 1, from: base + 1000, to: base + 9000, skip: 1, limit: 10 })).length,
        1,
      );
    }
    await store.maintain(Date.now(), { maxAgeMs: 1000, maxBytes: 0 });
    assert.equal((await store.stats()).values, 0, 'retention by age deleted every value');
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
