/**
 * Each connector against a real peer on this machine: values published on the DataHub arrive at
 * the peer; for remote-to-local subscriptions, values from the peer arrive on the DataHub.
 * NATS (a private nats-server, JetStream publish acks), AMQP 0-9-1 (RabbitMQ, publisher
 * confirms), HTTP webhook (a test server that fails a batch first: retried), PostgreSQL and
 * MySQL/MariaDB (rows, the documented table shape), Redis streams (XADD, XREAD).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { Redis } from 'ioredis';
import { connect as natsConnect, JSONCodec, StringCodec } from 'nats';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';
import {
  amqpUnreachable,
  amqpUrl,
  mysqlTestUrl,
  NatsServer,
  startIntegEdge,
  type IntegEdge,
} from '../helpers/integrations.js';
import { pgTestDatabase } from '../helpers/postgres.js';
import { redisTestUrl } from '../helpers/redis.js';
import { eventually, skipUnless } from '../helpers/util.js';

const id = (name: string) => PROVIDERS.find((p) => p.name === name)!.id;
const jc = JSONCodec();
const sc = StringCodec();
const N = 200;

describe('integrations: connectors against real peers', () => {
  let e: IntegEdge;
  const publishN = (subject: string, n = N) => {
    for (let i = 0; i < n; i++) e.t.edge.datahub.hub.publish(subject, { value: i, tagName: 't' });
  };
  const onHub = (pattern: string) => {
    const got: { subject: string; data: unknown }[] = [];
    const sub = e.t.edge.datahub.hub.subscribe(pattern, (m) =>
      got.push({ subject: m.subject, data: m.data }),
    );
    return { got, stop: () => sub.unsubscribe() };
  };

  before(async () => {
    e = await startIntegEdge();
  });
  after(async () => {
    await e?.stop();
  });

  test(
    'NATS: both directions; JetStream publish acks',
    { skip: skipUnless('nats-server') && skipUnless('/usr/sbin/nats-server') },
    async () => {
      const server = new NatsServer();
      await server.start();
      const nc = await natsConnect({ servers: `127.0.0.1:${server.port}` });
      try {
        const inst = await e.createInstance('nats', id('NATS'), {
          servers: `nats://127.0.0.1:${server.port}`,
        });
        await e.subscribe(inst, true, 'devicehub.raw.n.>', 'plant.{subject}');
        await e.subscribe(inst, false, 'fromnats.{topic}', 'commands.>');
        await e.waitState(inst, 'Connected');
        const got: number[] = [];
        const sub = nc.subscribe('plant.devicehub.raw.n.>', {
          callback: (_err, m) => got.push((jc.decode(m.data) as any).value),
        });
        await nc.flush();
        publishN('devicehub.raw.n.x');
        await eventually(() => got.length === N, 10_000, 'NATS values');
        assert.deepEqual(
          got,
          Array.from({ length: N }, (_, i) => i),
        );
        sub.unsubscribe();
        const hub = onHub('fromnats.>');
        nc.publish('commands.pump.start', jc.encode({ on: true }));
        nc.publish('commands.pump.bad', sc.encode('{oops'));
        await eventually(() => hub.got.length === 1, 5000, 'NATS → DataHub');
        assert.deepEqual(hub.got[0], { subject: 'fromnats.commands.pump.start', data: { on: true } });
        await eventually(
          async () => (await e.status(inst)).Counters.Malformed === 1,
          5000,
          'malformed counted',
        );
        hub.stop();

        // JetStream: a stream on js.>; publishes wait for its acks.
        const jsm = await nc.jetstreamManager();
        await jsm.streams.add({ name: 'MWTEST', subjects: ['js.>'] });
        const js = await e.createInstance('nats-js', id('NATS'), {
          servers: `nats://127.0.0.1:${server.port}`,
          jetstream: true,
        });
        await e.subscribe(js, true, 'devicehub.raw.js.>', 'js.{subject}');
        await e.waitState(js, 'Connected');
        publishN('devicehub.raw.js.y', 100);
        await eventually(
          async () => (await jsm.streams.info('MWTEST')).state.messages === 100,
          10_000,
          'JetStream stored',
        );
        await eventually(async () => (await e.status(js)).Counters.Sent === 100, 5000, 'acked');
        // No stream for the subject: no ack, the instance says why and keeps the messages.
        const nostream = await e.createInstance('nats-js-nostream', id('NATS'), {
          servers: `nats://127.0.0.1:${server.port}`,
          jetstream: true,
          reconnectInterval: 300,
        });
        await e.subscribe(nostream, true, 'devicehub.raw.nostream.>', 'nostream.{subject}');
        await e.waitState(nostream, 'Connected');
        publishN('devicehub.raw.nostream.z', 5);
        const st = await e.waitState(nostream, 'Disconnected');
        assert.match(st.LastError, /no responders|503|stream/i);
        await eventually(async () => (await e.status(nostream)).Queue.Depth === 5, 5000, 'kept in the queue');
      } finally {
        await nc.close();
        await server.dispose();
      }
    },
  );

  test('AMQP 0-9-1 (RabbitMQ): publisher confirms; a queue consumed back onto the DataHub', async (t) => {
    const reason = await amqpUnreachable();
    if (reason) return t.skip(reason);
    const conn = await amqp.connect(amqpUrl);
    const ch = await conn.createChannel();
    const q = `mw-test-${randomBytes(4).toString('hex')}`;
    const back = `${q}-back`;
    await ch.assertQueue(q, { autoDelete: false, durable: false });
    await ch.assertQueue(back, { durable: false });
    try {
      const inst = await e.createInstance('amqp', id('AMQP 0-9-1'), {
        url: 'amqp://127.0.0.1:5672',
        username: 'guest',
        password: 'guest',
      });
      await e.subscribe(inst, true, 'devicehub.raw.a.>', q);
      await e.subscribe(inst, false, 'fromamqp.in', back);
      await e.waitState(inst, 'Connected');
      publishN('devicehub.raw.a.x');
      await eventually(async () => (await e.status(inst)).Counters.Sent === N, 10_000, 'confirmed');
      const got: number[] = [];
      for (;;) {
        const m = await ch.get(q, { noAck: true });
        if (!m) break;
        got.push(JSON.parse(m.content.toString()).value);
        assert.equal(m.properties.headers?.subject, 'devicehub.raw.a.x');
      }
      assert.deepEqual(
        got,
        Array.from({ length: N }, (_, i) => i),
      );
      const hub = onHub('fromamqp.>');
      ch.sendToQueue(back, Buffer.from(JSON.stringify({ cmd: 1 })));
      ch.sendToQueue(back, Buffer.from('nope'));
      await eventually(() => hub.got.length === 1, 5000, 'AMQP → DataHub');
      assert.deepEqual(hub.got[0], { subject: 'fromamqp.in', data: { cmd: 1 } });
      await eventually(
        async () => (await e.status(inst)).Counters.Malformed === 1,
        5000,
        'malformed counted',
      );
      hub.stop();
      const bad = await e.createInstance('amqp-bad-login', id('AMQP 0-9-1'), {
        url: 'amqp://127.0.0.1:5672',
        username: 'guest',
        password: 'wrong',
        reconnectInterval: 1000,
      });
      const st = await e.waitState(bad, 'Disconnected');
      assert.match(st.Reason, /ACCESS_REFUSED|403|refused|auth/i);
    } finally {
      await ch.deleteQueue(q).catch(() => undefined);
      await ch.deleteQueue(back).catch(() => undefined);
      await conn.close();
    }
  });

  test('HTTP webhook: batches, a failed batch retried, 2xx acknowledges', async () => {
    const batches: any[][] = [];
    let answered = 0;
    const server: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        if (req.method !== 'POST') return void res.writeHead(200).end();
        answered++;
        if (answered === 1) return void res.writeHead(503).end('busy');
        batches.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const inst = await e.createInstance('webhook', id('HTTP Webhook'), {
        url: `http://127.0.0.1:${port}/ingest`,
        batchSize: 50,
        reconnectInterval: 200,
        headers: { 'x-plant': 'p1' },
      });
      await e.subscribe(inst, true, 'devicehub.raw.h.>', 'values');
      await e.waitState(inst, 'Connected');
      publishN('devicehub.raw.h.x');
      await eventually(() => batches.flat().length >= N, 15_000, 'webhook values');
      const values = batches.flat().map((m) => m.payload.value);
      assert.deepEqual(
        values,
        Array.from({ length: N }, (_, i) => i),
      );
      assert.ok(batches.every((b) => b.length <= 50));
      assert.equal(batches[0]![0].subject, 'devicehub.raw.h.x');
      const st = await e.status(inst);
      assert.match(st.LastError, /HTTP 503/);
      assert.equal(st.Queue.Depth, 0);
    } finally {
      server.close();
    }
  });

  test('PostgreSQL: batched rows in the documented table shape', async (t) => {
    const db = await pgTestDatabase(t);
    if (!db) return;
    const inst = await e.createInstance('pg', id('PostgreSQL'), { url: db.url });
    await e.subscribe(inst, true, 'devicehub.raw.p.>', 'tag_values');
    await e.waitState(inst, 'Connected');
    publishN('devicehub.raw.p.x');
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await eventually(async () => (await e.status(inst)).Counters.Sent === N, 10_000, 'rows committed');
      const rows = (await c.query('select msg_id, subject, ts, payload from tag_values order by id')).rows;
      assert.equal(rows.length, N);
      assert.deepEqual(
        rows.map((r) => r.payload.value),
        Array.from({ length: N }, (_, i) => i),
      );
      assert.equal(rows[0].subject, 'devicehub.raw.p.x');
      assert.match(rows[0].msg_id, new RegExp(`^${inst}:\\d+$`));
      assert.ok(rows[0].ts instanceof Date);
      const refused = await e.gql(
        `mutation($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { TopicID } }`,
        {
          input: { InstanceID: inst, IsLocalToRemote: true, LocalName: 'a.b', RemoteName: 'bad-table;drop' },
        },
      );
      assert.match(refused.errors[0].message, /a table name is letters, digits and _/);
    } finally {
      await c.end();
      await e.ok(`mutation($input: DeleteInstanceRequest!) { DeleteInstance(input: $input) }`, {
        input: { InstanceID: inst },
      });
    }
  });

  test('MySQL / MariaDB: batched rows in the documented table shape', async (t) => {
    const url = await mysqlTestUrl();
    if (!url) return t.skip('MySQL/MariaDB unreachable');
    const table = `tag_values_${randomBytes(3).toString('hex')}`;
    const conn = await mysql.createConnection({ uri: url });
    try {
      const inst = await e.createInstance('mysql', id('MySQL / MariaDB'), { url });
      await e.subscribe(inst, true, 'devicehub.raw.m.>', table);
      await e.waitState(inst, 'Connected');
      publishN('devicehub.raw.m.x');
      await eventually(async () => (await e.status(inst)).Counters.Sent === N, 10_000, 'rows committed');
      const [rows] = (await conn.query(
        `select msg_id, subject, ts, payload from \`${table}\` order by id`,
      )) as any;
      assert.equal(rows.length, N);
      const payload = (r: any) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload);
      assert.deepEqual(
        rows.map((r: any) => payload(r).value),
        Array.from({ length: N }, (_, i) => i),
      );
      assert.equal(rows[0].subject, 'devicehub.raw.m.x');
      const bad = await e.createInstance('mysql-bad', id('MySQL / MariaDB'), {
        url: url.replace(/:[^:@/]*@/, ':wrong@'),
        reconnectInterval: 1000,
      });
      const st = await e.waitState(bad, 'Disconnected');
      assert.match(st.Reason, /Access denied/);
    } finally {
      await conn.query(`drop table if exists \`${table}\``);
      await conn.end();
    }
  });

  test('Redis streams: XADD per value; XREAD back onto the DataHub', async (t) => {
    const url = await redisTestUrl(t);
    if (!url) return;
    const stream = `mw:test:${randomBytes(3).toString('hex')}`;
    const r = new Redis(url);
    try {
      const inst = await e.createInstance('redis', id('Redis Streams'), { url });
      await e.subscribe(inst, true, 'devicehub.raw.r.>', `${stream}:out`);
      await e.subscribe(inst, false, 'fromredis.{topic}', `${stream}:in`);
      await e.waitState(inst, 'Connected');
      publishN('devicehub.raw.r.x');
      await eventually(async () => (await r.xlen(`${stream}:out`)) === N, 10_000, 'stream entries');
      const entries = await r.xrange(`${stream}:out`, '-', '+');
      assert.deepEqual(
        entries.map(([, f]) => JSON.parse(f[f.indexOf('payload') + 1]!).value),
        Array.from({ length: N }, (_, i) => i),
      );
      const hub = onHub('fromredis.>');
      // The reader starts at the newest entry: write after it is connected.
      await new Promise((res) => setTimeout(res, 300));
      await r.xadd(`${stream}:in`, '*', 'payload', JSON.stringify({ v: 5 }));
      await eventually(() => hub.got.length === 1, 5000, 'Redis → DataHub');
      assert.equal((hub.got[0]!.data as any).v, 5);
      assert.match(hub.got[0]!.subject, /^fromredis\.mw:test:/);
      hub.stop();
    } finally {
      await r.del(`${stream}:out`, `${stream}:in`);
      r.disconnect();
    }
  });
});
