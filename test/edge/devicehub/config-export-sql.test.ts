/**
 * The DeviceHub's configuration export and diff over the stored rows on both database dialects:
 * the export text read a batch of devices at a time (`registerCounts`, `exportArrays`) is the text
 * of the export's objects, and `diffCurrent` answers what `diff` of the export answers.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../../helpers/postgres.js';
import {
  createDevicehub,
  devicehubMigrations,
  DevicehubConfigSection,
} from '../../../src/edge/devicehub/index.js';
import type { DevicehubSection } from '../../../src/edge/devicehub/index.js';
import { DevicehubRepository } from '../../../src/edge/devicehub/repository.js';
import { EXPORT_BATCH_TAGS } from '../../../src/edge/devicehub/config-export.js';
import { escapePlaceholders } from '../../../src/edge/config/document.js';

forEachDialect('DeviceHub configuration export over SQL', (ctx) => {
  let repo: DevicehubRepository;
  let section: DevicehubConfigSection;
  before(async () => {
    await ctx.database.migrate([devicehubMigrations]);
    const { service } = createDevicehub(ctx.database);
    repo = new DevicehubRepository(ctx.database);
    section = new DevicehubConfigSection(repo, service);
    // Devices made in an order other than their names', tags of two devices interleaved, one
    // device above a batch's tags, one without tags.
    const big = await service.createDevice({ Name: 'm-big', DriverID: 'Generator' });
    const a = await service.createDevice({ Name: 'z-a', DriverID: 'Generator', Description: '{{x}}' });
    const b = await service.createDevice({ Name: 'b-b', DriverID: 'Generator' });
    await service.createDevice({ Name: 'empty', DriverID: 'Generator' });
    const tag = (DeviceID: string, i: number) => ({
      DeviceID,
      Name: 'S',
      TagName: `t${i}`,
      ValueType: 'float64',
      Description: i % 5 === 0 ? `d {{${i}}}` : '',
      Properties: [{ Name: 'address', Value: String(i) }],
    });
    await service.createRegisters(Array.from({ length: 40 }, (_, i) => tag(i % 2 ? a.ID : b.ID, i)));
    await service.createRegisters(Array.from({ length: EXPORT_BATCH_TAGS + 2 }, (_, i) => tag(big.ID, i)));
  });

  test('registerCounts, and the export text is the text of the escaped export objects', async () => {
    const counts = new Map(await repo.registerCounts());
    assert.equal(
      [...counts.values()].reduce((x, y) => x + y, 0),
      EXPORT_BATCH_TAGS + 42,
    );
    assert.equal(counts.size, 3, 'a device without tags is left out');
    const objects = (await section.export()) as DevicehubSection;
    assert.deepEqual(
      objects.devices.map((d) => d.Name),
      ['b-b', 'empty', 'm-big', 'z-a'],
    );
    assert.equal(await section.exportJson(), JSON.stringify(escapePlaceholders(objects)));
  });

  test('diffCurrent over the stored rows is diff of the export', async () => {
    const current = (await section.export()) as DevicehubSection;
    const next = structuredClone(current);
    next.devices = next.devices.filter((d) => d.Name !== 'empty').reverse();
    next.devices[0]!.Tags![3]!.Description = 'changed';
    next.devices[1]!.Tags!.splice(100, 1);
    next.devices[2]!.Tags!.push({
      TagName: 'added',
      Name: 'S',
      ValueType: 'int32',
      Properties: { address: '1' },
    });
    for (const mode of ['use', 'legacy', 'merge-apply'] as const)
      assert.deepEqual(await section.diffCurrent(next, mode), section.diff(current, next, mode), mode);
    const use = await section.diffCurrent(next, 'use');
    assert.ok(use.removed.includes('empty') && use.added.includes(`${next.devices[2]!.Name}/added`));
    assert.equal(use.changed.length, 1);
  });
});
