/**
 * The DataHub's NATS gateway with the official `nats` client, on the real edge service: clients
 * on this host (no TLS, no key), then remote clients (TLS and an access key), forced by
 * `datahub-trust-local: false` since the tests run on one machine.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { connect, headers, StringCodec, ErrorCode, type NatsConnection, type ConnectionOptions } from 'nats';
import { bootstrapAdmin, clientToken, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { RawClient } from '../edge/datahub/support.js';
import { eventually, sleep } from '../helpers/util.js';

const sc = StringCodec();

/** Collects messages of a subscription until `n` arrived (or `ms` passed). */
function collect(
  nc: NatsConnection,
  subject: string,
  n: number,
  opts: { queue?: string; max?: number } = {},
  ms = 3000,
) {
  const got: { subject: string; data: string; headers?: string | undefined }[] = [];
  let resolveDone: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const timer = setTimeout(() => resolveDone(), ms);
  const sub = nc.subscribe(subject, {
    ...opts,
    callback: (_err, m) => {
      got.push({
        subject: m.subject,
        data: sc.decode(m.data),
        headers: m.headers?.get('X-Unit') || undefined,
      });
      if (got.length >= n) {
        clearTimeout(timer);
        resolveDone();
      }
    },
  });
  return { got, done, sub };
}

