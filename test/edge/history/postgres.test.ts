/**
 * The history in PostgreSQL (scale-out): the same store interface as the embedded DuckDB file,
 * answering the same raw pages, aggregates, last values and export scans; retention by age.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PgStore, type SampleBatch } from '../../../src/edge/history/index.js';
import { pgTestDatabase } from '../../helpers/postgres.js';

const batch = (
  rows: Array<[number, number, number | string]>,
  newTags: Array<[number, string]> = [],
): SampleBatch => ({
  n: rows.length,
  tag: Int32Array.from(rows.map((r) => r[0])),
  ts: Float64Array.from(rows.map((r) => r[1])),
  v: Float64Array.from(rows.map((r) => (typeof r[2] === 'number' ? r[2] : NaN))),
  s: rows.map((r) => (typeof r[2] === 'string' ? r[2] : null)),
  newTags,
});

test('PostgreSQL store: raw, aggregates, last before, scan, reopen, retention by age', async (t) => {
  const db = await pgTestDatabase(t);
  if (!db) return;
  const base = 1_700_000_000_000 - (1_700_000_000_000 % 60_000);
  let store = new PgStore(db.url);
  try {
    assert.equal((await store.open()).size, 0);
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
    await store.close();
    store = new PgStore(db.url);
    assert.deepEqual([...(await store.open())].sort(), [
      ['D.a', 1],
      ['D.b', 2],
    ]);

    const raw = await store.raw({ tags: [1, 2], from: base, to: base + 4000, limit: 2, offset: 1 });
    assert.equal(raw.total, 4);
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
    assert.deepEqual(await store.last([1, 2], base + 2000), [
      { tag: 1, ts: base + 1000, v: 10, s: null },
      { tag: 2, ts: base + 500, v: null, s: 'on' },
    ]);
    assert.deepEqual(
      (await store.scan({ tag: 1, from: base + 1000, to: base + 9000, skip: 1, limit: 10 })).map((s) => s.ts),
      [base + 3000],
    );
    const stats = await store.stats();
    assert.equal(stats.engine, 'postgres');
    assert.equal(stats.values, 4);
    await store.maintain(Date.now(), { maxAgeMs: 1000, maxBytes: 0 });
    assert.equal((await store.stats()).values, 0, 'retention by age deleted every value');
  } finally {
    await store.close();
  }
});
