/** The analytics runtime on the bus: the payloads it publishes, and outputs that nobody reads. */
import { afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { DataHub, type Message } from '../../../src/edge/datahub/index.js';
import { AnalyticsRuntime, type InstanceDef, type StateStore } from '../../../src/edge/analytics/runtime.js';
import { AnalyticsLog } from '../../../src/edge/analytics/log.js';
import { checkParameters } from '../../../src/edge/analytics/catalogue.js';

const store: StateStore = {
  load: async () => undefined,
  save: async () => undefined,
  remove: async () => undefined,
};

describe('analytics runtime outputs', () => {
  let hub: DataHub;
  let rt: AnalyticsRuntime;
  afterEach(async () => {
    await rt.close();
    hub.close();
  });

  async function start(id: string, kind: string, params: Record<string, unknown>): Promise<void> {
    hub = new DataHub();
    rt = new AnalyticsRuntime({
      hub,
      log: new AnalyticsLog(pino({ level: 'silent' })),
      store,
      variables: () => ({}),
      persistIntervalMs: 0,
    });
    const def: InstanceDef = {
      id,
      workspaceId: 'ws1',
      name: `name of ${id}`,
      kind,
      parameters: checkParameters(kind, { inputs: [{ subject: 'in.tag' }], ...params }),
      enabled: true,
    };
    await rt.apply(def);
  }

  const send = (value: unknown, timestamp: number) => hub.publish('in.tag', { value, timestamp });

  test('a sliding window publishes the DataHub payload shape, byte for byte as before', async () => {
    await start('m1', 'window', { statistic: 'mean', windowType: 'sliding', windowMs: 1000 });
    const got: string[] = [];
    hub.subscribe('analytics.publish.m1', (m: Message) => got.push(JSON.stringify(m.data)));
    send(2, 1000);
    send(4, 1500);
    send('x', 1600); // not a number: no output
    send(9, 2600); // 2 and 4 left the window
    assert.deepEqual(got, [
      '{"success":true,"datatype":"float64","timestamp":1000,"registerId":"m1","value":2,"deviceID":"ws1","deviceName":"analytics","tagName":"name of m1","description":"window","metadata":{"statistic":"mean","count":1}}',
      '{"success":true,"datatype":"float64","timestamp":1500,"registerId":"m1","value":3,"deviceID":"ws1","deviceName":"analytics","tagName":"name of m1","description":"window","metadata":{"statistic":"mean","count":2}}',
      '{"success":true,"datatype":"float64","timestamp":2600,"registerId":"m1","value":9,"deviceID":"ws1","deviceName":"analytics","tagName":"name of m1","description":"window","metadata":{"statistic":"mean","count":1}}',
    ]);
  });

  test('a tumbling count window publishes its window bounds, byte for byte as before', async () => {
    await start('t1', 'window', { statistic: 'sum', windowType: 'tumbling', windowCount: 2 });
    const got: string[] = [];
    hub.subscribe('analytics.publish.>', (m: Message) => got.push(JSON.stringify(m.data)));
    send(1, 10);
    send(2, 20);
    send(5, 30);
    assert.deepEqual(got, [
      '{"success":true,"datatype":"float64","timestamp":20,"registerId":"t1","value":3,"deviceID":"ws1","deviceName":"analytics","tagName":"name of t1","description":"window","metadata":{"statistic":"sum","count":2,"windowStart":10,"windowEnd":20}}',
    ]);
  });

  test('outputs nobody reads are counted, and a subscriber that comes later gets the next ones', async () => {
    await start('q1', 'window', { statistic: 'max', windowType: 'sliding', windowCount: 3 });
    send(1, 1);
    send(7, 2);
    assert.equal(rt.status('q1')!.messagesOut, 2);
    const counters = () => hub.prefixCounters().find((c) => c.prefix === 'analytics.publish')!;
    assert.equal(counters().msgsIn, 2, 'counted as published');
    assert.equal(counters().msgsOut, 0, 'taken by nobody');
    const got: unknown[] = [];
    const sub = hub.subscribe('analytics.publish.q1', (m: Message) =>
      got.push((m.data as { value: unknown }).value),
    );
    send(3, 3);
    sub.unsubscribe();
    send(9, 4);
    const again = hub.subscribe('analytics.*.q1', (m: Message) =>
      got.push((m.data as { value: unknown }).value),
    );
    send(2, 5);
    again.unsubscribe();
    assert.deepEqual(got, [7, 9]);
    assert.equal(rt.status('q1')!.messagesOut, 5);
    assert.deepEqual([counters().msgsIn, counters().msgsOut], [5, 2]);
  });

  test('an instance reads another instance`s output through the bus', async () => {
    await start('a1', 'window', { statistic: 'sum', windowType: 'sliding', windowCount: 2 });
    await rt.apply({
      id: 'a2',
      workspaceId: 'ws1',
      name: 'second',
      kind: 'window',
      parameters: checkParameters('window', {
        inputs: [{ processor: 'a1' }],
        statistic: 'max',
        windowType: 'sliding',
        windowCount: 10,
      }),
      enabled: true,
    });
    const got: unknown[] = [];
    hub.subscribe('analytics.publish.a2', (m: Message) => got.push((m.data as { value: unknown }).value));
    send(1, 1);
    send(5, 2);
    send(-9, 3);
    assert.deepEqual(got, [1, 6, 6]);
  });
});