describe('DataHub gateway: clients on this host', () => {
  let t: TestEdge;
  let url: string;
  let admin: string;
  const clients: NatsConnection[] = [];
  const nats = async (opts: ConnectionOptions = {}) => {
    const nc = await connect({ servers: url, ...opts });
    clients.push(nc);
    return nc;
  };

  before(async () => {
    t = await startTestEdge({ datahubMaxPayload: 4096, datahubMaxPending: 1024 * 1024 });
    url = t.edge.datahub.gateway!.url;
    admin = await bootstrapAdmin(t);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t.stop();
  });

  test('a client on this host needs neither TLS nor credentials', async () => {
    const raw = new RawClient(t.edge.datahub.gateway!.port);
    await raw.waitFor(/^INFO .*\r\n/);
    assert.equal(raw.info.auth_required, undefined);
    assert.equal(raw.info.tls_required, undefined);
    assert.equal(raw.info.max_payload, 4096);
    assert.equal(raw.info.headers, true);
    raw.send('CONNECT {"verbose":false}\r\nPING\r\n');
    await raw.waitFor(/PONG\r\n/);
    raw.destroy();
    const nc = await nats({ name: 'local-client' });
    assert.equal(nc.info?.auth_required, undefined);
  });

  test('publish and subscribe with * and > wildcards, to and from in-process subscribers', async () => {
    const pub = await nats();
    const sub = await nats();
    const star = collect(sub, 'devicehub.raw.*.S', 2);
    const full = collect(sub, 'devicehub.>', 4);
    const inProcess: unknown[] = [];
    const local = t.edge.datahub.hub.subscribe('devicehub.alias.>', (m) => inProcess.push(m.json()));
    await sub.flush();
    pub.publish('devicehub.raw.Gen1.S', sc.encode('1'));
    pub.publish('devicehub.raw.Gen1.T', sc.encode('2'));
    pub.publish('devicehub.alias.Gen1.S', sc.encode('{"value":3}'));
    t.edge.datahub.hub.publish('devicehub.raw.Gen2.S', { value: 4 });
    await Promise.all([star.done, full.done]);
    assert.deepEqual(star.got.map((m) => `${m.subject}=${m.data}`).sort(), [
      'devicehub.raw.Gen1.S=1',
      'devicehub.raw.Gen2.S={"value":4}',
    ]);
    assert.deepEqual(full.got.map((m) => m.subject).sort(), [
      'devicehub.alias.Gen1.S',
      'devicehub.raw.Gen1.S',
      'devicehub.raw.Gen1.T',
      'devicehub.raw.Gen2.S',
    ]);
    assert.deepEqual(inProcess, [{ value: 3 }]);
    local.unsubscribe();
  });

  test('queue groups: each message to one member of the group', async () => {
    const members = await Promise.all([nats(), nats(), nats()]);
    const counts = [0, 0, 0];
    members.forEach((nc, i) => nc.subscribe('jobs.>', { queue: 'workers', callback: () => counts[i]!++ }));
    const watcher = await nats();
    const all = collect(watcher, 'jobs.>', 60);
    await Promise.all([...members, watcher].map((c) => c.flush()));
    const pub = await nats();
    for (let i = 0; i < 60; i++) pub.publish(`jobs.${i}`, sc.encode(String(i)));
    await pub.flush();
    await all.done;
    await Promise.all(members.map((c) => c.flush()));
    assert.equal(counts[0]! + counts[1]! + counts[2]!, 60, `each once: ${counts.join(',')}`);
    assert.ok(counts.filter((c) => c > 0).length >= 2, `spread: ${counts.join(',')}`);
    assert.equal(all.got.length, 60, 'a plain subscriber gets every message');
  });

  test('request/reply between clients and with in-process responders; no responders answers at once', async () => {
    const responder = await nats();
    responder.subscribe('svc.upper', {
      callback: (_e, m) => m.respond(sc.encode(sc.decode(m.data).toUpperCase())),
    });
    await responder.flush();
    const requester = await nats();
    const r1 = await requester.request('svc.upper', sc.encode('hello'), { timeout: 2000 });
    assert.equal(sc.decode(r1.data), 'HELLO');

    const local = t.edge.datahub.hub.subscribe('svc.local', (m) => m.respond({ got: m.string() }));
    const r2 = await requester.request('svc.local', sc.encode('x'), { timeout: 2000 });
    assert.deepEqual(JSON.parse(sc.decode(r2.data)), { got: 'x' });
    local.unsubscribe();

    const r3 = await t.edge.datahub.hub.request('svc.upper', 'from the edge', { timeout: 2000 });
    assert.equal(r3.string(), 'FROM THE EDGE');

    await assert.rejects(
      requester.request('svc.nobody', sc.encode('x'), { timeout: 2000 }),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, ErrorCode.NoResponders);
        return true;
      },
    );
    await assert.rejects(requester.request('svc.upper.slow', sc.encode('x'), { timeout: 100, noMux: true }));
  });

  test('headers: HPUB reaches a headers client as HMSG and in-process subscribers as a map', async () => {
    const pub = await nats();
    const sub = await nats();
    const got = collect(sub, 'hdr.>', 1);
    let inProcess: Record<string, string | string[]> | undefined;
    const local = t.edge.datahub.hub.subscribe('hdr.>', (m) => (inProcess = m.header().headers));
    await sub.flush();
    const h = headers();
    h.set('X-Unit', 'bar');
    pub.publish('hdr.p1', sc.encode('2.5'), { headers: h });
    await got.done;
    assert.deepEqual(got.got, [{ subject: 'hdr.p1', data: '2.5', headers: 'bar' }]);
    assert.deepEqual(inProcess, { 'X-Unit': 'bar' });
    local.unsubscribe();
  });

  test('UNSUB with a maximum: the subscription ends after that many messages', async () => {
    const sub = await nats();
    const c = collect(sub, 'limited', 10, { max: 3 }, 500);
    await sub.flush();
    const pub = await nats();
    for (let i = 0; i < 6; i++) pub.publish('limited', sc.encode(String(i)));
    await pub.flush();
    await c.done;
    assert.deepEqual(
      c.got.map((m) => m.data),
      ['0', '1', '2'],
    );
    const conn = t.edge.datahub
      .connections()
      .find((x) => x.subscriptions.some((s) => s.subject === 'limited'));
    assert.equal(conn, undefined, 'the server dropped the subscription too');

    // The same by hand: UNSUB <sid> <max>.
    const raw = new RawClient(t.edge.datahub.gateway!.port);
    raw.send(
      'CONNECT {"verbose":false}\r\nSUB lim2 9\r\nUNSUB 9 2\r\nPUB lim2 1\r\na\r\nPUB lim2 1\r\nb\r\nPUB lim2 1\r\nc\r\nPING\r\n',
    );
    await raw.waitFor(/PONG\r\n/);
    assert.equal(raw.afterInfo, 'MSG lim2 9 1\r\na\r\nMSG lim2 9 1\r\nb\r\nPONG\r\n');
    raw.destroy();
  });

  test('echo off: a client does not get its own messages', async () => {
    const nc = await nats({ noEcho: true });
    const own = collect(nc, 'echo.x', 1, {}, 300);
    const other = await nats();
    const seen = collect(other, 'echo.x', 1);
    await Promise.all([nc.flush(), other.flush()]);
    nc.publish('echo.x', sc.encode('me'));
    await nc.flush();
    await seen.done;
    await own.done;
    assert.equal(seen.got.length, 1);
    assert.equal(own.got.length, 0);
  });

  test('max payload: the client refuses to send it; a raw client gets the NATS error and is closed', async () => {
    const nc = await nats();
    assert.throws(
      () => nc.publish('big', new Uint8Array(5000)),
      (err: Error & { code?: string }) => err.code === ErrorCode.MaxPayloadExceeded,
    );
    const raw = new RawClient(t.edge.datahub.gateway!.port);
    raw.send('CONNECT {"verbose":false}\r\nPUB big 5000\r\n');
    await raw.closed;
    assert.equal(raw.afterInfo, "-ERR 'Maximum Payload Violation'\r\n");
  });

  test('a slow consumer is cut off with -ERR, counted and logged, while the publisher and other subscribers go on', async () => {
    const port = t.edge.datahub.gateway!.port;
    const slow = new RawClient(port);
    slow.send('CONNECT {"verbose":false,"name":"slowpoke"}\r\nSUB flood.> 1\r\nPING\r\n');
    await slow.waitFor(/PONG\r\n/);
    slow.socket.pause(); // stops reading: the kernel buffers fill, then the gateway's

    const fast = await nats();
    const N = 20_000;
    const got = collect(fast, 'flood.>', N, {}, 15_000);
    await fast.flush();
    const pub = await nats();
    const payload = new Uint8Array(1024).fill(65);
    // The publisher keeps at most ~300 messages (300 KiB, under the 1 MiB limit) ahead of the
    // subscriber that reads, so that on a busy machine it is never the one cut off; the paused
    // one falls behind by the whole flood (20 MiB).
    const deadline = Date.now() + 15_000;
    const gateway = t.edge.datahub.gateway!;
    let resumed = false;
    for (let i = 0; i < N; i++) {
      pub.publish('flood.x', payload);
      if (i % 100 === 99) {
        await pub.flush();
        while (got.got.length < i + 1 - 200 && Date.now() < deadline) await sleep(2);
        // Once cut off, the paused client reads what the gateway still sends (its -ERR line last)
        // at once: the gateway waits for that only a grace time (2 s), which the rest of the flood
        // outlasts on a loaded machine.
        if (!resumed && gateway.counters.slowConsumers > 0) {
          resumed = true;
          slow.socket.resume();
        }
      }
    }
    await pub.flush();
    await got.done;
    assert.equal(got.got.length, N, 'the other subscriber got every message');
    assert.ok(!pub.isClosed(), 'the publisher is still connected');
    assert.ok(resumed, 'the paused subscriber was cut off during the flood');
    await slow.closed;
    assert.ok(
      slow.text.endsWith("-ERR 'Slow Consumer'\r\n"),
      `ends with the error: ${JSON.stringify(slow.text.slice(-60))}`,
    );
    assert.ok(slow.text.length < 64 * 1024 * 1024, 'bounded');

    const stats = await t.call('/datahub/v1/stats', { headers: { authorization: `Bearer ${admin}` } });
    assert.equal(stats.status, 200);
    assert.equal(stats.body.gateway.slowConsumers, 1);
    const flood = stats.body.subjects.find((s: { prefix: string }) => s.prefix === 'flood.x');
    assert.equal(flood.slowConsumers, 1);
    assert.ok(flood.drops >= 1);
    await t.edge.logStore.flush();
    const logs = await t.edge.logStore.query({ search: 'slow consumer', level: 'warn' });
    assert.ok(
      logs.entries.some((e) => e.message.includes('slow consumer')),
      'logged',
    );
  });

  test('operations: connections with name, address and subscriptions; counters as JSON and Prometheus text', async () => {
    const nc = await nats({ name: 'ops-probe' });
    nc.subscribe('ops.>', { callback: () => undefined });
    nc.subscribe('ops.q', { queue: 'g', callback: () => undefined });
    await nc.flush();
    nc.publish('ops.a', sc.encode('12345'));
    nc.publish('ops.a', sc.encode('12345'));
    await nc.flush();
    const auth = { authorization: `Bearer ${admin}` };

    const list = await t.call('/datahub/v1/connections', { headers: auth });
    assert.equal(list.status, 200);
    const probe = list.body.items.find((c: { name: string }) => c.name === 'ops-probe');
    assert.ok(probe, 'listed by client name');
    assert.match(probe.address, /^127\.0\.0\.1:\d+$/);
    assert.equal(probe.local, true);
    assert.equal(probe.lang, 'nats.js');
    assert.deepEqual(
      probe.subscriptions
        .map((s: { subject: string; queue?: string }) => `${s.subject}${s.queue ? ` ${s.queue}` : ''}`)
        .sort(),
      ['ops.>', 'ops.q g'],
    );
    assert.equal(probe.msgsIn, 2);
    assert.equal(probe.bytesIn, 10);
    assert.equal(probe.msgsOut, 2);

    const stats = await t.call('/datahub/v1/stats', { headers: auth });
    const ops = stats.body.subjects.find((s: { prefix: string }) => s.prefix === 'ops.a');
    assert.deepEqual(ops, {
      prefix: 'ops.a',
      msgsIn: 2,
      bytesIn: 10,
      msgsOut: 2,
      bytesOut: 10,
      drops: 0,
      slowConsumers: 0,
    });
    assert.ok(
      stats.body.connections.some(
        (c: { name: string; msgsIn: number }) => c.name === 'ops-probe' && c.msgsIn === 2,
      ),
    );

    const metrics = await t.call('/datahub/metrics', { headers: auth });
    assert.equal(metrics.status, 200);
    assert.match(String(metrics.headers['content-type']), /^text\/plain/);
    assert.match(metrics.text, /^# TYPE millwright_datahub_messages_in_total counter$/m);
    assert.match(metrics.text, /^millwright_datahub_messages_in_total\{prefix="ops\.a"\} 2$/m);
    assert.match(metrics.text, /^millwright_datahub_bytes_out_total\{prefix="ops\.a"\} 10$/m);
    assert.match(
      metrics.text,
      /^millwright_datahub_connection_messages_in_total\{cid="\d+",name="ops-probe",address="127\.0\.0\.1:\d+"\} 2$/m,
    );
    assert.match(metrics.text, /^millwright_datahub_gateway_slow_consumers_total 1$/m);

    assert.equal((await t.call('/datahub/metrics')).status, 401, 'needs credentials');
  });
});

