/**
 * The engine applies DeviceHub changes incrementally, against real Modbus TCP peers: a one-tag
 * update reads that one tag by ID (no re-read of all devices or tags, counted on a wrapper around
 * the DeviceHub's read model) and reads it at once with its new settings; no device reconnects
 * and no other tag is read again. A device whose connection settings change is the only one that
 * reconnects. `GetTagStatus` answers from the engine's own tag state (`TagStatusSource`).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../../../src/kernel/db/index.js';
import { DataHub } from '../../../src/edge/datahub/index.js';
import {
  createDevicehub,
  devicehubMigrations,
  type DeviceHubService,
  type DevicehubReadModel,
} from '../../../src/edge/devicehub/index.js';
import { ACQUISITION_DRIVERS, AcquisitionEngine } from '../../../src/edge/acquisition/index.js';
import { ModbusPeer } from '../../helpers/peers/modbus.js';
import { eventually } from '../../helpers/util.js';

const dir = mkdtempSync(join(tmpdir(), 'mw-acq-changes-'));
let db: Database;
let service: DeviceHubService;
let readModel: DevicehubReadModel;
const peers = [new ModbusPeer(1024), new ModbusPeer(1024)];

before(async () => {
  db = Database.open({ sqlitePath: join(dir, 'edge.db') });
  await db.migrate([devicehubMigrations]);
  ({ service, readModel } = createDevicehub(db));
  for (const [i, p] of peers.entries()) {
    for (let a = 0; a < 1024; a++) p.holding[a] = (a * 3 + i) & 0xffff;
    await p.start();
  }
});
after(async () => {
  for (const p of peers) await p.stop();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The read model with every call recorded: `[method, argument count or 'all']`. */
function counting(model: DevicehubReadModel) {
  const calls: Array<[string, number | 'all']> = [];
  const wrapped: DevicehubReadModel = {
    devices: (ids) => (calls.push(['devices', ids ? ids.length : 'all']), model.devices(ids)),
    tagsOfDevices: (ids) => (calls.push(['tagsOfDevices', ids.length]), model.tagsOfDevices(ids)),
    tags: (ids) => (calls.push(['tags', ids.length]), model.tags(ids)),
    onChange: (l) => model.onChange(l),
    setTagStatusSource: (s) => model.setTagStatusSource(s),
  };
  return { wrapped, calls };
}

const TAGS = 200;

