/**
 * Analytics end to end with live data: processors on Generator tags (and a Modbus tag), outputs
 * read by a plain NATS client on `analytics.publish.<id>` and checked against values the test
 * computes from the raw values it saw on the same bus.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { aok, collect, CREATE_INSTANCE } from '../helpers/analytics.js';
import { ModbusPeer } from '../helpers/peers/modbus.js';
import { eventually } from '../helpers/util.js';

let e: AcqEdge;
let ws: string;

before(async () => {
  e = await startAcqEdge();
  ws = (await aok(e.t, e.auth, `mutation { CreateWorkspace(input: { Name: "live" }) { ID } }`))
    .CreateWorkspace.ID;
});
after(() => e.stop());

const create = async (input: Record<string, unknown>) =>
  (await aok(e.t, e.auth, CREATE_INSTANCE, { in: { WorkspaceID: ws, ...input } })).CreateProcessorInstance;

describe('analytics: live processors', () => {
  test('a mean over a 5 s tumbling window of a Generator tag equals the mean of the raw values', async () => {
    const dev = await e.createDevice('agen', 'Generator', { seed: '7' });
    const raw = collect(e.nc, 'devicehub.raw.agen.noise');
    await e.createTags(dev, [
      {
        Name: 'N',
        TagName: 'noise',
        ValueType: 'float64',
        IntervalMs: 100,
        Properties: { address: '0', amplitude: '50' },
      },
    ]);
    const p = await create({
      Name: 'mean 5 s',
      Kind: 'window',
      Parameters: {
        inputs: [{ subject: 'devicehub.raw.agen.noise' }],
        statistic: 'mean',
        windowType: 'tumbling',
        windowMs: 5000,
      },
    });
    assert.equal(p.State, 'Running');
    assert.equal(p.OutputSubject, `analytics.publish.${p.ID}`);
    const out = collect(e.nc, `analytics.publish.${p.ID}`);
    // The first window may have begun before the processor existed: check the second one.
    const second = await eventually(() => out.items[1], 16_000, 'two windows');
    out.stop();
    raw.stop();
    const { windowStart, windowEnd, count } = second.metadata;
    assert.equal(windowEnd - windowStart, 5000);
    const inWindow = raw.items.filter((m) => m.timestamp >= windowStart && m.timestamp < windowEnd);
    assert.ok(inWindow.length >= 40, `only ${inWindow.length} raw values in the window`);
    assert.equal(count, inWindow.length);
    const mean = inWindow.reduce((s, m) => s + m.value, 0) / inWindow.length;
    assert.ok(Math.abs(second.value - mean) < 1e-9, `${second.value} != ${mean}`);
    // The DataHub's flat payload shape.
    assert.deepEqual(Object.keys(second).sort(), [
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
    assert.equal(second.registerId, p.ID);
    assert.equal(second.tagName, 'mean 5 s');
    assert.equal(second.datatype, 'float64');
    assert.equal(second.timestamp, windowEnd);
  });

  test('a chain: a sliding max over 5 values feeds a threshold alarm; renaming keeps the chain running', async () => {
    const dev = await e.createDevice('aramp', 'Generator');
    await e.createTags(dev, [
      {
        Name: 'R',
        TagName: 'ramp',
        ValueType: 'float64',
        IntervalMs: 50,
        Properties: { address: '0', amplitude: '10', periodMs: '2000' },
      },
    ]);
    const max = await create({
      Name: 'max5',
      Kind: 'window',
      Parameters: {
        inputs: [{ subject: 'devicehub.raw.aramp.ramp' }],
        statistic: 'max',
        windowType: 'sliding',
        windowCount: 5,
      },
    });
    const alarm = await create({
      Name: 'high',
      Kind: 'threshold',
      Parameters: { inputs: [{ processor: max.ID }], limit: 8, hysteresis: 3 },
    });
    const a = collect(e.nc, `analytics.publish.${alarm.ID}`);
    const m = collect(e.nc, `analytics.publish.${max.ID}`);
    await eventually(
      () =>
        a.items.some((x) => x.value === true) &&
        a.items.some((x) => x.value === false) &&
        a.items.length >= 3,
      10_000,
      'alarm on and off',
    );
    // The alarm switches on only above 8 and off only below 5 (hysteresis 3).
    for (const x of a.items) {
      if (x.value === true) assert.ok(x.metadata.input > 8, JSON.stringify(x));
      else if (x.metadata.changed && a.items.indexOf(x) > 0)
        assert.ok(x.metadata.input < 5, JSON.stringify(x));
    }
    const n = m.items.length;
    await aok(
      e.t,
      e.auth,
      `mutation($id: ID!) { RenameProcessorInstance(input: { ID: $id, Name: "max of 5" }) { Name } }`,
      { id: max.ID },
    );
    await eventually(() => m.items.length > n + 5, 3000, 'outputs after rename');
    assert.equal(m.items.at(-1).tagName, 'max of 5');
    a.stop();
    m.stop();
  });

  test('a threshold alarm with hysteresis on a Modbus tag', async () => {
    const peer = new ModbusPeer(16);
    peer.holding[3] = 50;
    await peer.start();
    try {
      const dev = await e.createDevice('plc', 'Modbus TCP', { host: '127.0.0.1', port: String(peer.port) });
      await e.createTags(dev, [
        { Name: 'HR', TagName: 'level', ValueType: 'uint16', IntervalMs: 50, Properties: { address: '3' } },
      ]);
      const alarm = await create({
        Name: 'level high',
        Kind: 'threshold',
        Parameters: { inputs: [{ subject: 'devicehub.raw.plc.level' }], limit: 80, hysteresis: 10 },
      });
      const out = collect(e.nc, `analytics.publish.${alarm.ID}`);
      const last = () => out.items.at(-1);
      // The first value gives the initial state (off); then only changes are published.
      await eventually(() => last()?.value === false, 5000, 'initial off');
      const step = async (v: number, expect: boolean, changes: number) => {
        peer.holding[3] = v;
        await eventually(
          () => out.items.length === changes && last().value === expect && last().metadata.input === v,
          3000,
          `state after ${v}`,
        );
      };
      await step(81, true, 2); // above 80: on
      peer.holding[3] = 75; // below the limit, inside the hysteresis band: stays on
      // Time is the test: the alarm stays on.
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(out.items.length, 2);
      await step(69, false, 3); // below 80 - 10: off
      peer.holding[3] = 79; // back up, not above the limit: stays off
      // Time is the test: the alarm stays off.
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(out.items.length, 3);
      await step(90, true, 4);
      out.stop();
    } finally {
      await peer.stop();
    }
  });
});
