/**
 * Modbus RTU and ASCII on a serial line, over a pseudo-terminal pair made by Debian's socat:
 * modbus-serial's ServerSerial (RTU) on one end, the edge's driver on the other; for ASCII the
 * frames on the line are re-framed to modbus-serial's ServerTCP (the library has no ASCII
 * server). Skipped with a reason when socat is absent (and failing on CI).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StringCodec } from 'nats';
import { nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { ModbusPeer } from '../helpers/peers/modbus.js';
import { AsciiSerialPeer, PtyPair, RtuSerialPeer } from '../helpers/peers/serial.js';
import { eventually, skipUnless } from '../helpers/util.js';

const sc = StringCodec();
const skip = skipUnless('socat');
if (skip) console.log(`# acquisition-serial skipped: ${skip}`);

const variants = [
  {
    driver: 'Modbus RTU',
    name: 'rtu',
    front: (peer: ModbusPeer, path: string) => new RtuSerialPeer(peer, path),
  },
  {
    driver: 'Modbus ASCII',
    name: 'ascii',
    front: (peer: ModbusPeer, path: string) => new AsciiSerialPeer(peer, path),
  },
];

describe('acquisition: Modbus on a serial line', { skip }, () => {
  let e: AcqEdge;
  before(async () => {
    e = await startAcqEdge();
  });
  after(() => e.stop());

  for (const v of variants) {
    describe(v.driver, () => {
      const pty = new PtyPair();
      const peer = new ModbusPeer();
      let front: { start(): Promise<void>; stop(): Promise<void> };
      let dev: string;
      let ids: string[];
      const d = `line-${v.name}`;

      before(async () => {
        await pty.start();
        await peer.start();
        peer.holding[10] = 1234;
        peer.holding[11] = 0x4049; // float32 3.140625 at 11..12
        peer.holding[12] = 0x0fd0;
        peer.coils[3] = true;
        front = v.front(peer, pty.a);
        await front.start();
        dev = await e.createDevice(d, v.driver, {
          serialPort: pty.b,
          baudRate: '9600',
          parity: '1',
          requestTimeoutMs: '300',
        });
        ids = await e.createTags(dev, [
          {
            Name: 'HR',
            TagName: 'hr10',
            ValueType: 'uint16',
            IntervalMs: 100,
            Properties: { address: '10' },
          },
          { Name: 'HR', TagName: 'f', ValueType: 'float32', IntervalMs: 100, Properties: { address: '11' } },
          { Name: 'CO', TagName: 'co3', ValueType: 'bool', IntervalMs: 100, Properties: { address: '3' } },
        ]);
      });
      after(async () => {
        await front.stop();
        await peer.stop();
        await pty.stop();
      });

      test('values arrive, writes reach the server', async () => {
        assert.equal((await nextMessage(e.nc, `devicehub.raw.${d}.hr10`, (p) => p.success)).value, 1234);
        const f = await nextMessage(e.nc, `devicehub.raw.${d}.f`, (p) => p.success);
        assert.ok(Math.abs(f.value - 3.1416) < 0.001);
        assert.equal((await nextMessage(e.nc, `devicehub.raw.${d}.co3`, (p) => p.success)).value, true);
        const r = await e.nc.request(`devicehub.command.${d}.hr10`, sc.encode('4321'), { timeout: 3000 });
        assert.equal(r.json<{ success: boolean }>().success, true);
        assert.equal(peer.holding[10], 4321);
        await nextMessage(e.nc, `devicehub.raw.${d}.hr10`, (p) => p.value === 4321);
        const c = await e.nc.request(`devicehub.command.${d}.co3`, sc.encode('false'), { timeout: 3000 });
        assert.equal(c.json<{ success: boolean }>().success, true);
        assert.equal(peer.coils[3], false);
        await eventually(async () => (await e.tagStates(ids)).every((s) => s.State === 'OK'), 3000, 'all OK');
      });

      test('a silent line fails the tags; the server back on the line brings them back', async () => {
        await front.stop();
        await nextMessage(e.nc, `devicehub.raw.${d}.hr10`, (p) => p.success === false, 8000);
        await eventually(
          async () => (await e.tagStates(ids)).every((s) => s.State === 'Failed'),
          8000,
          'Failed',
        );
        assert.match((await e.tagStates(ids))[0]!.Reason, /Timed out|not connected/);
        await front.start();
        await nextMessage(e.nc, `devicehub.raw.${d}.hr10`, (p) => p.success === true, 15_000);
        await eventually(
          async () => (await e.tagStates(ids)).every((s) => s.State === 'OK'),
          5000,
          'OK again',
        );
      });
    });
  }
});
