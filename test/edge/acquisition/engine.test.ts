/**
 * The engine's connection state machine and scheduler with a scripted driver: capped exponential
 * backoff, lost connections, one read per interval group at a time, stop.
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
import {
  AcquisitionEngine,
  type DriverContext,
  type DriverFactory,
  type TagSpec,
} from '../../../src/edge/acquisition/index.js';
import { eventually } from '../../helpers/util.js';

const dir = mkdtempSync(join(tmpdir(), 'mw-acq-engine-'));
let db: Database;
let service: DeviceHubService;
let readModel: DevicehubReadModel;

before(async () => {
  db = Database.open({ sqlitePath: join(dir, 'edge.db') });
  await db.migrate([devicehubMigrations]);
  ({ service, readModel } = createDevicehub(db));
});
after(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A driver whose connects fail `failures` times, then succeed; reads take `readMs`. */
function scripted(opts: { failures: number; readMs: number }) {
  const log = {
    connects: [] as number[],
    reads: 0,
    /** Milliseconds spent inside reads. */
    busyMs: 0,
    concurrent: 0,
    maxConcurrent: 0,
    ctx: undefined as DriverContext | undefined,
  };
  let failures = opts.failures;
  const factory: DriverFactory = {
    key: 'modbus-tcp',
    create: (_device, ctx) => ({
      async connect() {
        log.connects.push(Date.now());
        log.ctx = ctx;
        if (failures-- > 0) throw new Error('connection refused (scripted)');
      },
      async close() {},
      async read(tags: readonly TagSpec[]) {
        log.reads++;
        log.concurrent++;
        log.maxConcurrent = Math.max(log.maxConcurrent, log.concurrent);
        const t0 = performance.now();
        await new Promise((r) => setTimeout(r, opts.readMs));
        log.busyMs += performance.now() - t0;
        log.concurrent--;
        return tags.map(() => 1);
      },
      async write() {},
    }),
  };
  return { factory, log };
}

test('connect failures back off exponentially up to the cap; then connected; a lost connection reconnects; stop', async () => {
  const hub = new DataHub();
  const { factory, log } = scripted({ failures: 5, readMs: 1 });
  const engine = new AcquisitionEngine({
    hub,
    devicehub: readModel,
    drivers: [factory],
    dataDir: dir,
    backoffInitialMs: 20,
    backoffMaxMs: 80,
  });
  const dev = await service.createDevice({
    Name: 'd1',
    DriverID: 'Modbus TCP',
    Properties: [{ Key: 'host', Value: '127.0.0.1' }],
  });
  await service.createRegisters([
    {
      DeviceID: dev.ID,
      Name: 'HR',
      TagName: 't',
      ValueType: 'uint16',
      IntervalMs: 20,
      Properties: [{ Name: 'address', Value: '0' }],
    },
  ]);
  const states: string[] = [];
  const failures: unknown[] = [];
  hub.subscribe('devicehub.raw.d1.t', (m) => {
    const p = m.json<{ success: boolean }>();
    if (!p.success) failures.push(p);
  });
  await engine.start();
  after(() => engine.stop());
  const watch = setInterval(() => {
    const s = engine.deviceStatus(dev.ID)?.state;
    if (s && states[states.length - 1] !== s) states.push(s);
  }, 2);
  await eventually(() => engine.deviceStatus(dev.ID)?.state === 'connected', 3000, 'connected');
  const gaps = log.connects.slice(1).map((t, i) => t - log.connects[i]!);
  assert.equal(log.connects.length, 6);
  // 20, 40, 80, 80, 80 ms (timers may run a little late, never early)
  assert.ok(gaps[0]! >= 18 && gaps[1]! >= 38 && gaps[2]! >= 78, gaps.join(','));
  assert.ok(gaps[3]! < 150 && gaps[4]! < 150, `capped: ${gaps.join(',')}`);
  assert.match(JSON.stringify(failures[0]), /connection refused \(scripted\)/);
  const tagId = (await service.listRegisters({ DeviceID: dev.ID }, false)).Registers[0]!.ID;
  await eventually(async () => (await service.tagStatus([tagId]))[0]!.State === 'OK', 3000, 'tag OK');

  log.ctx!.lost('peer went away');
  await eventually(() => engine.deviceStatus(dev.ID)!.connects === 2, 3000, 'reconnected');
  assert.ok(states.includes('failed'));
  await engine.stop();
  clearInterval(watch);
  assert.equal(engine.deviceStatus(dev.ID), undefined);
  await service.deleteDevices([dev.ID]);
});

/** A Modbus TCP device with one holding-register tag polled every `intervalMs`. */
async function oneTagDevice(Name: string, IntervalMs: number) {
  const dev = await service.createDevice({
    Name,
    DriverID: 'Modbus TCP',
    Properties: [{ Key: 'host', Value: '127.0.0.1' }],
  });
  await service.createRegisters([
    {
      DeviceID: dev.ID,
      Name: 'HR',
      TagName: 't',
      ValueType: 'uint16',
      IntervalMs,
      Properties: [{ Name: 'address', Value: '0' }],
    },
  ]);
  return dev;
}

test('a slow device: one read per group at a time, overruns counted', async () => {
  const hub = new DataHub();
  const { factory, log } = scripted({ failures: 0, readMs: 60 });
  const engine = new AcquisitionEngine({ hub, devicehub: readModel, drivers: [factory], dataDir: dir });
  const dev = await oneTagDevice('d2', 10);
  await engine.start();
  after(() => engine.stop());
  await eventually(() => engine.deviceStatus(dev.ID)!.overruns > 0 && log.reads >= 3, 10_000, 'overruns');
  const st = engine.deviceStatus(dev.ID)!;
  await engine.stop();
  assert.equal(log.maxConcurrent, 1);
  assert.ok(st.overruns > 0);
  assert.ok(log.reads >= 3);
  await service.deleteDevices([dev.ID]);
});

test('a device slower than its interval is read back to back, not every other tick', async () => {
  const hub = new DataHub();
  // Reads of 25 ms every 20 ms: skipping the ticks that come during a read (the old scheduler)
  // kept the device busy 25 ms of every 40 (62%); the catch-up read keeps it busy all the time.
  const { factory, log } = scripted({ failures: 0, readMs: 25 });
  const engine = new AcquisitionEngine({ hub, devicehub: readModel, drivers: [factory], dataDir: dir });
  const dev = await oneTagDevice('d3', 20);
  await engine.start();
  after(() => engine.stop());
  await eventually(() => log.reads >= 2, 10_000, 'reading');
  const reads0 = log.reads;
  const busy0 = log.busyMs;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 1500));
  const share = (log.busyMs - busy0) / (performance.now() - t0);
  await engine.stop();
  assert.equal(log.maxConcurrent, 1);
  assert.ok(
    share > 0.85,
    `the device was read ${(share * 100).toFixed(0)}% of the time (${log.reads - reads0} reads)`,
  );
  await service.deleteDevices([dev.ID]);
});
