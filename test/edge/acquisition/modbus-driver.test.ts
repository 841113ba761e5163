/**
 * The Modbus TCP driver against a real Modbus server (modbus-serial's ServerTCP): reads in blocks
 * with and without `early`, a block the server refuses, and more requests than modbus-serial has
 * transaction IDs (256 on TCP).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { modbusDrivers } from '../../../src/edge/acquisition/drivers/modbus.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverSession,
  type TagSpec,
} from '../../../src/edge/acquisition/types.js';
import type { DriverDef } from '../../../src/edge/devicehub/index.js';
import { ModbusPeer } from '../../helpers/peers/modbus.js';

const SIZE = 300;

function tag(address: number): TagSpec {
  return {
    id: `t${address}`,
    deviceId: 'd1',
    deviceName: 'plc',
    tagName: `hr${address}`,
    register: 'HR',
    description: '',
    valueType: 'uint16',
    publishCoV: false,
    formula: null,
    intervalMs: 1000,
    props: { address: String(address) },
    metadata: {},
    rawSubject: `devicehub.raw.plc.hr${address}`,
    aliasSubject: null,
    valueSubject: undefined,
    writeResponseSubject: undefined,
  };
}

describe('acquisition: the Modbus TCP driver', () => {
  const peer = new ModbusPeer(SIZE);
  let session: DriverSession;
  const lost: string[] = [];
  // Three blocks of 100 and 50 registers, one of 5 at the end, and one address the server refuses.
  const good = [...Array.from({ length: 250 }, (_, i) => i), 295, 296, 297, 298, 299];
  const tags = [...good.map(tag), tag(SIZE + 20)];
  const refused = tags.length - 1;

  before(async () => {
    for (let i = 0; i < SIZE; i++) peer.holding[i] = (i * 13) & 0xffff;
    const port = await peer.start();
    const factory = modbusDrivers.find((d) => d.key === 'modbus-tcp')!;
    const device: DeviceSpec = {
      id: 'd1',
      name: 'plc',
      driver: {} as DriverDef,
      props: { host: '127.0.0.1', port: String(port), maxRegistersPerRequest: '100' },
      aliasTopics: false,
    };
    session = factory.create(device, { logger: undefined, dataDir: '.', lost: (r) => lost.push(r) });
    await session.connect();
  });
  after(async () => {
    await session.close();
    await peer.stop();
  });

  test('without early: every result in the answer, the refused block as a failure', async () => {
    const out = await session.read(tags);
    assert.equal(out.length, tags.length);
    good.forEach((a, i) => assert.equal(out[i], peer.holding[a], `address ${a}`));
    assert.ok(out[refused] instanceof ReadFailure);
  });

  test('with early: each value handed over once, and the refused block as a failure', async () => {
    const seen = new Map<number, unknown>();
    const out = await session.read(tags, (i, r) => {
      assert.equal(seen.has(i), false, `index ${i} handed over twice`);
      seen.set(i, r);
    });
    assert.equal(seen.size, good.length);
    good.forEach((a, i) => assert.equal(seen.get(i), peer.holding[a], `address ${a}`));
    assert.ok(out[refused] instanceof ReadFailure);
    assert.equal(seen.has(refused), false);
  });

  test('with early and nothing refused: every value handed over once', async () => {
    const some = good.slice(0, 120).map(tag);
    let n = 0;
    await session.read(some, () => n++);
    assert.equal(n, 120);
  });

  test('more requests than transaction IDs (256): the answers stay right', async () => {
    const one = [tag(7)];
    for (let k = 0; k < 300; k++) {
      peer.holding[7] = k;
      const out = await session.read(one);
      assert.equal(out[0], k);
    }
    assert.deepEqual(lost, []);
  });
});