describe('DataHub gateway: remote clients (TLS and access keys)', () => {
  let t: TestEdge;
  let url: string;
  let caFile: string;
  let admin: string;
  const clients: NatsConnection[] = [];
  const remote = async (opts: ConnectionOptions = {}) => {
    const nc = await connect({ servers: url, tls: { caFile }, reconnect: false, ...opts });
    clients.push(nc);
    return nc;
  };
  const createKey = async (body: Record<string, unknown>) => {
    const res = await t.call('/datahub/v1/access-keys', {
      headers: { authorization: `Bearer ${admin}` },
      json: body,
    });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: string; key: string; name: string };
  };

  before(async () => {
    t = await startTestEdge({ datahubTrustLocal: false });
    url = t.edge.datahub.gateway!.url;
    caFile = join(t.dataDir, 'tls', 'server.crt');
    admin = await bootstrapAdmin(t);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await t.stop();
  });

  test('TLS is required: INFO says so, and a plain-text CONNECT gets no service', async () => {
    const raw = new RawClient(t.edge.datahub.gateway!.port);
    await raw.waitFor(/^INFO .*\r\n/);
    assert.equal(raw.info.tls_required, true);
    assert.equal(raw.info.auth_required, true);
    raw.send('CONNECT {"verbose":false}\r\nSUB x 1\r\nPING\r\n');
    await raw.closed;
    assert.doesNotMatch(raw.afterInfo, /PONG/);
  });

  test('a remote client without a key, or with a wrong key, is refused with Authorization Violation', async () => {
    for (const opts of [
      {},
      { user: 'admin', pass: 'mwk_wrong' },
      { token: 'not-a-key' },
    ] as ConnectionOptions[]) {
      await assert.rejects(remote(opts), (err: Error & { code?: string }) => {
        assert.equal(err.code, ErrorCode.AuthorizationViolation, String(err));
        return true;
      });
    }
    const stats = await t.call('/datahub/v1/stats', { headers: { authorization: `Bearer ${admin}` } });
    assert.ok(stats.body.gateway.authFailures >= 3);
  });

  test('an access key as password (user name ignored) or as token is accepted over TLS', async () => {
    const { key } = await createKey({ name: 'scada' });
    assert.match(key, /^mwk_[A-Za-z0-9_-]{43}$/);
    const byPass = await remote({ user: 'admin', pass: key, name: 'scada-1' });
    const byToken = await remote({ token: key });
    const byKeyAsUser = await remote({ user: key, pass: key });
    const got = collect(byToken, 'devicehub.raw.>', 2);
    await byToken.flush();
    byPass.publish('devicehub.raw.Gen1.S', sc.encode('1'));
    byKeyAsUser.publish('devicehub.raw.Gen1.S', sc.encode('2'));
    await got.done;
    assert.deepEqual(got.got.map((m) => m.data).sort(), ['1', '2']);
    const conns = t.edge.datahub.connections();
    const c = conns.find((x) => x.name === 'scada-1')!;
    assert.equal(c.tls, true);
    assert.equal(c.local, false);
    assert.equal(c.accessKey?.name, 'scada');
  });

  test('a key limited to subject patterns: other subjects are refused for publish and for subscribe', async () => {
    const { key } = await createKey({
      name: 'reader',
      publish: ['cmd.p1.>'],
      subscribe: ['devicehub.raw.>'],
    });
    const nc = await remote({ user: 'admin', pass: key });
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(String(s.data));
    })();
    const ok = collect(nc, 'devicehub.raw.>', 1);
    let deniedError = '';
    nc.subscribe('devicehub.alias.>', { callback: (err) => (deniedError = err ? err.message : 'no error') });
    await nc.flush();
    const spy = await remote({ user: 'admin', pass: (await createKey({ name: 'spy' })).key });
    const cmd = collect(spy, '>', 1, {}, 1500);
    await spy.flush();
    spy.publish('devicehub.raw.x.S', sc.encode('allowed'));
    nc.publish('cmd.p1.write', sc.encode('allowed'));
    nc.publish('cmd.p2.write', sc.encode('refused'));
    await nc.flush();
    await ok.done;
    await cmd.done;
    assert.deepEqual(
      ok.got.map((m) => m.data),
      ['allowed'],
    );
    await eventually(() => deniedError, 5000, 'the refused subscription reported');
    assert.match(deniedError, /Permissions Violation for Subscription to "devicehub\.alias\.>"/);
    assert.ok(
      errors.includes('PERMISSIONS_VIOLATION') || errors.some((e) => /PERMISSION/.test(e)),
      `publish refusal reported: ${errors.join(',')}`,
    );
    assert.ok(cmd.got.some((m) => m.subject === 'cmd.p1.write'));
    assert.ok(!cmd.got.some((m) => m.subject === 'cmd.p2.write'), 'the refused message went nowhere');
    assert.ok(!nc.isClosed(), 'permission errors keep the connection');

    // Request/reply works within the limits: the inbox is always allowed, the reply is allowed.
    const responder = await remote({
      user: 'admin',
      pass: (await createKey({ name: 'svc', publish: [], subscribe: ['svc.>'] })).key,
    });
    responder.subscribe('svc.time', { callback: (_e, m) => m.respond(sc.encode('noon')) });
    await responder.flush();
    const asker = await remote({
      user: 'admin',
      pass: (await createKey({ name: 'asker', publish: ['svc.>'], subscribe: [] })).key,
    });
    const r = await asker.request('svc.time', sc.encode(''), { timeout: 2000 });
    assert.equal(sc.decode(r.data), 'noon');
  });

  test('revoking a key cuts its live connections and refuses it afterwards', async () => {
    const { id, key } = await createKey({ name: 'temp' });
    const other = await createKey({ name: 'stays' });
    const nc = await remote({ user: 'admin', pass: key });
    const keep = await remote({ user: 'admin', pass: other.key });
    await nc.flush();
    const del = await t.call(`/datahub/v1/access-keys/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${admin}` },
    });
    assert.equal(del.status, 204);
    const err = await nc.closed();
    assert.equal((err as (Error & { code?: string }) | void)?.code, ErrorCode.AuthorizationViolation);
    await assert.rejects(
      remote({ user: 'admin', pass: key }),
      (e: Error & { code?: string }) => e.code === ErrorCode.AuthorizationViolation,
    );
    await keep.flush();
    assert.ok(!keep.isClosed(), 'other keys stay connected');
  });
});

