/**
 * A store with more tags than fit an INT32 product with the minute (`tag * 60,000`): with 100,000
 * tags the old move into the cold table failed ("Overflow in multiplication of INT32 (35792 *
 * 60000)", seen in the log of a 100,000-tag edge start) and those values never left the hot table.
 * Values of tags numbered past 35,791 go through a move and are read back, raw and aggregated.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DataHub } from '../../../src/edge/datahub/index.js';
import { DuckWorkerStore, HistoryService } from '../../../src/edge/history/index.js';

const TAGS = 40_000;

test('values of tags numbered past 35,791 are moved and read back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mw-history-many-'));
  const hub = new DataHub();
  const errors: string[] = [];
  const h = new HistoryService({
    logger: pino({ level: 'error' }, { write: (line: string) => void errors.push(line) }),
    hub,
    store: new DuckWorkerStore({ dir: join(dir, 'history'), memoryMb: 64 }),
    policies: [],
    retention: { maxAgeMs: 0, maxBytes: 0 },
    flushMs: 1000,
    maintainMs: 60_000,
    batchSize: 65_536,
    maxTags: 100_000,
    maxPending: 1_000_000,
  });
  try {
    await h.start();
    // Two values per tag in a minute an hour ago (over: the next maintenance moves it).
    const t0 = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
    for (const dt of [1000, 2000])
      for (let k = 0; k < TAGS; k++)
        hub.publish(`devicehub.raw.D.t${k}`, { timestamp: t0 + dt, value: k + dt / 1000 });
    await h.flush();
    await h.maintain();
    assert.deepEqual(errors, [], 'the move into the cold store failed');
    const tags = ['D.t0', 'D.t35791', `D.t${TAGS - 1}`];
    const raw = await h.raw({ tags, from: t0, to: t0 + 60_000, limit: 100, offset: 0 });
    assert.equal(raw.total, 6);
    for (const [i, tag] of tags.entries()) {
      const k = Number(tag.slice(3));
      const mine = raw.items.filter((v) => v.tag === tag);
      assert.deepEqual(
        mine.map((v) => [v.ts, v.value]),
        [
          [t0 + 1000, k + 1],
          [t0 + 2000, k + 2],
        ],
        `${tag} (${i})`,
      );
    }
    const agg = await h.aggregate({ tags: [`D.t${TAGS - 1}`], from: t0, to: t0 + 60_000, bucketMs: 60_000 });
    assert.equal(agg.series[0]!.buckets[0]!.count, 2);
    assert.equal(agg.series[0]!.buckets[0]!.max, TAGS - 1 + 2);
  } finally {
    await h.close();
    hub.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
