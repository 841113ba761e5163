/**
 * The BACnet/IP driver end to end against a BACnet device served by @bacnet-js/client's stack on a
 * free UDP port (test/helpers/peers/bacnet.ts): Who-Is discovery, browse of the Object_List and
 * tags created from it, values by COV notifications (one device) and by ReadPropertyMultiple
 * polling (another, useCov off), a WriteProperty at a priority through Command, an unknown object
 * failing alone, and the device stopped (Failed) and started again (OK).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { StringCodec } from 'nats';
import { browseAll, nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { BacnetPeer } from '../helpers/peers/bacnet.js';
import { eventually, freePort } from '../helpers/util.js';

const sc = StringCodec();

function makePeer(): BacnetPeer {
  const peer = new BacnetPeer(2607);
  peer.add({ type: 0, instance: 1, name: 'ZoneTemp', value: 21.5, units: 62 });
  peer.add({ type: 1, instance: 2, name: 'Damper', value: 10 });
  peer.add({ type: 3, instance: 3, name: 'FanStatus', value: true });
  peer.add({ type: 13, instance: 4, name: 'Mode', value: 2 });
  for (let i = 10; i < 40; i++) peer.add({ type: 2, instance: i, name: `Setpoint${i}`, value: i });
  return peer;
}

describe('acquisition: BACnet/IP', () => {
  let e: AcqEdge;
  let peer: BacnetPeer;
  let port: number;
  let cov: string;
  let poll: string;
  const ids: string[] = [];

  before(async () => {
    peer = makePeer();
    port = await freePort();
    [e] = await Promise.all([startAcqEdge(), peer.start(port)]);
    const common = { host: '127.0.0.1', port: String(port), requestTimeoutMs: '1000' };
    cov = await e.createDevice('ahu1', 'BACnet/IP', { ...common, localPort: String(await freePort()) });
    poll = await e.createDevice('ahu2', 'BACnet/IP', {
      ...common,
      localPort: String(await freePort()),
      deviceInstance: '2607',
      useCov: 'false',
    });
  });
  after(async () => {
    await e.stop();
    await peer.stop();
  });

  test('Who-Is finds the device; browse lists its objects; the selection creates tags that get values by COV', async () => {
    const items = await browseAll(e, cov);
    assert.deepEqual(items.get('AI/ZoneTemp')?.Properties, [{ Name: 'address', Value: '1' }]);
    assert.equal(items.get('BI/FanStatus')?.ValueType, 'bool');
    assert.equal(items.get('MSI/Mode')?.RegisterName, 'MSI');
    const temp = nextMessage(e.nc, 'devicehub.raw.ahu1.ZoneTemp', (p) => p.success, 15_000);
    const fan = nextMessage(e.nc, 'devicehub.raw.ahu1.FanStatus', (p) => p.success, 15_000);
    const made = await e.ok(
      `mutation($in: CreateRegistersByFoldersSelectionRequest!) { BrowseTask_CreateRegistersByFoldersSelection(input: $in) { Created Registers { ID } } }`,
      {
        in: {
          TaskID: (items as unknown as { taskId: string }).taskId,
          Folders: ['AI', 'AO', 'BI', 'MSI'],
          IntervalMs: 500,
        },
      },
    );
    assert.equal(made.BrowseTask_CreateRegistersByFoldersSelection.Created, 4);
    ids.push(...made.BrowseTask_CreateRegistersByFoldersSelection.Registers.map((r: { ID: string }) => r.ID));
    assert.equal((await temp).value, 21.5);
    assert.equal((await fan).value, true);
    await eventually(() => peer.subs.length >= 4, 10_000, 'four COV subscriptions');
    // A change at the device arrives by notification.
    const changed = nextMessage(e.nc, 'devicehub.raw.ahu1.ZoneTemp', (p) => p.value === 23.25, 10_000);
    await e.nc.flush(); // the subscription is in place before the (sub-millisecond) notification
    peer.set(0, 1, 23.25);
    await changed;
  });

  test('polling by ReadPropertyMultiple: many properties per request; an unknown object fails alone', async () => {
    const tags = [
      { Name: 'AI', TagName: 'temp', ValueType: 'float32', IntervalMs: 200, Properties: { address: '1' } },
      {
        Name: 'AI',
        TagName: 'units',
        ValueType: 'uint32',
        IntervalMs: 200,
        Properties: { address: '1', property: '117' },
      },
      { Name: 'AI', TagName: 'ghost', ValueType: 'float32', IntervalMs: 200, Properties: { address: '99' } },
      ...Array.from({ length: 30 }, (_, k) => ({
        Name: 'AV',
        TagName: `sp${k + 10}`,
        ValueType: 'float32',
        IntervalMs: 200,
        Properties: { address: String(k + 10) },
      })),
    ];
    const units = nextMessage(e.nc, 'devicehub.raw.ahu2.units', (p) => p.success, 15_000);
    const ghost = nextMessage(e.nc, 'devicehub.raw.ahu2.ghost', () => true, 15_000);
    const sp = nextMessage(e.nc, 'devicehub.raw.ahu2.sp25', (p) => p.success, 15_000);
    ids.push(...(await e.createTags(poll, tags)));
    assert.equal((await units).value, 62);
    assert.equal((await sp).value, 25);
    const g = await ghost;
    assert.equal(g.success, false);
    assert.match(g.error, /UNKNOWN_OBJECT/);
    const r0 = peer.served.readPropertyMultiple;
    const p0 = peer.propertyReads;
    await eventually(() => peer.served.readPropertyMultiple - r0 >= 5, 15_000, 'five polls');
    assert.ok(
      (peer.propertyReads - p0) / (peer.served.readPropertyMultiple - r0) >= 20,
      'properties per request',
    );
  });

  test('a write through Command is a WriteProperty at the tag priority', async () => {
    await e.createTags(poll, [
      {
        Name: 'AO',
        TagName: 'damper',
        ValueType: 'float32',
        IntervalMs: 200,
        Properties: { address: '2', priority: '8' },
      },
      { Name: 'BI', TagName: 'fan', ValueType: 'bool', IntervalMs: 200, Properties: { address: '3' } },
    ]);
    await nextMessage(e.nc, 'devicehub.raw.ahu2.damper', (p) => p.success, 15_000);
    const seen = nextMessage(e.nc, 'devicehub.raw.ahu1.Damper', (p) => p.value === 55.5, 15_000);
    await e.nc.flush();
    const r = await e.nc.request('devicehub.command.ahu2.damper', sc.encode('55.5'), { timeout: 10_000 });
    assert.equal(r.json<{ success: boolean }>().success, true, r.string());
    assert.equal(peer.get(1, 2).priorities![7], 55.5);
    await seen;
    // An input is not commandable: the device's error comes back.
    const ro = await e.nc.request('devicehub.command.ahu2.fan', sc.encode('false'), { timeout: 10_000 });
    const err = ro.json<{ success: boolean; error: string }>();
    assert.equal(err.success, false);
    assert.match(err.error, /WRITE_ACCESS_DENIED|Code:40/);
  });

  test('a small device (APDU 480, no segmentation, slow answers): requests packed to its APDU, several in flight, a too-long answer split', async () => {
    const small = new BacnetPeer(480);
    small.maxApdu = 480;
    small.replyDelayMs = 20;
    const long = (k: number) => `Zone ${k} supply air temperature setpoint, north wing, level ${k % 7}`;
    for (let k = 0; k < 300; k++) small.add({ type: 2, instance: k, name: long(k), value: k * 1.5 });
    const smallPort = await freePort();
    await small.start(smallPort);
    try {
      const dev = await e.createDevice('small', 'BACnet/IP', {
        host: '127.0.0.1',
        port: String(smallPort),
        localPort: String(await freePort()),
        useCov: 'false',
        requestTimeoutMs: '2000',
      });
      const seen = new Map<string, unknown>();
      const sub = e.nc.subscribe('devicehub.raw.small.>', {
        callback: (_err, m) => {
          const p = m.json<{ success: boolean; value: unknown }>();
          if (p.success) seen.set(m.subject.slice('devicehub.raw.small.'.length), p.value);
        },
      });
      await e.nc.flush();
      await e.createTags(dev, [
        ...Array.from({ length: 300 }, (_, k) => ({
          Name: 'AV',
          TagName: `v${k}`,
          ValueType: 'float32',
          IntervalMs: 1000,
          Properties: { address: String(k) },
        })),
        // Names longer than the plan's estimate: the device aborts, the request is split.
        ...Array.from({ length: 40 }, (_, k) => ({
          Name: 'AV',
          TagName: `n${k}`,
          ValueType: 'string',
          IntervalMs: 1000,
          Properties: { address: String(k), property: '77' },
        })),
      ]);
      await eventually(() => seen.size === 340, 30_000, 'all 340 values');
      for (let k = 0; k < 300; k++) assert.equal(seen.get(`v${k}`), k * 1.5);
      for (let k = 0; k < 40; k++) assert.equal(seen.get(`n${k}`), long(k));
      // A REAL present value takes 16 bytes of an answer: about 26 objects fill one of 480 bytes.
      // Requests went out several at a time; the names' requests were split once, and stay split.
      assert.ok(small.maxOutstanding >= 2, `requests in flight at once: ${small.maxOutstanding}`);
      assert.ok(small.aborts > 0, 'the too-long request was aborted');
      const a0 = small.aborts;
      const r0 = small.served.readPropertyMultiple;
      const p0 = small.propertyReads;
      await eventually(() => small.served.readPropertyMultiple - r0 >= 40, 20_000, 'two more cycles');
      assert.equal(small.aborts, a0, 'no abort after the split');
      const perRequest = (small.propertyReads - p0) / (small.served.readPropertyMultiple - r0);
      assert.ok(perRequest >= 10, `properties per request ${perRequest.toFixed(1)}`);
      sub.unsubscribe();
      await e.ok(`mutation($in: [ID!]!) { DeleteDevices(IDs: $in) }`, { in: [dev] });
    } finally {
      await small.stop();
    }
  });

  test('the device stopped fails the tags (COV and polled); started again they come back', async () => {
    const polled = nextMessage(e.nc, 'devicehub.raw.ahu2.temp', (p) => p.success === false, 15_000);
    const pushed = nextMessage(e.nc, 'devicehub.raw.ahu1.ZoneTemp', (p) => p.success === false, 20_000);
    await peer.stop();
    await polled;
    await pushed;
    await eventually(
      async () => (await e.tagStates(ids)).every((s) => s.State === 'Failed'),
      20_000,
      'Failed',
    );
    const back = nextMessage(e.nc, 'devicehub.raw.ahu2.temp', (p) => p.success, 30_000);
    const backCov = nextMessage(e.nc, 'devicehub.raw.ahu1.ZoneTemp', (p) => p.success, 30_000);
    await peer.start(port);
    await back;
    await backCov;
    const live = ids.filter((_, i) => i !== 6); // the ghost object stays Failed
    await eventually(async () => (await e.tagStates(live)).every((s) => s.State === 'OK'), 20_000, 'all OK');
  });
});
