/**
 * The S7 driver end to end against snap7's own server (node-snap7's S7Server, in a child process
 * of the test's own on a free port, behind a relay that counts the read requests): every area and
 * type read, the reads of one cycle in one request, a missing data block failing only its tag,
 * writes read back with snap7's client, the server killed (tags Failed) and restarted (the device
 * reconnects after ReconnectInterval), browse of the named areas and tags from the selection.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { StringCodec } from 'nats';
import { browseAll, nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { S7Peer } from '../helpers/peers/s7.js';
import { eventually } from '../helpers/util.js';
import type { Snap7Client } from '../../src/edge/acquisition/drivers/s7.js';

const sc = StringCodec();
const snap7 = createRequire(import.meta.url)('node-snap7') as { S7Client: new () => Snap7Client };

/** A direct snap7 client on the server, to check what the edge wrote. */
async function readBack(port: number, area: number, db: number, start: number, size: number, wl = 0x02) {
  const c = new snap7.S7Client();
  c.SetParam(2, port);
  await new Promise<void>((res, rej) =>
    c.ConnectTo('127.0.0.1', 0, 1, (e) => (e ? rej(new Error(c.ErrorText(e))) : res())),
  );
  try {
    return await new Promise<Buffer>((res, rej) =>
      c.ReadArea(area, db, start, size, wl, (e, b) => (e ? rej(new Error(c.ErrorText(e))) : res(b))),
    );
  } finally {
    c.Disconnect();
  }
}

const TAGS: Array<[string, string, string, Record<string, string>, unknown]> = [
  ['real', 'DB', 'float32', { dbNumber: '1', address: '0' }, 21.5],
  ['int', 'DB', 'int16', { dbNumber: '1', address: '4' }, -1234],
  ['word', 'DB', 'uint16', { dbNumber: '1', address: '6' }, 54321],
  ['dint', 'DB', 'int32', { dbNumber: '1', address: '8' }, -100000],
  ['dword', 'DB', 'uint32', { dbNumber: '1', address: '12' }, 3000000000],
  ['x0', 'DB', 'bool', { dbNumber: '1', address: '16', bit: '0' }, true],
  ['x1', 'DB', 'bool', { dbNumber: '1', address: '16', bit: '1' }, false],
  ['byte', 'DB', 'byte', { dbNumber: '1', address: '17' }, 200],
  ['text', 'DB', 'string', { dbNumber: '1', address: '18', length: '20' }, 'hello'],
  ['db2', 'DB', 'int16', { dbNumber: '2', address: '100' }, 777],
  ['mw10', 'M', 'int16', { address: '10' }, 42],
  ['m3_7', 'M', 'bool', { address: '3', bit: '7' }, true],
  ['i0_5', 'I', 'bool', { address: '0', bit: '5' }, true],
  ['ib0', 'I', 'byte', { address: '0' }, 0b10100001],
  ['q0_0', 'Q', 'bool', { address: '0', bit: '0' }, false],
  ['t4', 'T', 'uint32', { address: '4' }, 123_000],
  ['c8', 'C', 'uint16', { address: '8' }, 42],
];

