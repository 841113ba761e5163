/** The in-process bus: delivery without copies, wildcards, queue groups, request/reply, bounded buffers. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ClosedError,
  DataHub,
  InvalidSubjectError,
  NoRespondersError,
  RequestTimeoutError,
  type Message,
  type RouteHolder,
} from '../../../src/edge/datahub/index.js';

describe('DataHub in-process bus', () => {
  test('subscribers in the process get the published object itself, not a copy', () => {
    const hub = new DataHub();
    const value = { success: true, datatype: 'float64', timestamp: Date.now(), value: 1.5, tagName: 'S' };
    const got: unknown[] = [];
    hub.subscribe('devicehub.raw.>', (m) => got.push(m.data));
    hub.subscribe('devicehub.raw.Gen1.S', (m) => got.push(m.json()));
    assert.equal(hub.publish('devicehub.raw.Gen1.S', value), 2);
    assert.equal(got.length, 2);
    assert.equal(got[0], value, 'same object (zero copy)');
    assert.equal(got[1], value, 'json() of an object is the object');
  });

  test('wildcards: * matches one token, > one or more', () => {
    const hub = new DataHub();
    const seen: string[] = [];
    hub.subscribe('a.*.c', (m) => seen.push(`star:${m.subject}`));
    hub.subscribe('a.>', (m) => seen.push(`full:${m.subject}`));
    for (const s of ['a.b.c', 'a.b', 'a.b.c.d', 'a', 'x.b.c']) hub.publish(s, null);
    assert.deepEqual(seen.sort(), ['full:a.b', 'full:a.b.c', 'full:a.b.c.d', 'star:a.b.c']);
  });

  test('invalid subjects and patterns are refused with a named error', () => {
    const hub = new DataHub();
    assert.throws(() => hub.publish('a.*', 1), InvalidSubjectError);
    assert.throws(() => hub.publish('a..b', 1), InvalidSubjectError);
    assert.throws(() => hub.subscribe('a.>.b', () => undefined), InvalidSubjectError);
  });

  test('queue groups: each message goes to one member, spread over the members', () => {
    const hub = new DataHub();
    const counts = [0, 0, 0];
    let plain = 0;
    for (let i = 0; i < 3; i++) hub.subscribe('work.*', { queue: 'workers', callback: () => counts[i]!++ });
    hub.subscribe('work.*', () => plain++);
    for (let i = 0; i < 300; i++) hub.publish(`work.${i % 7}`, i);
    assert.equal(counts[0]! + counts[1]! + counts[2]!, 300);
    for (const c of counts) assert.ok(c > 50, `balanced: ${counts.join(',')}`);
    assert.equal(plain, 300);
  });

  test('max: a subscription ends itself after that many messages', () => {
    const hub = new DataHub();
    let n = 0;
    const sub = hub.subscribe('x', { max: 2, callback: () => n++ });
    for (let i = 0; i < 5; i++) hub.publish('x', i);
    assert.equal(n, 2);
    assert.ok(sub.closed);
    assert.equal(hub.subscriptionCount, 0);
  });

  test('request/reply, no responders and timeout', async () => {
    const hub = new DataHub();
    hub.subscribe('svc.echo', (m) => m.respond({ echo: m.data }));
    const slow = hub.subscribe('svc.slow', () => undefined);
    const reply = await hub.request('svc.echo', { n: 1 });
    assert.deepEqual(reply.json(), { echo: { n: 1 } });
    await assert.rejects(hub.request('svc.none', 1), NoRespondersError);
    const t0 = Date.now();
    await assert.rejects(hub.request('svc.slow', 1, { timeout: 50 }), RequestTimeoutError);
    assert.ok(Date.now() - t0 < 1000);
    slow.unsubscribe();
    assert.equal(hub.subscriptionCount, 1, 'inboxes are cleaned up');
  });

  test('headers travel with the message', () => {
    const hub = new DataHub();
    let got: Message | undefined;
    hub.subscribe('h', (m) => (got = m));
    hub.publish('h', 'x', { headers: { 'X-Unit': 'bar', Multi: ['1', '2'] } });
    assert.deepEqual(got!.header().headers, { 'X-Unit': 'bar', Multi: ['1', '2'] });
    assert.equal(got!.headers!.toString(), 'NATS/1.0\r\nX-Unit: bar\r\nMulti: 1\r\nMulti: 2\r\n\r\n');
  });

  test('an iterable subscription buffers up to its bound, then drops and counts', async () => {
    const hub = new DataHub();
    const slowEvents: string[] = [];
    hub.onSlowConsumer = (e) => slowEvents.push(e.subject);
    const sub = hub.subscribe('buf.>', { maxPending: 10 });
    const fast: number[] = [];
    hub.subscribe('buf.>', (m) => fast.push(m.data as number));
    for (let i = 0; i < 25; i++) hub.publish('buf.x', i);
    assert.equal(sub.pending, 10, 'bounded');
    assert.equal(sub.dropped, 15);
    assert.equal(fast.length, 25, 'the other subscriber goes on');
    assert.deepEqual(slowEvents, ['buf.x'], 'reported once');
    const c = hub.prefixCounters().find((p) => p.prefix === 'buf.x')!;
    assert.equal(c.drops, 15);
    assert.equal(c.slowConsumers, 1);
    const first: number[] = [];
    for await (const m of sub) {
      first.push(m.data as number);
      if (first.length === 10) break;
    }
    assert.deepEqual(first, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.ok(sub.closed, 'breaking out of the loop unsubscribes');
  });

  test('a failing callback does not stop the publisher or the other subscribers', () => {
    const hub = new DataHub();
    let ok = 0;
    hub.subscribe('e', () => {
      throw new Error('boom');
    });
    hub.subscribe('e', () => ok++);
    hub.publish('e', 1);
    hub.publish('e', 2);
    assert.equal(ok, 2);
  });

  test('counters per subject prefix', () => {
    const hub = new DataHub();
    hub.subscribe('devicehub.>', () => undefined);
    hub.subscribe('devicehub.raw.>', () => undefined);
    hub.publish('devicehub.raw.p.S', Buffer.alloc(10));
    hub.publish('devicehub.alias.p.S', 'abcd');
    hub.publish('other', { x: 1 });
    const by = Object.fromEntries(hub.prefixCounters().map((c) => [c.prefix, c]));
    assert.deepEqual(
      { ...by['devicehub.raw']! },
      {
        prefix: 'devicehub.raw',
        msgsIn: 1,
        bytesIn: 10,
        msgsOut: 2,
        bytesOut: 20,
        drops: 0,
        slowConsumers: 0,
      },
    );
    assert.equal(by['devicehub.alias']!.msgsOut, 1);
    assert.equal(by['other']!.msgsIn, 1);
    assert.equal(by['other']!.msgsOut, 0);
  });

  test('an outlet publishes like publish, and follows subscriptions that come and go', () => {
    const hub = new DataHub();
    assert.throws(() => hub.outlet('a.*'), InvalidSubjectError);
    const out = hub.outlet(`out.${'x'}.y`);
    assert.equal(out.subject, 'out.x.y');
    assert.equal(out.interested(), false);
    out.skip();
    assert.equal(out.publish({ n: 0 }), 0);
    const got: unknown[] = [];
    const sub = hub.subscribe('out.>', (m) => got.push([m.subject, m.data]));
    assert.equal(out.interested(), true);
    const data = { n: 1 };
    assert.equal(out.publish(data), 1);
    assert.equal((got[0] as unknown[])[1], data, 'the object itself');
    const q = hub.subscribe('out.x.*', { queue: 'g', callback: (m) => got.push(['q', m.data]) });
    assert.equal(out.publish({ n: 2 }), 2);
    sub.unsubscribe();
    q.unsubscribe();
    assert.equal(out.interested(), false);
    assert.equal(out.publish({ n: 3 }), 0);
    assert.deepEqual(got, [
      ['out.x.y', { n: 1 }],
      ['out.x.y', { n: 2 }],
      ['q', { n: 2 }],
    ]);
    const c = hub.prefixCounters().find((p) => p.prefix === 'out.x')!;
    assert.deepEqual([c.msgsIn, c.msgsOut], [5, 3], 'a skipped message counts as published to nobody');
    hub.close();
    assert.throws(() => out.publish({}), ClosedError);
  });

  test('a routed dispatch keeps its subscriptions in its holder, and looks them up again after a change', () => {
    const hub = new DataHub();
    const holder: RouteHolder = { route: undefined, routeGeneration: -1 };
    assert.equal(hub.dispatchRouted(holder, 'r.a.b', { n: 0 }), 0);
    const none = holder.route;
    assert.ok(none, 'the first dispatch fills the holder');
    const got: unknown[] = [];
    const sub = hub.subscribe('r.>', (m) => got.push([m.subject, m.data]));
    const data = { n: 1 };
    assert.equal(hub.dispatchRouted(holder, 'r.a.b', data), 1, 'a new subscription is seen');
    assert.notEqual(holder.route, none);
    const kept = holder.route;
    assert.equal(hub.dispatchRouted(holder, 'r.a.b', { n: 2 }), 1);
    assert.equal(holder.route, kept, 'no change, no new lookup');
    const q = hub.subscribe('r.a.*', { queue: 'g', callback: (m) => got.push(['q', m.data]) });
    assert.equal(hub.dispatchRouted(holder, 'r.a.b', { n: 3 }), 2);
    sub.unsubscribe();
    q.unsubscribe();
    assert.equal(hub.dispatchRouted(holder, 'r.a.b', { n: 4 }), 0, 'gone subscriptions get nothing');
    assert.equal((got[0] as unknown[])[1], data, 'the object itself');
    assert.deepEqual(got, [
      ['r.a.b', { n: 1 }],
      ['r.a.b', { n: 2 }],
      ['r.a.b', { n: 3 }],
      ['q', { n: 3 }],
    ]);
    const c = hub.prefixCounters().find((p) => p.prefix === 'r.a')!;
    assert.deepEqual([c.msgsIn, c.msgsOut], [5, 4]);
    hub.close();
    assert.throws(() => hub.dispatchRouted(holder, 'r.a.b', {}), ClosedError);
  });

  test('an outlet is interested when an external cluster is joined', () => {
    const hub = new DataHub();
    const out = hub.outlet('up.a');
    assert.equal(out.interested(), false);
    const sent: string[] = [];
    hub.setUplink({ publish: (m) => void sent.push(m.subject), interest: () => undefined });
    assert.equal(out.interested(), true);
    out.publish(1);
    assert.deepEqual(sent, ['up.a']);
  });

  test('in-process: a million 128-byte messages all delivered (their rate is measured in bench/datahub)', () => {
    const hub = new DataHub();
    let n = 0;
    hub.subscribe('devicehub.raw.>', () => n++);
    const payload = Buffer.alloc(128);
    const N = 1_000_000;
    for (let i = 0; i < N; i++) hub.publish('devicehub.raw.dev1.tag1', payload);
    assert.equal(n, N);
  });
});
