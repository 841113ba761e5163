/**
 * A kill -9 during ingest: the history store (the recorder, its DuckDB worker and file, as the edge
 * runs them) is killed while 10,000 values a second are published; after a restart the store
 * opens and holds every value older than one second before the kill.
 *
 * The child is this file run with HISTORY_CRASH_DIR set: a DataHub and the history service,
 * publishing 1,000 tags every 100 ms. It also moves its values to segments every 700 ms (as if a
 * minute had passed: each move rotates the hot file), so that the kill lands in moves as well:
 * the reopened store finishes an interrupted move, without losing or doubling a value.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DataHub } from '../../src/edge/datahub/index.js';
import { DuckWorkerStore, HistoryService } from '../../src/edge/history/index.js';
import { DuckStore } from '../../src/edge/history/duckdb/repository.js';

const TAGS = 1000;
const TICK = 100;

if (process.env.HISTORY_CRASH_DIR) {
  const hub = new DataHub();
  const history = new HistoryService({
    hub,
    store: new DuckWorkerStore({ dir: join(process.env.HISTORY_CRASH_DIR, 'history'), memoryMb: 64 }),
    policies: [],
    retention: { maxAgeMs: 0, maxBytes: 0 },
    flushMs: 250,
    maintainMs: 1000,
    batchSize: 65_536,
    maxTags: 100_000,
    maxPending: 2_000_000,
  });
  await history.start();
  setInterval(() => void history.maintain(Date.now() + 65_000), 700);
  const t0 = Math.ceil(Date.now() / TICK) * TICK;
  process.stdout.write(`start ${t0}\n`);
  let i = 0;
  setInterval(() => {
    for (; t0 + i * TICK <= Date.now(); i++) {
      const ts = t0 + i * TICK;
      for (let k = 0; k < TAGS; k++) {
        hub.publish(`devicehub.raw.D${k % 10}.T${k}`, { success: true, timestamp: ts, value: (i + k) % 50 });
      }
    }
  }, 20);
} else {
  test('kill -9 during ingest loses at most the last second, and the store opens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mw-history-crash-'));
    try {
      const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
        env: { ...process.env, HISTORY_CRASH_DIR: dir },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const t0 = await new Promise<number>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /start (\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.on('exit', () => reject(new Error(`the child exited: ${out}`)));
      });
      // A few seconds of ingest (compaction runs every second in the child, so the kill may land in one).
      await new Promise((r) => setTimeout(r, 4000 + Math.random() * 2000));
      const killedAt = Date.now();
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));

      const store = new DuckStore({ dir: join(dir, 'history'), memoryMb: 64 });
      const tags = await store.open();
      try {
        assert.equal(tags.size, TAGS);
        const upTo = killedAt - 1000;
        const ticks = Math.floor((upTo - t0) / TICK) + 1;
        assert.ok(ticks > 20, `ticks ${ticks}`);
        const ids = [...tags.values()];
        const page = await store.raw({ tags: ids, from: t0, to: upTo + 1, limit: 1, offset: 0 });
        assert.equal(
          page.total,
          ticks * TAGS,
          `values older than one second before the kill: ${page.total} of ${ticks * TAGS}`,
        );
        const stats = await store.stats();
        assert.ok(stats.values >= ticks * TAGS);
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