describe('acquisition: S7', () => {
  let e: AcqEdge;
  const peer = new S7Peer();
  let dev: string;
  const ids = new Map<string, string>();

  before(async () => {
    await peer.start();
    e = await startAcqEdge();
    dev = await e.createDevice('plc1', 'S7', {
      host: '127.0.0.1',
      port: String(peer.port),
      ReconnectInterval: '1',
      browseAreas: 'DB2:100-103, M10-11, I0, T4-5, C8',
    });
    await eventually(
      () => e.t.edge.acquisition.deviceStatus(dev)?.state === 'connected',
      15_000,
      'connected',
    );
  });
  after(async () => {
    await e?.stop();
    await peer.stop();
  });

  test('every area and type reads its value; one cycle is one request; a missing DB fails its tag only', async () => {
    const want = [...TAGS, ['missing', 'DB', 'int16', { dbNumber: '9', address: '0' }, null] as const];
    const got = new Map<string, Promise<any>>();
    for (const [name] of want)
      got.set(
        name,
        nextMessage(e.nc, `devicehub.raw.plc1.${name}`, () => true, 15_000),
      );
    const r0 = (await peer.stats()).reads;
    const made = await e.createTags(
      dev,
      want.map(([TagName, Name, ValueType, Properties]) => ({
        TagName,
        Name,
        ValueType,
        Properties,
        IntervalMs: 60_000,
      })),
    );
    want.forEach(([name], k) => ids.set(name, made[k]!));
    for (const [name, , type, , value] of TAGS) {
      const p = await got.get(name)!;
      assert.equal(p.success, true, `${name}: ${p.error}`);
      if (type === 'float32') assert.ok(Math.abs(p.value - (value as number)) < 1e-6, name);
      else assert.equal(p.value, value, name);
    }
    const missing = await got.get('missing')!;
    assert.equal(missing.success, false);
    assert.match(missing.error, /DB9/);
    // 18 tags in 8 areas: one ReadVar request of 8 items (the PDU is 480 bytes).
    const { reads, readItems } = await peer.stats();
    assert.equal(reads - r0, 1, `read requests for one cycle: ${reads - r0}`);
    assert.equal(readItems >= 8, true);
  });

  test('writes of each type land in the server (read back with snap7) and read again', async () => {
    const cmd = async (tag: string, value: unknown) => {
      const r = await e.nc.request(`devicehub.command.plc1.${tag}`, sc.encode(JSON.stringify(value)), {
        timeout: 5000,
      });
      const body = r.json<{ success: boolean; error?: string }>();
      assert.equal(body.success, true, `${tag}: ${body.error}`);
    };
    await cmd('real', 3.25);
    await cmd('dint', 123456);
    await cmd('x1', true);
    await cmd('text', 'edge');
    await cmd('mw10', -5);
    await cmd('q0_0', true);
    await cmd('t4', 2_500);
    await cmd('c8', 17);
    const db1 = await readBack(peer.serverPort, 0x84, 1, 0, 40);
    assert.equal(db1.readFloatBE(0), 3.25);
    assert.equal(db1.readInt32BE(8), 123456);
    assert.equal(db1[16], 0b00000111, 'bit 1 set, bits 0 and 2 kept');
    assert.equal(db1[18], 20);
    assert.equal(db1.toString('latin1', 20, 20 + db1[19]!), 'edge');
    assert.equal((await readBack(peer.serverPort, 0x83, 0, 10, 2)).readInt16BE(0), -5);
    assert.equal((await readBack(peer.serverPort, 0x82, 0, 0, 1))[0]! & 1, 1);
    assert.equal(
      (await readBack(peer.serverPort, 0x1d, 0, 4, 1, 0x1d)).readUInt16BE(0),
      0x0250,
      'T4 = 250 × 10 ms',
    );
    assert.equal(
      (await readBack(peer.serverPort, 0x1c, 0, 8, 1, 0x1c)).readUInt16BE(0),
      0x0017,
      'C8 = BCD 17',
    );
    // A value the tag cannot hold is refused before it reaches the PLC.
    const r = await e.nc.request('devicehub.command.plc1.c8', sc.encode('1000'), { timeout: 5000 });
    assert.match(r.json<{ error: string }>().error, /counter value/);
  });

  test('a run longer than a PDU (DB3, 4,096 INTs): PDU-sized requests on three connections, every value from its own address', async () => {
    const open0 = (await peer.stats()).connections.length;
    const big = await e.createDevice('plc3', 'S7', {
      host: '127.0.0.1',
      port: String(peer.port),
      connections: '3',
    });
    const got = new Map<number, number>();
    const sub = e.nc.subscribe('devicehub.raw.plc3.>', {
      callback: (_err, m) => {
        const p = m.json<{ success: boolean; value: number }>();
        if (p.success) got.set(Number(m.subject.slice('devicehub.raw.plc3.w'.length)), p.value);
      },
    });
    await e.nc.flush();
    const r0 = (await peer.stats()).reads;
    const made = await e.createTags(
      big,
      Array.from({ length: 4096 }, (_, i) => ({
        TagName: `w${i}`,
        Name: 'DB',
        ValueType: 'int16',
        Properties: { dbNumber: '3', address: String(i * 2) },
        IntervalMs: 60_000,
      })),
    );
    await eventually(() => got.size === 4096, 20_000, 'all 4,096 values');
    // The server writes (2i + tick) & 0x7fff at DB3.DBW(2i) every 100 ms: every value less its own
    // offset gives the tick of the part it came in, a few ticks apart at most; a value from a wrong
    // place would be hundreds off (a part is 462 bytes).
    const ticks = [...got].map(([i, v]) => (v - 2 * i) & 0x7fff);
    const spread = Math.max(...ticks) - Math.min(...ticks);
    assert.ok(spread <= 50, `ticks ${Math.min(...ticks)}..${Math.max(...ticks)}`);
    // 8,192 bytes at 462 a request (PDU 480): 18 requests for the cycle, spread over the device's
    // three connections (six calls of 3, 3, 3, 3, 3 and 3 requests, two on each).
    const after = await peer.stats();
    assert.equal(after.reads - r0, 18);
    assert.deepEqual(after.connections.slice(open0), [6, 6, 6]);
    sub.unsubscribe();
    await e.ok(`mutation($in: [ID!]!) { DeleteDevices(IDs: $in) }`, { in: [big] });
    assert.equal(made.length, 4096);
  });

  test('the server killed: the tags fail; restarted: the device reconnects and reads again', async () => {
    // Polled tags of their own at 300 ms, so that failures and recovery show quickly.
    const [fast] = await e.createTags(dev, [
      {
        TagName: 'fast',
        Name: 'DB',
        ValueType: 'int16',
        Properties: { dbNumber: '2', address: '100' },
        IntervalMs: 300,
      },
    ]);
    await nextMessage(e.nc, 'devicehub.raw.plc1.fast', (x) => x.success && x.value === 777, 10_000);
    const failed = nextMessage(e.nc, 'devicehub.raw.plc1.fast', (x) => x.success === false, 10_000);
    await peer.kill();
    assert.match((await failed).error, /not connected|TCP|ISO|connection/i);
    await eventually(
      async () => (await e.tagStates([fast!, ids.get('real')!])).every((s) => s.State === 'Failed'),
      10_000,
      'Failed',
    );
    assert.equal(e.t.edge.acquisition.deviceStatus(dev)!.state === 'connected', false);
    await peer.start();
    await eventually(
      () => e.t.edge.acquisition.deviceStatus(dev)?.state === 'connected',
      20_000,
      'reconnected',
    );
    await nextMessage(e.nc, 'devicehub.raw.plc1.fast', (x) => x.success && x.value === 777, 10_000);
    await eventually(async () => (await e.tagStates([fast!]))[0]!.State === 'OK', 5000, 'OK again');
  });

  test('browse lists the named areas; tags created from a folder read their values', async () => {
    const items = await browseAll(e, dev, 20_000);
    const w = items.get('DB2/DB2.DBW100');
    assert.ok(w, [...items.keys()].join(', '));
    assert.equal(w.RegisterName, 'DB');
    assert.equal(w.ValueType, 'int16');
    assert.deepEqual(w.Properties, [
      { Name: 'address', Value: '100' },
      { Name: 'dbNumber', Value: '2' },
    ]);
    assert.ok(items.get('M/MW10'));
    assert.equal(items.get('I/I0.5').ValueType, 'bool');
    assert.equal(items.get('T/T4').RegisterName, 'T');
    assert.ok(items.get('C/C8'));
    const value = nextMessage(e.nc, 'devicehub.raw.plc1.DB2_DBW100', (x) => x.success, 15_000);
    const created = await e.ok(
      `mutation($in: CreateRegistersByFoldersSelectionRequest!) { BrowseTask_CreateRegistersByFoldersSelection(input: $in) { Created } }`,
      { in: { TaskID: (items as any).taskId, Folders: ['DB2', 'T'], Recursive: true } },
    );
    assert.equal(created.BrowseTask_CreateRegistersByFoldersSelection.Created, 4);
    assert.equal((await value).value, 777);
  });
});