describe('DataHub access keys over REST', () => {
  let t: TestEdge;
  let admin: string;
  before(async () => {
    t = await startTestEdge({ authRateLimit: 10_000 });
    admin = await bootstrapAdmin(t);
  });
  after(() => t.stop());

  test('create shows the key once; list and get never show it; delete revokes', async () => {
    const auth = { authorization: `Bearer ${admin}` };
    const created = await t.call('/datahub/v1/access-keys', {
      headers: auth,
      json: { name: 'grafana', subscribe: ['devicehub.>'] },
    });
    assert.equal(created.status, 201);
    assert.deepEqual(Object.keys(created.body).sort(), [
      'createdAt',
      'id',
      'key',
      'name',
      'prefix',
      'publish',
      'subscribe',
    ]);
    assert.equal(created.body.publish, null);
    assert.deepEqual(created.body.subscribe, ['devicehub.>']);
    assert.equal(created.body.prefix, created.body.key.slice(0, 10));
    await t.call('/datahub/v1/access-keys', { headers: auth, json: { name: 'second' } });

    const list = await t.call('/datahub/v1/access-keys?limit=1', { headers: auth });
    assert.equal(list.status, 200);
    assert.equal(list.body.total, 2);
    assert.equal(list.body.items.length, 1);
    assert.equal(list.body.items[0].name, 'grafana');
    assert.equal(list.body.items[0].key, undefined);
    assert.ok(!list.text.includes(created.body.key));
    const sorted = await t.call('/datahub/v1/access-keys?sort=name:desc', { headers: auth });
    assert.deepEqual(
      sorted.body.items.map((k: { name: string }) => k.name),
      ['second', 'grafana'],
    );

    const one = await t.call(`/datahub/v1/access-keys/${created.body.id}`, { headers: auth });
    assert.equal(one.status, 200);
    assert.equal(one.body.key, undefined);
    assert.equal(one.body.name, 'grafana');

    assert.equal(
      (await t.call(`/datahub/v1/access-keys/${created.body.id}`, { method: 'DELETE', headers: auth }))
        .status,
      204,
    );
    assert.equal((await t.call(`/datahub/v1/access-keys/${created.body.id}`, { headers: auth })).status, 404);
    assert.equal(
      (await t.call(`/datahub/v1/access-keys/${created.body.id}`, { method: 'DELETE', headers: auth }))
        .status,
      404,
    );
  });

  test('bodies are strict and patterns are checked; a viewer may list but not create', async () => {
    const auth = { authorization: `Bearer ${admin}` };
    const unknown = await t.call('/datahub/v1/access-keys', { headers: auth, json: { name: 'x', extra: 1 } });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.message, 'failed to decode request body: json: unknown field "extra"');
    const bad = await t.call('/datahub/v1/access-keys', {
      headers: auth,
      json: { name: 'x', publish: ['a.>.b'] },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /"a\.>\.b" is not a valid subject pattern/);
    const viewer = await clientToken(t, admin, 'viewer');
    const v = { authorization: `Bearer ${viewer.token}` };
    assert.equal((await t.call('/datahub/v1/access-keys', { headers: v, json: { name: 'x' } })).status, 403);
    assert.equal((await t.call('/datahub/v1/access-keys', { headers: v })).status, 200);
    assert.equal((await t.call('/datahub/v1/access-keys')).status, 401);
  });
});
