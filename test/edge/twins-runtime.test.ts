/**
 * The twins' runtime on the in-process bus, without HTTP: payload assembly along the hierarchy,
 * transformations, stale marks, nested instances, cycles found at resolution, run-time failures
 * marked per attribute and logged at most once a minute.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Database } from '../../src/kernel/db/index.js';
import { DataHub } from '../../src/edge/datahub/index.js';
import { twinsMigrations, TwinsService, TwinRuntime } from '../../src/edge/twins/index.js';
import { TwinsRepository } from '../../src/edge/twins/repository.js';

let db: Database;
let hub: DataHub;
let service: TwinsService;
let runtime: TwinRuntime;
const logged: string[] = [];

before(async () => {
  db = Database.open({ sqlitePath: ':memory:' });
  await db.migrate([twinsMigrations]);
  hub = new DataHub();
  service = await TwinsService.load(new TwinsRepository(db));
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line).msg) });
  runtime = new TwinRuntime({ hub, service, logger });
});
after(async () => {
  runtime.close();
  hub.close();
  await db.close();
});

function nextOn(subject: string, ms = 2000): Promise<any> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`nothing on ${subject} within ${ms} ms`));
    }, ms);
    const sub = hub.subscribe(subject, {
      max: 1,
      callback: (m) => {
        clearTimeout(timer);
        resolve(m.data);
      },
    });
  });
}
// Timers of the runtime under test (publish intervals, staleness): time is the test.
const settle = () => new Promise((r) => setTimeout(r, 60));
const STALE_MS = 1500;

test('payload along the hierarchy, with a transformation, a static attribute and stale marks', async () => {
  // Long enough that the first evaluation of the transformation (its sandbox starting, on a machine
  // loaded by the other test files) does not age the fresh value past it.
  const m = await service.createModel({ Name: 'Pump', Assets: 'pump', StaleAfterMs: STALE_MS });
  const tr = await service.createTransformation({ Name: 'bar', Expression: '$round(value / 100000, 2)' });
  const p = await service.createDynamic({
    ModelID: m.id,
    Name: 'Pressure',
    Topic: 'devicehub.raw.{{Device}}.p',
    TransformationID: tr.id,
  });
  await service.createDynamic({ ModelID: m.id, Name: 'Speed', Topic: 'devicehub.raw.{{Device}}.s' });
  const v = await service.createKeyValue('static', { ModelID: m.id, Key: 'Vendor', Value: 'ACME' });
  await service.createKeyValue('parameter', { ModelID: m.id, Key: 'Device', Value: 'gen' });
  await service.saveAllHierarchy(m.id, [
    {
      Node: { Name: 'Nameplate', IsFolder: true },
      Childs: [{ Node: { Name: 'Vendor', AttributeID: v.id } }],
    },
    { Node: { Name: 'Process', IsFolder: true }, Childs: [{ Node: { Name: 'Bar', AttributeID: p.id } }] },
  ]);
  const i = await service.createInstance({ ModelID: m.id, Name: 'p1' });
  await settle();
  // The first evaluation starts the expression sandbox (a process of its own): seconds on a loaded
  // machine, which would age the value below past StaleAfterMs. Warm it up first.
  const warm = nextOn(i.topic, 60_000);
  hub.publish('devicehub.raw.gen.p', { success: true, value: 100000, timestamp: Date.now() });
  assert.equal((await warm).data.Process.Bar, 1);
  const payload = nextOn(i.topic);
  hub.publish('devicehub.raw.gen.p', { success: true, value: 250000, timestamp: Date.now() });
  const got = await payload;
  assert.deepEqual(got.data, { Nameplate: { Vendor: 'ACME' }, Process: { Bar: 2.5 } });
  assert.deepEqual(got.stale, ['Speed'], 'no input yet');
  assert.equal(got.ageMs.Speed, null);
  assert.ok(got.ageMs.Pressure >= 0 && got.ageMs.Pressure < STALE_MS);
  assert.deepEqual(got.errors, {});
  // Time is the test: the values age.
  await new Promise((r) => setTimeout(r, STALE_MS + 50));
  const later = nextOn(i.topic);
  hub.publish('devicehub.raw.gen.s', { value: 1450 });
  const l = await later;
  assert.deepEqual(l.stale, ['Pressure'], 'older than StaleAfterMs');
  assert.ok(l.ageMs.Pressure >= STALE_MS);
  assert.equal(l.data.Process.Bar, 2.5, 'the last value is kept, marked stale');
});

test('a transformation failing at run time marks the attribute, not the instance, and is logged once', async () => {
  const m = await service.createModel({ Name: 'Valve', Assets: 'valve' });
  const tr = await service.createTransformation({
    Name: 'fails',
    Expression: '$number(value) + $undefinedFn()',
  });
  await service.createDynamic({ ModelID: m.id, Name: 'Pos', Topic: 'valve.pos', TransformationID: tr.id });
  await service.createDynamic({ ModelID: m.id, Name: 'Ok', Topic: 'valve.ok' });
  const i = await service.createInstance({ ModelID: m.id, Name: 'v1' });
  await settle();
  const before = logged.length;
  for (let k = 0; k < 5; k++) {
    const next = nextOn(i.topic);
    hub.publish('valve.pos', { value: k });
    const got = await next;
    assert.match(got.errors.Pos, /transformation failed: .*T1006/);
    assert.equal(got.data.Pos, null);
  }
  const next = nextOn(i.topic);
  hub.publish('valve.ok', { value: 'fine' });
  assert.equal((await next).data.Ok, 'fine');
  assert.equal(runtime.status(i.id)!.state, 'running');
  assert.deepEqual(runtime.status(i.id)!.failedAttributes, ['Pos']);
  assert.equal(logged.slice(before).filter((x) => x.includes('attribute Pos')).length, 1);
});

test('a nested instance is embedded; a cycle is an error naming it; the others keep running', async () => {
  const motorModel = await service.createModel({ Name: 'Motor', Assets: 'motor' });
  await service.createDynamic({ ModelID: motorModel.id, Name: 'Amps', Topic: 'motor.{{Name}}.amps' });
  await service.createKeyValue('parameter', { ModelID: motorModel.id, Key: 'Name', Value: 'm' });
  const motor = await service.createInstance({ ModelID: motorModel.id, Name: 'm1' });
  const skid = await service.createModel({ Name: 'Skid', Assets: 'skid' });
  await service.createDynamic({
    ModelID: skid.id,
    Name: 'Motor',
    Type: 'nestedModel',
    NestedInstanceID: motor.id,
  });
  const s1 = await service.createInstance({ ModelID: skid.id, Name: 's1' });
  await settle();
  const got = nextOn(s1.topic);
  hub.publish('motor.m.amps', { value: 12 });
  assert.deepEqual((await got).data, { Motor: { Amps: 12 } });

  // a ↔ b: a cycle, found when resolved
  const loop = await service.createModel({ Name: 'Loop', Assets: 'loop' });
  const a = await service.createInstance({ ModelID: loop.id, Name: 'a' });
  const b = await service.createInstance({ ModelID: loop.id, Name: 'b' });
  await service.createDynamic({
    ModelID: loop.id,
    InstanceID: a.id,
    Name: 'Next',
    Type: 'nestedModel',
    NestedInstanceID: b.id,
  });
  await service.createDynamic({
    ModelID: loop.id,
    InstanceID: b.id,
    Name: 'Next',
    Type: 'nestedModel',
    NestedInstanceID: a.id,
  });
  await settle();
  assert.equal(runtime.status(a.id)!.state, 'error');
  assert.equal(runtime.status(a.id)!.error, 'nesting cycle: a → b → a');
  assert.equal(runtime.status(b.id)!.state, 'error');
  assert.equal(runtime.status(s1.id)!.state, 'running');
  const still = nextOn(s1.topic);
  hub.publish('motor.m.amps', { value: 13 });
  assert.deepEqual((await still).data, { Motor: { Amps: 13 } });
});

test('a payload past the maximum puts the instance in error instead of publishing it', async () => {
  const db2 = Database.open({ sqlitePath: ':memory:' });
  await db2.migrate([twinsMigrations]);
  const hub2 = new DataHub();
  const s2 = await TwinsService.load(new TwinsRepository(db2));
  const rt2 = new TwinRuntime({ hub: hub2, service: s2, maxPayloadBytes: 400 });
  try {
    const m = await s2.createModel({ Name: 'Big', Assets: 'big' });
    await s2.createDynamic({ ModelID: m.id, Name: 'Blob', Topic: 'big.blob' });
    const i = await s2.createInstance({ ModelID: m.id, Name: 'b1' });
    rt2.rebuild();
    let published = 0;
    hub2.subscribe(i.topic, () => published++);
    hub2.publish('big.blob', { value: 'x'.repeat(1000) });
    await settle();
    assert.equal(published, 0);
    assert.equal(rt2.status(i.id)!.state, 'error');
    assert.match(rt2.status(i.id)!.error!, /payload of \d+ bytes exceeds the maximum of 400/);
  } finally {
    rt2.close();
    hub2.close();
    await db2.close();
  }
});

test('the configuration section: export, merge, diff, and apply in the apply transaction by mode', async () => {
  const { twinsConfigSection } = await import('../../src/edge/twins/config-section.js');
  type Section = Awaited<ReturnType<ReturnType<typeof twinsConfigSection>['export']>>;
  const section = twinsConfigSection(service);
  const doc = await section.export();
  assert.ok(doc.models.some((m) => m.Name === 'Pump' && m.Instances!.some((i) => i.Name === 'p1')));
  const pumpDoc = doc.models.find((m) => m.Name === 'Pump')!;
  assert.ok(pumpDoc.Hierarchy!.length > 0, 'the hierarchy is exported');
  assert.ok(JSON.stringify(pumpDoc.Hierarchy).includes('"AttributeKind":"dynamic"'));
  const loop = doc.models.find((m) => m.Name === 'Loop')!;
  assert.deepEqual(loop.Instances![0]!.DynamicAttributes![0]!.NestedInstance, {
    Model: 'Loop',
    Instance: 'b',
  });
  assert.deepEqual(section.validate({ models: [{ Name: '' }], transformations: [] }), [
    { path: 'models[0].Assets', message: 'Assets is required' },
    { path: 'models[0].Name', message: 'must not be empty' },
  ]);
  assert.match(
    JSON.stringify(section.validate({ models: [], transformations: [{ Name: 'x', Expression: '$round(' }] })),
    /transformations\[0\]\.Expression/,
  );

  const db2 = Database.open({ sqlitePath: ':memory:' });
  await db2.migrate([twinsMigrations]);
  const s2 = await TwinsService.load(new TwinsRepository(db2));
  const hub2 = new DataHub();
  const rt2 = new TwinRuntime({ hub: hub2, service: s2 });
  const other = twinsConfigSection(s2);
  const apply = async (next: Section, mode: 'legacy' | 'use' | 'merge-apply', failFast = true) => {
    const after: Array<() => void | Promise<void>> = [];
    const failed: Array<{ item: string; message: string }> = [];
    await db2.transaction((trx) =>
      other.apply(next, {
        mode,
        trx,
        failFast,
        fail: (item, message) => failed.push({ item, message }),
        afterCommit: (fn) => after.push(fn),
        progress: () => undefined,
      }),
    );
    for (const fn of after) await fn();
    return failed;
  };
  try {
    assert.equal(
      other.diff(await other.export(), doc, 'merge-apply').added.length,
      doc.models.length + doc.transformations.length,
    );
    await apply(doc, 'use');
    // By name, the same configuration: nested instances, instance-level attributes and all.
    const again = await other.export();
    assert.deepEqual(again, doc);
    assert.deepEqual(other.diff(again, doc, 'use'), { added: [], changed: [], removed: [], restarts: [] });
    await settle();
    assert.equal(rt2.twinCount, s2.instances.size, 'the runtime follows the committed configuration');
    const p1 = [...s2.instances.values()].find((i) => i.name === 'p1')!;
    assert.equal(rt2.status(p1.id)!.state, 'running');

    // merge: by name, the template wins, nested lists united; the models it changes are named.
    const tpl: Section = {
      transformations: [],
      models: [{ Name: 'Pump', Assets: 'pump2', Instances: [{ Name: 'p9' }] }],
    };
    const { merged, overwrites } = other.merge(again, tpl);
    assert.deepEqual(overwrites, ['models.Pump']);
    const pump = merged.models.find((m) => m.Name === 'Pump')!;
    assert.equal(pump.Assets, 'pump2');
    assert.deepEqual(pump.Instances!.map((i) => i.Name).sort(), ['p1', 'p9']);
    assert.equal(merged.models.length, again.models.length);
    assert.deepEqual(other.diff(again, tpl, 'merge-apply').changed, ['models.Pump']);
    assert.deepEqual(other.diff(again, tpl, 'legacy').removed, []);
    assert.ok(other.diff(again, tpl, 'use').removed.includes('models.Loop'));

    // An item the rules refuse: with failFast it aborts everything, without it is skipped.
    const bad: Section = {
      transformations: [],
      models: [
        {
          Name: 'Gate',
          Assets: 'gate',
          Instances: [{ Name: 'g1', Topic: 'devicehub.g1' }, { Name: 'g2' }],
        },
      ],
    };
    await assert.rejects(
      apply(bad, 'legacy'),
      /section twins: models\[0\]\.Instances\[0\] \(g1\): .*reserved/,
    );
    assert.deepEqual(await other.export(), doc, 'nothing of the failed apply stays');
    const failed = await apply(bad, 'legacy', false);
    assert.deepEqual(
      failed.map((f) => f.item),
      ['twins: models[0].Instances[0] (g1)'],
    );
    const gate = (await other.export()).models.find((m) => m.Name === 'Gate')!;
    assert.deepEqual(
      gate.Instances!.map((i) => i.Name),
      ['g2'],
    );

    // merge-apply keeps what the template does not name; use makes the section exactly it.
    await apply(tpl, 'merge-apply');
    const merged2 = await other.export();
    assert.equal(merged2.models.find((m) => m.Name === 'Pump')!.Assets, 'pump2');
    assert.equal(merged2.models.length, doc.models.length + 1);
    await apply({ transformations: [], models: [] }, 'use');
    assert.deepEqual(await other.export(), { transformations: [], models: [] });
    await settle();
    assert.equal(rt2.twinCount, 0);
    await apply(doc, 'legacy');
    assert.deepEqual(await other.export(), doc);
  } finally {
    rt2.close();
    hub2.close();
    await db2.close();
  }
});

test('a model with PublishIntervalMs publishes at that interval without inputs, marking them stale', async () => {
  const m = await service.createModel({
    Name: 'Tank',
    Assets: 'tank',
    PublishOnChange: false,
    PublishIntervalMs: 100,
    StaleAfterMs: 0,
  });
  await service.createDynamic({ ModelID: m.id, Name: 'Level', Topic: 'tank.level' });
  const i = await service.createInstance({ ModelID: m.id, Name: 't1' });
  await settle();
  const seen: any[] = [];
  const sub = hub.subscribe(i.topic, (msg) => void seen.push(msg.data));
  hub.publish('tank.level', { value: 3 }); // no payload of its own: PublishOnChange is off
  // Time is the test: nothing is published (PublishOnChange off).
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(seen.length, 0);
  // Time is the test: the interval publishes.
  await new Promise((r) => setTimeout(r, 350));
  sub.unsubscribe();
  assert.ok(seen.length >= 2 && seen.length <= 5, `${seen.length} payloads in 370 ms`);
  assert.equal(seen.at(-1).data.Level, 3);
  assert.ok(seen.at(-1).ageMs.Level >= seen[0].ageMs.Level, 'the age grows between payloads');
  assert.deepEqual(seen.at(-1).stale, [], 'StaleAfterMs 0 never marks');
});
