/**
 * The DeviceHub's configuration section through its repository, in the apply's transaction:
 * devices and tags created, updated and (mode `use`) removed by key; the change event that the
 * acquisition engine follows names what changed (a new tag of a device that exists included);
 * a driver change with tags the template leaves out is refused as an item; a template that is the
 * edge's own configuration changes nothing and restarts nothing, in every mode.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEdgeApp, type EdgeShell } from '../../../src/edge/service.js';
import { edgeConfigWith } from '../../../src/edge/service.js';
import type { ApplyMode } from '../../../src/kernel/service/config-section.js';
import type { DevicehubSection } from '../../../src/edge/devicehub/config-section.js';
import type { Devicehub } from '../../../src/edge/devicehub/index.js';
import type { DevicehubChange } from '../../../src/edge/devicehub/types.js';

let shell: EdgeShell;
let hub: Devicehub;
const changes: DevicehubChange[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'mw-devicehub-section-'));

before(async () => {
  shell = await buildEdgeApp(
    edgeConfigWith({ dataDir, datahubGateway: false, opcuaEnabled: false, logLevel: 'error' }),
  );
  hub = shell.module('devicehub');
  hub.readModel.onChange((c) => changes.push(c));
});
after(async () => {
  await shell.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Applies `next` in a transaction of the edge's database, as the configuration module does. */
async function apply(next: DevicehubSection, mode: ApplyMode, failFast = true) {
  const later: Array<() => void | Promise<void>> = [];
  const failed: Array<{ item: string; message: string }> = [];
  changes.length = 0;
  const section = hub.configSection;
  const issues = section.validate(next);
  assert.deepEqual(issues, []);
  await shell.database.transaction((trx) =>
    section.apply(next, {
      mode,
      trx,
      failFast,
      fail: (item, message) => failed.push({ item, message }),
      afterCommit: (fn) => later.push(fn),
      progress: () => undefined,
    }),
  );
  for (const fn of later) await fn();
  return { failed, change: changes[0] };
}

const tag = (TagName: string, address: string) => ({
  TagName,
  Name: 'S',
  ValueType: 'float64',
  Properties: { address },
});

const exported = () => hub.configSection.export();
const idOf = async (device: string, tagName?: string) => {
  const d = (await exported()).devices.find((x) => x.Name === device)!;
  return tagName ? d.Tags!.find((t) => t.TagName === tagName)!.ID! : d.ID!;
};

test('created, then the same template again: nothing changes, nothing restarts', async () => {
  const doc = { devices: [{ Name: 'd1', DriverID: 'Generator', Tags: [tag('t1', '1'), tag('t2', '2')] }] };
  const first = await apply(doc, 'legacy');
  assert.deepEqual(first.change, { devices: [await idOf('d1')], tags: [] }, 'a new device brings its tags');
  const again = await apply(doc, 'legacy');
  assert.equal(again.change, undefined, 'no change event');
  const own = await exported();
  for (const mode of ['legacy', 'use', 'merge-apply'] as const) {
    const diff = hub.configSection.diff(own, structuredClone(own), mode);
    assert.deepEqual(diff, { added: [], changed: [], removed: [], restarts: [] }, mode);
  }
  const diff = hub.configSection.diff(
    own,
    { devices: [{ Name: 'd1', DriverID: 'Generator', Tags: [tag('t9', '9')] }] },
    'merge-apply',
  );
  assert.deepEqual(diff.added, ['d1/t9']);
  assert.deepEqual(
    diff.restarts,
    ['acquisition'],
    'a merge-apply that changes something restarts acquisition',
  );
});

test('a new tag of a device that exists is named in the change, also when the device changes', async () => {
  const deviceId = await idOf('d1');
  const onlyTag = await apply(
    { devices: [{ Name: 'd1', DriverID: 'Generator', Tags: [tag('t3', '3')] }] },
    'legacy',
  );
  assert.deepEqual(onlyTag.change, { devices: [], tags: [{ id: await idOf('d1', 't3'), deviceId }] });
  const both = await apply(
    { devices: [{ Name: 'd1', DriverID: 'Generator', Description: 'line 1', Tags: [tag('t4', '4')] }] },
    'legacy',
  );
  assert.deepEqual(both.change?.devices, [deviceId]);
  assert.deepEqual(both.change?.tags, [{ id: await idOf('d1', 't4'), deviceId }]);
  const changed = await apply(
    { devices: [{ Name: 'd1', DriverID: 'Generator', Description: 'line 1', Tags: [tag('t1', '11')] }] },
    'legacy',
  );
  assert.deepEqual(changed.change, { devices: [], tags: [{ id: await idOf('d1', 't1'), deviceId }] });
  assert.deepEqual(
    (await exported()).devices[0]!.Tags!.map((t) => t.TagName).sort(),
    ['t1', 't2', 't3', 't4'],
    'legacy keeps the tags the template does not name',
  );
});

test('a driver change with tags the template leaves out fails as an item; use makes the device the template', async () => {
  const deviceId = await idOf('d1');
  const doc = {
    devices: [
      { Name: 'd1', DriverID: 'Generic Device', Properties: { serialPort: '/dev/ttyUSB0' } },
      { Name: 'd2', DriverID: 'Generator' },
    ],
  };
  await assert.rejects(apply(doc, 'legacy'), (err: Error & { status?: number }) => {
    assert.equal(err.status, 409, err.message);
    assert.match(
      err.message,
      /^section devicehub: devices\[0\] \(d1\): device "d1": DriverID cannot change while the device has 4 tags/,
    );
    return true;
  });
  const skipped = await apply(doc, 'legacy', false);
  assert.deepEqual(
    skipped.failed.map((f) => f.item),
    ['devicehub: devices[0] (d1)'],
  );
  const generator = (await exported()).devices[0]!.DriverID;
  assert.deepEqual(
    (await exported()).devices.map((d) => [d.Name, d.DriverID, d.Tags!.length]),
    [
      ['d1', generator, 4],
      ['d2', generator, 0],
    ],
    'd2 applied, d1 untouched',
  );
  const tagIds = (await exported()).devices[0]!.Tags!.map((t) => t.ID!);
  const used = await apply(
    { devices: [{ Name: 'd1', DriverID: 'Generic Device', Properties: { serialPort: '/dev/ttyUSB0' } }] },
    'use',
  );
  const after = await exported();
  assert.deepEqual(
    after.devices.map((d) => [d.Name, d.Tags!.length]),
    [['d1', 0]],
  );
  assert.equal(after.devices[0]!.ID, deviceId, 'the device keeps its ID');
  const d2 = skipped.change!.devices[0]!;
  assert.deepEqual(used.change?.devices.sort(), [deviceId, d2].sort());
  assert.deepEqual(used.change?.tags.map((t) => t.id).sort(), [...tagIds].sort());
});
