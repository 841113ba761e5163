/**
 * The OPC UA module's domain service on both dialects (SQLite and PostgreSQL), without the
 * node-opcua server: the tree and sync runs survive a reopen, a sync interrupted by a stop is
 * Failed at the next open, staged trees and users are stored, settings persist.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../../helpers/postgres.js';
import { createDevicehub, devicehubMigrations, type Devicehub } from '../../../src/edge/devicehub/index.js';
import { opcuaMigrations, OpcuaRepository, OpcuaService } from '../../../src/edge/opcua/index.js';

forEachDialect('OPC UA service', (ctx) => {
  let hub: Devicehub;
  let tagId: string;

  before(async () => {
    await ctx.database.migrate([devicehubMigrations, opcuaMigrations]);
    hub = createDevicehub(ctx.database);
    const dev = await hub.service.createDevice({ Name: 'line1', DriverID: 'Generator' });
    const [tag] = await hub.service.createRegisters([
      {
        DeviceID: dev.ID,
        Name: 'S',
        TagName: 'temp',
        ValueType: 'int16',
        Properties: [{ Name: 'address', Value: '0' }],
      },
    ]);
    tagId = tag!.ID;
  });

  test('a sync is stored with the tree; a reopened service has both', async () => {
    const svc = await OpcuaService.open(new OpcuaRepository(ctx.database), hub.readModel);
    const { run, done } = await svc.sync();
    assert.equal(run.state, 'Running');
    assert.equal(svc.currentSync?.id, run.id);
    const finished = await done;
    assert.deepEqual([finished.state, finished.added], ['Succeeded', 3]);
    const paths = svc.nodesById(null).map((n) => svc.path(n.ref));
    svc.close();

    const again = await OpcuaService.open(new OpcuaRepository(ctx.database), hub.readModel);
    assert.deepEqual(
      again.nodesById(null).map((n) => again.path(n.ref)),
      paths,
    );
    assert.deepEqual(paths, ['DeviceHub', 'DeviceHub/line1', 'DeviceHub/line1/temp']);
    const tag = again.nodesById(['temp'])[0]!;
    assert.deepEqual([tag.originId, tag.dataType, tag.syncState, tag.version], [tagId, 'int16', 'Synced', 1]);
    assert.equal(again.currentSync?.id, run.id);
    assert.equal(again.currentSync?.state, 'Succeeded');
    again.close();
  });

  test('a sync cut by a stop is Failed at the next open', async () => {
    const repo = new OpcuaRepository(ctx.database);
    await repo.saveSync({
      id: '0190f0f0-0000-7000-8000-000000000001',
      state: 'Running',
      trigger: 'Manual',
      startedAt: Date.now() + 60_000,
      finishedAt: null,
      added: 0,
      removed: 0,
      modified: 0,
      error: null,
    });
    const svc = await OpcuaService.open(repo, hub.readModel);
    assert.equal(svc.runningSync, null);
    assert.equal(svc.currentSync?.state, 'Failed');
    assert.match(svc.currentSync?.error ?? '', /the edge stopped during the sync/);
    svc.close();
  });

  test('staged trees, users and settings are stored', async () => {
    const svc = await OpcuaService.open(new OpcuaRepository(ctx.database), hub.readModel);
    const stage = await svc.stageHierarchy([
      { ID: 'Area', Kind: 'Folder', Children: [{ ID: 't', Kind: 'Tag', OriginID: tagId }] },
    ]);
    assert.equal(stage.nodeCount, 2);
    await svc.setUser('operator', 'operator-password');
    await svc.updateSettings({ maxSessions: 3 });
    svc.close();

    const again = await OpcuaService.open(new OpcuaRepository(ctx.database), hub.readModel);
    assert.equal(again.settings.maxSessions, 3);
    assert.equal(await again.checkUser('operator', 'operator-password'), true);
    assert.equal(await again.checkUser('operator', 'wrong'), false);
    const result = await again.commitStagedHierarchy(stage.id);
    assert.deepEqual(result, { added: 2, removed: 3, modified: 0, restartRequired: 0 });
    assert.deepEqual(
      again.nodesById(null).map((n) => [again.path(n.ref), n.syncState]),
      [
        ['Area', 'Local'],
        ['Area/t', 'Synced'],
      ],
    );
    await assert.rejects(again.commitStagedHierarchy(stage.id), /no staged hierarchy/);
    again.close();
    const third = await OpcuaService.open(new OpcuaRepository(ctx.database), hub.readModel);
    assert.equal(third.tree.size, 2);
    third.close();
  });
});