test('a one-tag update re-reads that tag only and reschedules only it; a device change restarts only that device', async () => {
  const hub = new DataHub();
  const { wrapped, calls } = counting(readModel);
  const devices: string[] = [];
  for (const [i, p] of peers.entries()) {
    const d = await service.createDevice({
      Name: `plc${i}`,
      DriverID: 'Modbus TCP',
      Properties: [
        { Key: 'host', Value: '127.0.0.1' },
        { Key: 'port', Value: String(p.port) },
      ],
    });
    devices.push(d.ID);
    await service.createRegisters(
      Array.from({ length: TAGS }, (_, a) => ({
        DeviceID: d.ID,
        Name: 'HR',
        TagName: `hr${a}`,
        ValueType: 'uint16',
        // Long: no tick in the test's time, so that every read seen was caused by a change.
        IntervalMs: 600_000,
        Properties: [{ Name: 'address', Value: String(a) }],
      })),
    );
  }
  const [d0, d1] = devices as [string, string];
  const engine = new AcquisitionEngine({
    hub,
    devicehub: wrapped,
    drivers: ACQUISITION_DRIVERS,
    dataDir: dir,
    publishValue: 'always',
  });
  await engine.start();
  after(() => engine.stop());
  // Start: every device once, then each device's tags, one device at a time.
  assert.deepEqual(calls, [
    ['devices', 'all'],
    ['tagsOfDevices', 1],
    ['tagsOfDevices', 1],
  ]);
  // 200 registers in blocks of at most 100 (the default): two requests per device for the first read.
  await eventually(() => peers.every((p) => p.reads[3] === 2), 5000, 'first reads');
  const tag = (
    await service.listRegisters({ DeviceID: d0, TagPattern: 'hr7', TagPatternSearchOption: 'EXACT' }, false)
  ).Registers[0]!;
  await eventually(async () => (await service.tagStatus([tag.ID]))[0]!.State === 'OK', 3000, 'tag OK');
  const ok = (await service.tagStatus([tag.ID]))[0]!;
  assert.equal(ok.Reason, '');
  assert.ok(ok.UpdateTime !== null);

  // One tag: new formula and description.
  calls.length = 0;
  const before = peers.map((p) => p.reads[3]);
  const seen = new Promise<{ value: unknown; description: string }>((resolve) => {
    const sub = hub.subscribe('devicehub.raw.plc0.hr7', (m) => {
      const p = m.json<{ value: unknown; description: string }>();
      if (p.description === 'doubled') {
        sub.unsubscribe();
        resolve(p);
      }
    });
  });
  const t0 = performance.now();
  await service.updateRegister({ ID: tag.ID, TagFormula: 'x * 2', Description: 'doubled' });
  const got = await seen;
  const took = performance.now() - t0;
  assert.equal(got.value, peers[0]!.holding[7]! * 2);
  assert.ok(took < 1000, `first value with the new settings after ${took.toFixed(0)} ms`);
  // Time is the test: nothing else is read in the next 100 ms.
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(calls, [['tags', 1]], 'the changed tag is read by ID, nothing else');
  assert.equal(peers[0]!.reads[3], before[0]! + 1, 'one request: the changed tag alone');
  assert.equal(peers[1]!.reads[3], before[1], 'the other device is not read');
  assert.deepEqual(
    [engine.deviceStatus(d0)!.connects, engine.deviceStatus(d1)!.connects],
    [1, 1],
    'no reconnect',
  );
  assert.equal(engine.deviceStatus(d0)!.tags, TAGS);

  // A device change that keeps its connection settings: read again, not restarted.
  calls.length = 0;
  await service.updateDevice({ ID: d1, Description: 'line 2' });
  // Time is the test: nothing else is read in the next 100 ms.
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(calls, [['devices', 1]]);
  assert.deepEqual([engine.deviceStatus(d0)!.connects, engine.deviceStatus(d1)!.connects], [1, 1]);

  // A connection setting of one device: that device alone reconnects and reads its tags.
  calls.length = 0;
  const before2 = peers.map((p) => p.reads[3]);
  await service.updateDevice({ ID: d1, Properties: [{ Key: 'maxRegistersPerRequest', Value: '120' }] });
  await eventually(
    () => engine.deviceStatus(d1)?.connects === 1 && peers[1]!.reads[3] === before2[1]! + 2,
    3000,
    'the changed device reconnected and read',
  ).catch((err: Error) => {
    const st = engine.deviceStatus(d1);
    throw new Error(
      `${err.message}: ${JSON.stringify([st?.state, st?.reason, st?.connects, st?.tags, peers[1]!.reads[3] - before2[1]!, calls])}`,
    );
  });

  assert.deepEqual(calls, [
    ['devices', 1],
    ['tagsOfDevices', 1],
  ]);
  assert.equal(engine.deviceStatus(d0)!.connects, 1);
  assert.equal(peers[0]!.reads[3], before2[0], 'the unchanged device is not read again');

  // A deleted tag leaves its runner; the others run on.
  calls.length = 0;
  await service.deleteRegisters([tag.ID]);
  await eventually(() => engine.deviceStatus(d0)!.tags === TAGS - 1, 2000, 'tag removed');
  assert.deepEqual(calls, [['tags', 1]]);

  // GetTagStatus reads the engine's state; without a running engine, Unknown.
  const other = (await service.listRegisters({ DeviceID: d1, Limit: 1 }, false)).Registers[0]!;
  assert.equal((await service.tagStatus([other.ID]))[0]!.State, 'OK');
  await engine.stop();
  const unknown = (await service.tagStatus([other.ID]))[0]!;
  assert.deepEqual([unknown.State, unknown.UpdateTime], ['Unknown', null]);
  await service.deleteDevices(devices);
});
