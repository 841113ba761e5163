/** The DeviceHub service on both database dialects: tags, keyset paging, patterns, CSV, cascades. */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../../helpers/postgres.js';
import {
  createDevicehub,
  devicehubMigrations,
  type DeviceHubService,
} from '../../../src/edge/devicehub/index.js';

forEachDialect('DeviceHub service', (ctx) => {
  let svc: DeviceHubService;
  before(async () => {
    await ctx.database.migrate([devicehubMigrations]);
    svc = createDevicehub(ctx.database).service;
  });

  test('tags: keyset walk in creation order, patterns, counts', async () => {
    const a = await svc.createDevice({ Name: 'a', DriverID: 'Generator' });
    const b = await svc.createDevice({ Name: 'b', DriverID: 'Generator', AliasTopics: true });
    const names = Array.from({ length: 30 }, (_, i) => `${i % 3 === 0 ? 'Temp' : 'flow'}_${i}`);
    await svc.createRegisters(
      names.map((n, i) => ({
        DeviceID: i < 20 ? a.ID : b.ID,
        Name: 'S',
        TagName: n,
        ValueType: 'float64',
        Properties: [{ Name: 'address', Value: String(i) }],
      })),
    );
    const walked: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page = await svc.listRegisters({ Limit: 8, ...(cursor ? { ContinueFrom: cursor } : {}) }, true);
      assert.equal(page.TotalCount, 30);
      walked.push(...page.Registers.map((r) => r.TagName));
      if (page.Registers.length < 8) break;
      cursor = page.Last;
    }
    assert.deepEqual(walked, names);
    assert.equal(
      (await svc.listRegisters({ TagPattern: 'temp', TagPatternSearchOption: 'CONTAINS' }, true)).TotalCount,
      10,
    );
    assert.equal(
      (await svc.listRegisters({ TagPattern: 'FLOW_1', TagPatternSearchOption: 'STARTS_WITH' }, true))
        .TotalCount,
      8,
    );
    assert.equal(
      (await svc.listRegisters({ TagPattern: 'Temp_0', TagPatternSearchOption: 'EXACT' }, true)).TotalCount,
      1,
    );
    assert.equal((await svc.listRegisters({ DeviceID: b.ID, Limit: 1000 }, false)).TotalCount, 10);
    const devs = await svc.listDevices({ Filter: { AliasTopics: { Eq: true } } });
    assert.deepEqual(
      devs.Items.map((d) => d.Name),
      ['b'],
    );

    const csv = await svc.exportCsv();
    assert.equal(await svc.deleteDevices([a.ID]), 1);
    assert.equal((await svc.listRegisters({}, true)).TotalCount, 10, 'the device took its tags along');
    const again = await svc.createDevice({ Name: 'a', DriverID: 'Generator' });
    const status = await svc.uploadCsv(csv);
    assert.deepEqual(status.Stats, { Total: 30, Created: 20, Updated: 10, Failed: 0 });
    assert.equal(await svc.exportCsv([again.ID, b.ID]), csv);
  });
});
