/**
 * The edge's high-availability state (src/edge/dm/ha.ts): a grant runs from the moment the
 * request was sent; a lease that is not renewed fences polling when it runs out; a standby or an
 * older epoch never polls; an answer to a forgotten request grants nothing; a paired edge starts
 * fenced; unpaired, it polls.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Database } from '../../../src/kernel/db/index.js';
import { SettingsTable } from '../../../src/kernel/db/settings.js';
import type { LinkMessage } from '../../../src/kernel/link/protocol.js';
import { dmMigrations } from '../../../src/edge/dm/index.js';
import { HaState } from '../../../src/edge/dm/ha.js';
import { eventually, sleep } from '../../helpers/util.js';

let dir: string;
let db: Database;
const log = pino({ level: 'silent' });
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mw-ha-'));
  db = Database.open({ sqlitePath: join(dir, 'edge.db') });
  await db.migrate([dmMigrations]);
});
after(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A HaState linked to a fake manager end that records what the edge sends. */
async function linkedState() {
  const ha = new HaState(new SettingsTable(db.db, 'dm_setting'), log);
  await ha.load();
  const sent: LinkMessage[] = [];
  const changes: boolean[] = [];
  ha.onChange((p) => changes.push(p));
  ha.linked((m) => sent.push(m));
  return { ha, sent, changes };
}

const lastSeq = (sent: LinkMessage[]) => {
  const m = sent.at(-1);
  assert.equal(m?.t, 'lease');
  return (m as { seq: number }).seq;
};

test('unpaired: polls; told active: asks, and polls only once granted, until the lease runs out', async () => {
  const { ha, sent, changes } = await linkedState();
  assert.equal(ha.polling, true);
  assert.equal(sent.length, 0, 'an unpaired edge asks nothing');
  await ha.onMessage({ t: 'ha', pairId: 'P', role: 'active', epoch: 1, leaseMs: 300 });
  assert.equal(ha.polling, false, 'news is no grant');
  const seq = lastSeq(sent);
  await ha.onMessage({ t: 'ha', seq: seq + 100, pairId: 'P', role: 'active', epoch: 1, leaseMs: 300 });
  assert.equal(ha.polling, false, 'an answer to no request grants nothing');
  await ha.onMessage({ t: 'ha', seq, pairId: 'P', role: 'active', epoch: 1, leaseMs: 300 });
  assert.equal(ha.polling, true);
  assert.equal(ha.view().role, 'active');
  ha.unlinked(); // no renewals from now on
  await eventually(() => !ha.polling, 2000, 'the fence');
  assert.deepEqual(changes, [false, true, false]);
  ha.close();
});

test('a standby, an older epoch, and a restart: never polling without a grant', async () => {
  const { ha, sent } = await linkedState();
  // The pair from the previous test was kept: the edge starts fenced.
  assert.equal(ha.polling, false);
  assert.equal(ha.view().pairId, 'P');
  const seq = lastSeq(sent);
  await ha.onMessage({ t: 'ha', seq, pairId: 'P', role: 'standby', epoch: 2, leaseMs: 300 });
  assert.equal(ha.polling, false);
  assert.equal(ha.view().epoch, 2);
  await sleep(150); // a renewal is sent a third of the lease later
  const seq2 = lastSeq(sent);
  assert.ok(seq2 > seq);
  await ha.onMessage({ t: 'ha', seq: seq2, pairId: 'P', role: 'active', epoch: 1, leaseMs: 300 });
  assert.equal(ha.polling, false, 'a grant under an older epoch is ignored');
  await ha.onMessage({ t: 'ha', pairId: null, role: 'none', epoch: 0, leaseMs: 0 });
  assert.equal(ha.polling, true, 'unpaired: polls');
  assert.equal(ha.view().role, 'standalone');
  ha.close();
  const again = await linkedState();
  assert.equal(again.ha.polling, true, 'the unpairing was kept');
  again.ha.close();
});
