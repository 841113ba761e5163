/**
 * Retention by size: a store capped at a size stays under it, plus one batch, over a run that
 * writes ten times that much. The store runs as the edge runs it (the history service, the DuckDB
 * worker, which moves and deletes at once after an append that took it over the cap, and holds
 * the next appends meanwhile). The size is every file of the store's directory (the databases and
 * their write-ahead logs), after every batch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataHub } from '../../../src/edge/datahub/index.js';
import { DuckWorkerStore, HistoryService } from '../../../src/edge/history/index.js';

const MIB = 1024 * 1024;
const BATCH = 50_000;
/** A value's raw size: tag id 4, time 8, value 8 bytes. */
const RAW = 20;

const dirSize = (d: string) => readdirSync(d).reduce((a, f) => a + statSync(join(d, f)).size, 0);

test('a store capped at 4 MiB stays under it plus one batch while 40 MiB of values are written', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mw-history-cap-'));
  const store = join(dir, 'history');
  const cap = 4 * MIB;
  const hub = new DataHub();
  const h = new HistoryService({
    hub,
    store: new DuckWorkerStore({ dir: store, memoryMb: 64 }),
    policies: [],
    retention: { maxAgeMs: 0, maxBytes: cap },
    flushMs: 1000,
    maintainMs: 5000,
    batchSize: 65_536,
    maxTags: 10_000,
    maxPending: 1_000_000,
  });
  try {
    await h.start();
    await h.maintain();
    // Random values of 500 tags, 10 ms apart, from a day ago (every minute of it is over).
    const t0 = Date.now() - 86_400_000;
    let s = 0;
    let max = 0;
    let firstBatch = 0;
    const total = Math.ceil((10 * cap) / RAW / BATCH) * BATCH;
    for (let written = 0; written < total; written += BATCH) {
      for (let k = 0; k < BATCH; k++, s++)
        hub.publish(`devicehub.raw.R.t${k % 500}`, { timestamp: t0 + s * 10, value: Math.random() });
      await h.flush();
      const size = dirSize(store);
      if (written === 0) firstBatch = size;
      max = Math.max(max, size);
    }
    await h.maintain();
    const st = await h.status();
    // One batch: what the first batch took on disk in an empty store (its write-ahead log).
    assert.ok(firstBatch > 0 && firstBatch < 2 * MIB, `first batch ${firstBatch}`);
    assert.ok(
      max <= cap + firstBatch,
      `largest size ${(max / MIB).toFixed(2)} MiB over the cap ${cap / MIB} MiB plus one batch ${(firstBatch / MIB).toFixed(2)} MiB`,
    );
    assert.equal(st.bytes, dirSize(store), 'the status counts every file of the store');
    assert.ok(st.bytes <= cap);
    assert.ok(st.deletedBySize > 0 && st.values > 0, JSON.stringify(st));
    assert.equal(st.values + st.deletedBySize, total, 'every value is kept or deleted by size, once');
    // The oldest values went first: what is kept is the newest.
    assert.equal(st.newest, t0 + (s - 1) * 10);
    assert.equal(st.oldest, t0 + (s - st.values) * 10);
  } finally {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
