/**
 * The high-availability lease on SQLite and PostgreSQL: two manager processes (two handles on
 * one database) racing to hand the role over move it once; the former active can no longer renew
 * under the old epoch; no takeover while the active renews, or while the pair is disabled; one
 * pair per device.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../helpers/postgres.js';
import { haMigrations } from '../../src/manager/ha/index.js';
import { HaRepository, type HaPairRow } from '../../src/manager/ha/repository.js';

function pair(id: string, primary: string, secondary: string, renewedAt: number): HaPairRow {
  return {
    id,
    project_id: 'p',
    primary_device_id: primary,
    secondary_device_id: secondary,
    enabled: 1,
    active_device_id: primary,
    epoch: 1,
    timeout_ms: 6000,
    lease_ms: 3000,
    renewed_at: renewedAt,
    interface: null,
    created_at: renewedAt,
    updated_at: renewedAt,
  };
}

forEachDialect('high-availability repository', (ctx) => {
  let a: HaRepository;
  let b: HaRepository;
  before(async () => {
    await ctx.database.migrate([haMigrations]);
    a = new HaRepository(ctx.database);
    b = new HaRepository(ctx.reopen(ctx.database));
  });

  test('two processes racing to hand the role over move it once, with epoch + 1', async () => {
    const now = Date.now();
    await a.insert(pair('race', 'p1', 's1', now - 10_000));
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).takeOver('race', 1, 's1', now, now - 6000)),
    );
    assert.equal(results.filter(Boolean).length, 1, JSON.stringify(results));
    const after = await b.pairOf('p1');
    assert.equal(after?.active_device_id, 's1');
    assert.equal(after?.epoch, 2);
    // The former active renews under its old epoch: refused.
    assert.equal(await a.renew('race', 1, 'p1', now), false);
    assert.equal(await a.renew('race', 2, 's1', now), true);
    // Found by either member.
    assert.equal((await a.pairOf('s1'))?.id, 'race');
  });

  test('no takeover while the active renews, nor while the pair is disabled', async () => {
    const now = Date.now();
    await a.insert(pair('calm', 'p2', 's2', now - 1000));
    assert.equal(await b.takeOver('calm', 1, 's2', now, now - 6000), false);
    assert.equal(await a.renew('calm', 1, 'p2', now - 20_000), true);
    await a.setEnabled('calm', false, now);
    assert.equal(await b.takeOver('calm', 1, 's2', now, now - 6000), false, 'disabled');
    await a.setEnabled('calm', true, now);
    assert.equal(await b.takeOver('calm', 1, 's2', now, now - 6000), true, 'enabled and stale');
    // A stale epoch cannot take it (back) over.
    assert.equal(await a.takeOver('calm', 1, 'p2', now + 30_000, now + 30_000), false);
  });

  test('one pair per device column', async () => {
    const now = Date.now();
    await a.insert(pair('one', 'p3', 's3', now));
    await assert.rejects(a.insert(pair('two', 'p3', 'x3', now)));
    await assert.rejects(a.insert(pair('three', 'y3', 's3', now)));
    assert.equal((await a.pairsOf(['p3', 's3'])).length, 1);
    await a.delete('one');
    assert.equal(await a.pairOf('p3'), undefined);
  });
});
