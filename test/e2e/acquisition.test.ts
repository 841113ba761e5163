/**
 * The acquisition engine end to end with the Generator driver: devices and tags configured
 * through /devicehub/v2, values seen on NATS through the edge's gateway in the payload of the wire
 * notes, AliasTopics, TagFormula, PublishCoV, writes through Command/WriteResponse, tag status,
 * changes taking effect without a restart, and /devicehub/metrics.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StringCodec } from 'nats';
import { nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { eventually } from '../helpers/util.js';

const sc = StringCodec();
let e: AcqEdge;

before(async () => {
  e = await startAcqEdge();
});
after(() => e.stop());

describe('acquisition: Generator', () => {
  test('a sine on register S arrives on the raw and alias subjects in the documented payload', async () => {
    const dev = await e.createDevice('gen1', 'Generator', {}, { AliasTopics: true, MetaData: { line: 3 } });
    const raw = nextMessage(e.nc, 'devicehub.raw.gen1.sine');
    const alias = nextMessage(e.nc, 'devicehub.alias.gen1.sine');
    const [id] = await e.createTags(dev, [
      {
        Name: 'S',
        TagName: 'sine',
        ValueType: 'float64',
        IntervalMs: 100,
        Description: 'a sine',
        MetaData: { unit: 'bar' },
        Properties: { address: '0', amplitude: '2', periodMs: '1000' },
      },
    ]);
    const p = await raw;
    assert.deepEqual(Object.keys(p).sort(), [
      'datatype',
      'description',
      'deviceID',
      'deviceName',
      'metadata',
      'registerId',
      'success',
      'tagName',
      'timestamp',
      'value',
    ]);
    assert.equal(p.success, true);
    assert.equal(p.datatype, 'float64');
    assert.equal(p.registerId, id);
    assert.equal(p.deviceID, dev);
    assert.equal(p.deviceName, 'gen1');
    assert.equal(p.tagName, 'sine');
    assert.equal(p.description, 'a sine');
    assert.deepEqual(p.metadata, { unit: 'bar' });
    assert.ok(Math.abs(p.timestamp - Date.now()) < 2000);
    assert.ok(typeof p.value === 'number' && Math.abs(p.value) <= 2);
    const a = await alias;
    assert.equal(a.registerId, id);
    await eventually(async () => (await e.tagStates([id!]))[0]!.State === 'OK', 3000, 'tag state OK');
  });

  test('ramp, square, random and constant signals, and the value subject', async () => {
    const dev = await e.createDevice('gen2', 'Generator', { seed: '42' });
    await e.createTags(dev, [
      {
        Name: 'R',
        TagName: 'ramp',
        ValueType: 'float64',
        IntervalMs: 50,
        Properties: { address: '0', amplitude: '10', periodMs: '1000' },
      },
      {
        Name: 'Q',
        TagName: 'square',
        ValueType: 'bool',
        IntervalMs: 50,
        Properties: { address: '0', periodMs: '200' },
      },
      {
        Name: 'N',
        TagName: 'noise',
        ValueType: 'int32',
        IntervalMs: 50,
        Properties: { address: '0', amplitude: '100' },
      },
      {
        Name: 'K',
        TagName: 'konst',
        ValueType: 'string',
        IntervalMs: 50,
        Properties: { address: '0', value: 'hello' },
      },
    ]);
    const ramp = await nextMessage(e.nc, 'devicehub.raw.gen2.ramp', (p) => p.value > 0);
    assert.ok(ramp.value >= 0 && ramp.value <= 10);
    await nextMessage(e.nc, 'devicehub.raw.gen2.square', (p) => p.value === true);
    await nextMessage(e.nc, 'devicehub.raw.gen2.square', (p) => p.value === false);
    const noise = await nextMessage(e.nc, 'devicehub.raw.gen2.noise');
    assert.equal(noise.datatype, 'int64');
    assert.ok(Number.isInteger(noise.value) && Math.abs(noise.value) <= 100);
    const k = await nextMessage(e.nc, 'devicehub.raw.gen2.konst');
    assert.equal(k.value, 'hello');
    assert.equal(k.datatype, 'string');
    assert.equal(await nextMessage(e.nc, 'devicehub.value.gen2.konst'), 'hello');
  });

  test('TagFormula is applied to the raw value; a bad formula fails the tag with the reason', async () => {
    const dev = await e.createDevice('gen3', 'Generator');
    const [, bad] = await e.createTags(dev, [
      {
        Name: 'K',
        TagName: 'scaled',
        ValueType: 'int16',
        IntervalMs: 50,
        TagFormula: 'x * 2.5 + 1',
        Properties: { address: '0', value: '4' },
      },
      {
        Name: 'K',
        TagName: 'broken',
        ValueType: 'int16',
        IntervalMs: 50,
        TagFormula: 'x +* 2',
        Properties: { address: '1', value: '4' },
      },
    ]);
    const p = await nextMessage(e.nc, 'devicehub.raw.gen3.scaled');
    assert.equal(p.value, 11);
    const b = await nextMessage(e.nc, 'devicehub.raw.gen3.broken');
    assert.equal(b.success, false);
    assert.match(b.error, /TagFormula/);
    await eventually(async () => (await e.tagStates([bad!]))[0]!.State === 'Failed', 3000, 'Failed');
    assert.match((await e.tagStates([bad!]))[0]!.Reason, /unexpected "\*"/);
  });

  test('PublishCoV publishes a constant once, and again when it changes', async () => {
    const dev = await e.createDevice('gen4', 'Generator');
    // Subscribed before the tag exists: its first value may follow the CreateRegisters at once.
    const got: number[] = [];
    const sub = e.nc.subscribe('devicehub.raw.gen4.c', {
      callback: (_e, m) => got.push(m.json<{ value: number }>().value),
    });
    await e.nc.flush();
    const [id] = await e.createTags(dev, [
      {
        Name: 'K',
        TagName: 'c',
        ValueType: 'int32',
        IntervalMs: 20,
        PublishCoV: true,
        Properties: { address: '0', value: '7' },
      },
    ]);
    // Time is the test: with PublishCoV, one value in 400 ms of 20 ms polls.
    await new Promise((r) => setTimeout(r, 400));
    assert.deepEqual(got, [7]);
    // An update takes effect on the running engine, no restart.
    await e.ok(`mutation($in: UpdateRegisterRequest!) { UpdateRegister(input: $in) { ID } }`, {
      in: { ID: id, Properties: [{ Name: 'value', Value: '8' }] },
    });
    await eventually(() => got.includes(8), 3000, 'value 8');
    // Time is the test: no second 8.
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(got, [7, 8]);
    sub.unsubscribe();
  });

  test('writing through Command answers on WriteResponse; M holds the value; read-only registers refuse', async () => {
    const dev = await e.createDevice('gen5', 'Generator');
    await e.createTags(dev, [
      { Name: 'M', TagName: 'mem', ValueType: 'float64', IntervalMs: 50, Properties: { address: '3' } },
      { Name: 'S', TagName: 'sine', ValueType: 'float64', IntervalMs: 50, Properties: { address: '0' } },
    ]);
    await nextMessage(e.nc, 'devicehub.raw.gen5.mem');
    const resp = nextMessage(e.nc, 'devicehub.writeresponse.gen5.mem');
    e.nc.publish('devicehub.command.gen5.mem', sc.encode('12.5'));
    const r = await resp;
    assert.equal(r.success, true);
    assert.equal(r.value, 12.5);
    await nextMessage(e.nc, 'devicehub.raw.gen5.mem', (p) => p.value === 12.5);
    // As a request, with { "value": ... }; a read-only register answers the error.
    const reply = await e.nc.request('devicehub.command.gen5.sine', sc.encode('{"value": 1}'), {
      timeout: 2000,
    });
    const err = reply.json<{ success: boolean; error: string }>();
    assert.equal(err.success, false);
    assert.match(err.error, /read-only/);
    const bad = await e.nc.request('devicehub.command.gen5.mem', sc.encode('"abc"'), { timeout: 2000 });
    assert.match(bad.json<{ error: string }>().error, /not a number/);
  });

  test('deleting tags and devices stops their publishing; renaming a device renames its subjects', async () => {
    const dev = await e.createDevice('gen6', 'Generator');
    await e.createTags(dev, [
      { Name: 'S', TagName: 's', ValueType: 'float64', IntervalMs: 20, Properties: { address: '0' } },
    ]);
    await nextMessage(e.nc, 'devicehub.raw.gen6.s');
    await e.ok(`mutation($in: UpdateDeviceRequest!) { UpdateDevice(input: $in) { ID } }`, {
      in: { ID: dev, Name: 'gen6b' },
    });
    await nextMessage(e.nc, 'devicehub.raw.gen6b.s');
    await e.ok(`mutation($ids: [ID!]!) { DeleteDevices(IDs: $ids) }`, { ids: [dev] });
    // Time is the test: the deleted device stops...
    await new Promise((r) => setTimeout(r, 100));
    let after = 0;
    const sub = e.nc.subscribe('devicehub.raw.gen6b.>', { callback: () => after++ });
    // ...and publishes nothing more.
    await new Promise((r) => setTimeout(r, 300));
    sub.unsubscribe();
    assert.equal(after, 0);
    assert.equal(e.t.edge.acquisition.deviceStatus(dev), undefined);
  });

  test('/devicehub/metrics: Prometheus text with device state and counters; needs credentials', async () => {
    const dev = await e.createDevice('gen7', 'Generator');
    await e.createTags(dev, [
      { Name: 'S', TagName: 's', ValueType: 'float64', IntervalMs: 20, Properties: { address: '0' } },
    ]);
    await nextMessage(e.nc, 'devicehub.raw.gen7.s');
    const noAuth = await e.t.call('/devicehub/metrics');
    assert.equal(noAuth.status, 401);
    const res = await e.t.call('/devicehub/metrics', { headers: { authorization: e.auth } });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(res.text, /^loopedge_dh_device_state\{alias="gen7",[^}]*\} 1$/m);
    const reads = /^loopedge_dh_device_reads_total\{alias="gen7",[^}]*\} (\d+)$/m.exec(res.text);
    assert.ok(reads && Number(reads[1]) > 0);
    assert.match(res.text, /^loopedge_dh_device_read_errors_total\{alias="gen7",[^}]*\} 0$/m);
    assert.match(res.text, /^loopedge_dh_device_read_duration_seconds_count\{alias="gen7",[^}]*\} \d+$/m);
  });
});
