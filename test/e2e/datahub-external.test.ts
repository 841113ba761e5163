/**
 * External mode against the real nats-server of this machine (127.0.0.1:4222): the edge's DataHub
 * joins it, and messages cross in both directions between the edge (in-process subscribers and
 * gateway clients) and plain `nats` clients of the server.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, headers, StringCodec, type NatsConnection } from 'nats';
import { startTestEdge, type TestEdge } from '../helpers/edge.js';
import { NATS_SERVER, natsServerReachable, needNatsServer } from '../edge/datahub/support.js';
import type { Message } from '../../src/edge/datahub/index.js';

const sc = StringCodec();
const SERVER = `nats://${NATS_SERVER.host}:${NATS_SERVER.port}`;
// The real server is shared: every subject of this run is unique.
const P = `mwtest${process.pid}${Date.now().toString(36)}`;

const next = <T>(fn: (resolve: (v: T) => void) => void, ms = 5000) =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    fn((v) => {
      clearTimeout(timer);
      resolve(v);
    });
  });

describe('DataHub external mode (real nats-server on 127.0.0.1:4222)', () => {
  let t: TestEdge | undefined;
  let plain: NatsConnection | undefined;
  let up = false;

  before(async () => {
    up = await natsServerReachable();
    if (!up) return;
    t = await startTestEdge({ natsUrl: SERVER });
    plain = await connect({ servers: SERVER, name: 'plain-client' });
  });
  after(async () => {
    await plain?.close();
    await t?.stop();
  });

  test('a value published by the edge reaches a plain client of the server, and back', async (ctx) => {
    if (!(await needNatsServer(ctx)) || !t || !plain) return;
    const hub = t.edge.datahub.hub;
    assert.equal(t.edge.datahub.stats().mode, 'external');

    // edge -> cluster
    const atServer = next<{ subject: string; data: unknown }>((resolve) =>
      plain!.subscribe(`${P}.devicehub.raw.>`, {
        callback: (_e, m) => resolve({ subject: m.subject, data: m.json() }),
      }),
    );
    await plain.flush();
    const value = { success: true, datatype: 'float64', timestamp: Date.now(), value: 42.5, tagName: 'S' };
    hub.publish(`${P}.devicehub.raw.Gen1.S`, value);
    assert.deepEqual(await atServer, { subject: `${P}.devicehub.raw.Gen1.S`, data: value });

    // cluster -> edge, to an in-process subscriber
    const atEdge = next<Message>((resolve) =>
      hub.subscribe(`${P}.cmd.>`, { max: 1, callback: (m) => resolve(m) }),
    );
    await t.edge.datahub.external!.flush(); // the interest has reached the server
    const h = headers();
    h.set('X-Unit', 'bar');
    plain.publish(`${P}.cmd.write`, sc.encode('{"value":7}'), { headers: h });
    const m = await atEdge;
    assert.equal(m.subject, `${P}.cmd.write`);
    assert.deepEqual(m.json(), { value: 7 });
    assert.deepEqual(m.header().headers, { 'X-Unit': 'bar' });
  });

  test('local subscribers get local publishes once, as the object; requests cross both ways', async (ctx) => {
    if (!(await needNatsServer(ctx)) || !t || !plain) return;
    const hub = t.edge.datahub.hub;
    const got: unknown[] = [];
    const sub = hub.subscribe(`${P}.local.>`, (msg) => got.push(msg.data));
    await t.edge.datahub.external!.flush();
    const value = { v: 1 };
    hub.publish(`${P}.local.x`, value);
    await t.edge.datahub.external!.flush();
    await plain.flush();
    // Time is the test: nothing is echoed back.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(got.length, 1, 'not echoed back by the cluster');
    assert.equal(got[0], value, 'zero copy for the local publisher');
    sub.unsubscribe();

    // A responder at the server answers the edge.
    plain.subscribe(`${P}.svc.outside`, { callback: (_e, msg) => msg.respond(sc.encode('from the server')) });
    await plain.flush();
    const r1 = await hub.request(`${P}.svc.outside`, 'q', { timeout: 3000 });
    assert.equal(r1.string(), 'from the server');

    // A responder in the edge answers a client of the server.
    hub.subscribe(`${P}.svc.edge`, (msg) => msg.respond({ answer: msg.string() }));
    await t.edge.datahub.external!.flush();
    const r2 = await plain.request(`${P}.svc.edge`, sc.encode('hi'), { timeout: 3000 });
    assert.deepEqual(r2.json(), { answer: 'hi' });
  });

  test('the gateway is optional in external mode', async (ctx) => {
    if (!(await needNatsServer(ctx)) || !plain) return;
    const bare = await startTestEdge({ natsUrl: SERVER, datahubGateway: false });
    try {
      assert.equal(bare.edge.datahub.gateway, undefined);
      const stats = bare.edge.datahub.stats();
      assert.equal(stats.mode, 'external');
      assert.equal(stats.gateway, null);
      assert.deepEqual(stats.external, { url: SERVER, connected: true });
      const atServer = next<string>((resolve) =>
        plain!.subscribe(`${P}.bare.>`, { callback: (_e, m) => resolve(sc.decode(m.data)) }),
      );
      await plain.flush();
      bare.edge.datahub.hub.publish(`${P}.bare.x`, 'no gateway needed');
      assert.equal(await atServer, 'no gateway needed');
    } finally {
      await bare.stop();
    }
  });

  test('a gateway client of the edge and a client of the server share one bus', async (ctx) => {
    if (!(await needNatsServer(ctx)) || !t || !plain) return;
    const viaEdge = await connect({ servers: t.edge.datahub.gateway!.url });
    try {
      const atEdgeClient = next<string>((resolve) =>
        viaEdge.subscribe(`${P}.shared.>`, { callback: (_e, m) => resolve(sc.decode(m.data)) }),
      );
      await viaEdge.flush();
      await t.edge.datahub.external!.flush();
      plain.publish(`${P}.shared.a`, sc.encode('server to edge client'));
      assert.equal(await atEdgeClient, 'server to edge client');

      const atServer = next<string>((resolve) =>
        plain!.subscribe(`${P}.back.>`, { callback: (_e, m) => resolve(sc.decode(m.data)) }),
      );
      await plain.flush();
      viaEdge.publish(`${P}.back.b`, sc.encode('edge client to server'));
      assert.equal(await atServer, 'edge client to server');
    } finally {
      await viaEdge.close();
    }
  });
});
