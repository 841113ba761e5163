/**
 * The DataHub's configuration section (access keys) through its repository, in the apply's
 * transaction: a key whose permissions change keeps working (with the new ones), a key whose
 * secret changes or that mode `use` removes stops at once (revoked: its connections close), a
 * key the template leaves without its secret keeps it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEdgeApp, type EdgeShell } from '../../../src/edge/service.js';
import { edgeConfigWith } from '../../../src/edge/service.js';
import type { ApplyMode } from '../../../src/kernel/service/config-section.js';
import { DatahubConfigSection, type DatahubSection } from '../../../src/edge/datahub/config-section.js';
import type { AccessKeyService } from '../../../src/edge/datahub/service.js';

let shell: EdgeShell;
let keys: AccessKeyService;
let section: DatahubConfigSection;
const revoked: string[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'mw-datahub-section-'));

before(async () => {
  shell = await buildEdgeApp(
    edgeConfigWith({ dataDir, datahubGateway: false, opcuaEnabled: false, logLevel: 'error' }),
  );
  keys = shell.module('datahub').keys;
  keys.onRevoke = (id) => void revoked.push(id);
  section = new DatahubConfigSection(keys.repo, keys);
});
after(async () => {
  await shell.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function apply(next: DatahubSection, mode: ApplyMode) {
  const later: Array<() => void | Promise<void>> = [];
  assert.deepEqual(section.validate(next), []);
  revoked.length = 0;
  await shell.database.transaction((trx) =>
    section.apply(next, {
      mode,
      trx,
      failFast: true,
      fail: () => assert.fail('no item fails here'),
      afterCommit: (fn) => later.push(fn),
      progress: () => undefined,
    }),
  );
  for (const fn of later) await fn();
}

test('changed permissions keep the key; a changed or removed key is revoked; a secret left out stays', async () => {
  const line = await keys.create({ name: 'line-7', publish: ['devicehub.>'] });
  const spare = await keys.create({ name: 'spare', publish: null });
  assert.deepEqual((await keys.authenticate(line.key))?.publish, ['devicehub.>']);
  const own = await section.export();
  for (const mode of ['legacy', 'use', 'merge-apply'] as const)
    assert.deepEqual(section.diff(own, structuredClone(own), mode), {
      added: [],
      changed: [],
      removed: [],
      restarts: [],
    });
  const mine = own.accessKeys.find((k) => k.id === line.id)!;
  const { key: _left, ...withoutKey } = mine;

  await apply({ accessKeys: [{ ...withoutKey, publish: ['twins.>'] }] }, 'legacy');
  assert.deepEqual(revoked, [], 'new permissions: not revoked');
  assert.deepEqual((await keys.authenticate(line.key))?.publish, ['twins.>'], 'the key left out still works');

  await apply(
    { accessKeys: [{ ...mine, publish: ['twins.>'], key: { $secret: 'another-hash' } }] },
    'legacy',
  );
  assert.deepEqual(revoked, [line.id], 'a new secret revokes the old key');
  assert.equal(await keys.authenticate(line.key), null);

  await apply({ accessKeys: [{ ...mine, publish: ['twins.>'] }] }, 'use');
  assert.deepEqual(
    revoked.sort(),
    [spare.id, line.id].sort(),
    'the key use removes, the key whose secret changed',
  );
  assert.equal(await keys.authenticate(spare.key), null, 'a key use removes stops');
  assert.deepEqual(
    (await keys.authenticate(line.key))?.publish,
    ['twins.>'],
    'its secret back: it works again',
  );
});
