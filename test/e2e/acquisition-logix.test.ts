/**
 * The Logix Ethernet drivers end to end against a Logix tag server started here on a free port
 * (test/helpers/peers/logix.ts: our own EtherNet/IP + CIP server, written from the public
 * specifications; no Logix simulator is installable on this machine). Browse, tags created from
 * the browse result, reads of controller and program tags, arrays, UDT members and a STRING in
 * Multiple Service Packets, writes through Command, a program download (symbol instances renumbered:
 * the tag list is reloaded), and the controller stopped (Failed) and started again (OK).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StringCodec } from 'nats';
import { browseAll, nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { CIP, LogixPeer, STRING_UDT, type Udt } from '../helpers/peers/logix.js';
import { eventually } from '../helpers/util.js';

const sc = StringCodec();
const MOTOR: Udt = {
  name: 'Motor',
  id: 0x0123,
  size: 12,
  members: [
    { name: 'Speed', type: CIP.REAL, offset: 0 },
    { name: 'Running', type: CIP.BOOL, offset: 4 },
    { name: 'Count', type: CIP.DINT, offset: 8 },
  ],
};

function makePeer(): LogixPeer {
  const peer = new LogixPeer();
  peer.add('Counter', CIP.DINT).data.writeInt32LE(42);
  peer.add('Temp', CIP.REAL).data.writeFloatLE(21.5);
  const levels = peer.add('Levels', CIP.INT, { count: 10 });
  for (let i = 0; i < 10; i++) levels.data.writeInt16LE(i * 3, i * 2);
  const m = peer.add('Pump', MOTOR);
  m.data.writeFloatLE(1500, 0);
  m.data[4] = 1;
  m.data.writeInt32LE(9, 8);
  const s = peer.add('Msg', STRING_UDT);
  s.data.writeInt32LE(5, 0);
  s.data.write('hello', 4, 'latin1');
  peer.add('Step', CIP.DINT, { program: 'Main' }).data.writeInt32LE(7);
  peer.add('Total', CIP.LINT).data.writeBigInt64LE(1234567890123n);
  for (let i = 0; i < 30; i++) peer.add(`Fill${i}`, CIP.DINT).data.writeInt32LE(i);
  return peer;
}

describe('acquisition: Logix Ethernet', () => {
  let e: AcqEdge;
  let peer: LogixPeer;
  let port: number;
  let dev: string;
  let sym: string;
  const ids: string[] = [];

  before(async () => {
    peer = makePeer();
    [e, port] = await Promise.all([startAcqEdge(), peer.start()]);
    dev = await e.createDevice('plc1', 'Logix Ethernet', { host: '127.0.0.1', port: String(port) });
    sym = await e.createDevice('plc2', 'Logix Ethernet Advanced', {
      host: '127.0.0.1',
      port: String(port),
      accessMode: '0',
    });
  });
  after(async () => {
    await e.stop();
    await peer.stop();
  });

  test('browse lists controller and program tags, UDT members and arrays; the selection creates tags', async () => {
    const items = await browseAll(e, dev);
    assert.equal(items.get('Controller/Counter')?.ValueType, 'dint');
    assert.equal(items.get('Controller/Pump.Speed')?.ValueType, 'real');
    assert.equal(items.get('Controller/Msg')?.ValueType, 'string');
    assert.deepEqual(items.get('Controller/Levels')?.Properties, [
      { Name: 'tagName', Value: 'Levels' },
      { Name: 'arrayLength', Value: '10' },
    ]);
    assert.equal(items.get('Program:Main/Program:Main.Step')?.ValueType, 'dint');
    const step = nextMessage(e.nc, 'devicehub.raw.plc1.Program:Main_Step', (p) => p.success, 20_000);
    const speed = nextMessage(e.nc, 'devicehub.raw.plc1.Pump_Speed', (p) => p.success, 20_000);
    const created = await e.ok(
      `mutation($in: CreateRegistersByFoldersSelectionRequest!) { BrowseTask_CreateRegistersByFoldersSelection(input: $in) { Created Registers { ID } } }`,
      {
        in: {
          TaskID: (items as unknown as { taskId: string }).taskId,
          Folders: ['Controller', 'Program:Main'],
          IntervalMs: 200,
        },
      },
    );
    const made = created.BrowseTask_CreateRegistersByFoldersSelection;
    assert.ok(made.Created >= 39, JSON.stringify(made.Created));
    ids.push(...made.Registers.map((r: { ID: string }) => r.ID));
    assert.equal((await step).value, 7);
    assert.equal((await speed).value, 1500);
  });

  test('reads: many tags per Multiple Service Packet, arrays, members, STRING, LINT', async () => {
    const levels = nextMessage(e.nc, 'devicehub.raw.plc1.Levels', (p) => p.success, 10_000);
    const msg = nextMessage(e.nc, 'devicehub.raw.plc1.Msg', (p) => p.success, 10_000);
    const total = nextMessage(e.nc, 'devicehub.raw.plc1.Total', (p) => p.success, 10_000);
    assert.deepEqual((await levels).value, [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]);
    assert.equal((await msg).value, 'hello');
    assert.equal((await total).value, 1234567890123);
    // 40-odd tags of one interval: a few Multiple Service Packets per cycle, not one request per tag.
    const before = { requests: peer.requests, reads: peer.tagReads };
    await eventually(() => peer.tagReads - before.reads >= ids.length * 5, 20_000, 'five cycles read');
    const perRequest = (peer.tagReads - before.reads) / (peer.requests - before.requests);
    assert.ok(perRequest >= 8, `tags per request: ${perRequest}`);
    assert.ok((peer.served.get(0x0a) ?? 0) > 0);
  });

  test('writes through Command: DINT, a UDT member, a STRING; a wrong type is refused by the controller', async () => {
    const [counter, speed, text, step] = await e.createTags(sym, [
      {
        Name: 'R',
        TagName: 'counter',
        ValueType: 'dint',
        IntervalMs: 200,
        Properties: { tagName: 'Counter' },
      },
      {
        Name: 'R',
        TagName: 'speed',
        ValueType: 'real',
        IntervalMs: 200,
        Properties: { tagName: 'Pump.Speed' },
      },
      { Name: 'R', TagName: 'text', ValueType: 'string', IntervalMs: 200, Properties: { tagName: 'Msg' } },
      {
        Name: 'R',
        TagName: 'step',
        ValueType: 'int',
        IntervalMs: 200,
        Properties: { tagName: 'Program:Main.Step' },
      },
    ]);
    assert.ok(counter && speed && text && step);
    await nextMessage(e.nc, 'devicehub.raw.plc2.counter', (p) => p.success, 15_000);
    const w = async (tag: string, v: string) =>
      (await e.nc.request(`devicehub.command.plc2.${tag}`, sc.encode(v), { timeout: 10_000 })).json<{
        success: boolean;
        error?: string;
      }>();
    assert.equal((await w('counter', '-77')).success, true);
    assert.equal(peer.find('Counter').data.readInt32LE(0), -77);
    assert.equal((await w('speed', '12.5')).success, true);
    assert.equal(peer.find('Pump').data.readFloatLE(0), 12.5);
    assert.equal((await w('text', '"line 3 ok"')).success, true);
    const s = peer.find('Msg').data;
    assert.equal(s.subarray(4, 4 + s.readInt32LE(0)).toString('latin1'), 'line 3 ok');
    // Step is a DINT in the controller; written as an INT the controller answers a type mismatch.
    const bad = await w('step', '5');
    assert.equal(bad.success, false);
    assert.match(bad.error ?? '', /0x2107|data type/);
    await nextMessage(e.nc, 'devicehub.raw.plc1.Counter', (p) => p.value === -77, 10_000);
  });

  test('a program download (new symbol instances) reloads the tag list; values go on', async () => {
    peer.find('Counter').data.writeInt32LE(1001);
    peer.renumber();
    await nextMessage(e.nc, 'devicehub.raw.plc1.Counter', (p) => p.success && p.value === 1001, 20_000);
  });

  test('the controller stopped fails the tags; started again they come back', async () => {
    const failed = nextMessage(e.nc, 'devicehub.raw.plc1.Counter', (p) => p.success === false, 15_000);
    await peer.stop();
    assert.match((await failed).error, /closed|not connected|no answer/);
    await eventually(
      async () => (await e.tagStates(ids)).every((s) => s.State === 'Failed'),
      15_000,
      'Failed',
    );
    assert.equal(e.t.edge.acquisition.deviceStatus(dev)!.state, 'failed');
    const back = nextMessage(e.nc, 'devicehub.raw.plc1.Counter', (p) => p.success, 30_000);
    await peer.start(port);
    await back;
    await eventually(async () => (await e.tagStates(ids)).every((s) => s.State === 'OK'), 15_000, 'all OK');
  });
});
