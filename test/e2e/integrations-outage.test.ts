/**
 * Store-and-forward loses nothing: with the remote unreachable, 10,000 values are published on
 * the edge's DataHub (over NATS, as any client does); half way the edge is killed with SIGKILL and
 * started again on the same data directory; then the remote comes back. All 10,000 arrive, in
 * order, none twice, none lost. Against a private Mosquitto on an ephemeral port (stopped and
 * started again, sessions persisted), and against RabbitMQ and PostgreSQL (the system services,
 * made unreachable by cutting a TCP proxy in front of them).
 *
 * One edge (one data directory) for the three, each with an integration instance and a subject of
 * its own (deleted at its end): started once, killed and started again once per scenario.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { connect as natsConnect, JSONCodec } from 'nats';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';
import { startEdgeProcess, type EdgeProcess } from '../helpers/edge-process.js';
import amqp from 'amqplib';
import pg from 'pg';
import { amqpUnreachable, amqpUrl, TcpProxy } from '../helpers/integrations.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { pgTestDatabase } from '../helpers/postgres.js';
import { eventually, skipUnless } from '../helpers/util.js';

const N = 10_000;
const providerId = (name: string) => PROVIDERS.find((p) => p.name === name)!.id;
const jc = JSONCodec();

export interface OutagePeer {
  provider: string;
  remoteName: string;
  config(): Record<string, unknown>;
  /** Makes the remote reachable (first start and after the outage). */
  up(): Promise<void>;
  /** Makes the remote unreachable. */
  down(): Promise<void>;
  /** The values received so far, in arrival order. */
  received(): Promise<number[]>;
  /** How many values were received so far (polled while the queue drains; cheaper than `received`). */
  count(): Promise<number>;
  dispose(): Promise<void>;
}

const STATUS = `query($in: GetInstanceStatusRequest!) { GetInstanceStatus(input: $in) { InstanceState Reason Counters { Sent Queued Dropped } Queue { Depth } } }`;

async function status(edge: EdgeProcess, id: string): Promise<any> {
  return (await edge.cc(STATUS, { in: { InstanceID: id } })).GetInstanceStatus;
}

async function publish(edge: EdgeProcess, subject: string, from: number, to: number): Promise<void> {
  const nc = await natsConnect({ servers: edge.natsUrl });
  for (let i = from; i < to; i++) nc.publish(subject, jc.encode({ value: i, tagName: 'counter' }));
  await nc.flush();
  await nc.close();
}

const dataDir = mkdtempSync(join(tmpdir(), 'mw-outage-'));
/** The edge the scenarios share (undefined after a kill until it is started again). */
let edge: EdgeProcess | undefined;
let credentials: { clientId: string; secret: string } | undefined;
let scenarios = 0;
after(async () => {
  await edge?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function startEdge(): Promise<EdgeProcess> {
  const started = await startEdgeProcess(dataDir, credentials);
  credentials = started.credentials;
  edge = started;
  return started;
}

export async function outageScenario(peer: OutagePeer): Promise<void> {
  const subject = `test.outage.s${++scenarios}`;
  let made: string | undefined;
  try {
    await peer.up();
    edge ??= await startEdge();
    const created = await edge.cc(
      `mutation($input: CreateInstanceRequest!) { CreateInstance(input: $input) { ID } }`,
      { input: { Name: 'outage', ProviderID: providerId(peer.provider), Config: peer.config() } },
    );
    const id = created.CreateInstance.ID as string;
    made = id;
    await edge.cc(
      `mutation($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { TopicID } }`,
      {
        input: {
          InstanceID: id,
          IsLocalToRemote: true,
          LocalName: `${subject}.>`,
          RemoteName: peer.remoteName,
        },
      },
    );
    await eventually(
      async () => (await status(edge!, id)).InstanceState === 'Connected',
      20_000,
      'connected',
    );

    // The outage.
    await peer.down();
    await eventually(
      async () => (await status(edge!, id)).InstanceState === 'Disconnected',
      20_000,
      'disconnected',
    );
    await publish(edge, `${subject}.counter`, 0, N / 2);
    await eventually(
      async () => (await status(edge!, id)).Queue.Depth === N / 2,
      20_000,
      'first half queued',
    );

    // SIGKILL half way, then the same data directory again.
    await edge.kill();
    edge = undefined;
    edge = await startEdge();
    const after = await status(edge, id);
    assert.equal(after.Queue.Depth, N / 2, 'the queue survived SIGKILL');
    assert.notEqual(after.InstanceState, 'Connected');
    await publish(edge, `${subject}.counter`, N / 2, N);
    await eventually(async () => (await status(edge!, id)).Queue.Depth === N, 20_000, 'all queued');

    // The remote is back: the queue drains, in order.
    await peer.up();
    let count = 0;
    await eventually(
      async () => {
        count = await peer.count();
        return count >= N;
      },
      90_000,
      'all values at the remote',
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${count} received`);
    });
    await eventually(async () => (await status(edge!, id)).Queue.Depth === 0, 20_000, 'queue empty');
    const got = await peer.received();
    assert.equal(got.length, N, 'none twice');
    const firstGap = got.findIndex((v, i) => v !== i);
    assert.equal(firstGap, -1, `in order and none lost (first mismatch at ${firstGap}: ${got[firstGap]})`);
    const st = await status(edge, id);
    assert.equal(st.Counters.Dropped, 0);
    assert.equal(st.Counters.Sent, N);
  } finally {
    // The next scenario's edge without this one's instance (it would retry its remote meanwhile).
    if (edge && made)
      await edge
        .cc(`mutation($input: DeleteInstanceRequest!) { DeleteInstance(input: $input) }`, {
          input: { InstanceID: made },
        })
        .catch(() => undefined);
    await peer.dispose();
  }
}

const mosquittoSkip = skipUnless('mosquitto') && skipUnless('/usr/sbin/mosquitto');

describe('integrations: store-and-forward through an outage and a SIGKILL', () => {
  test(
    'Mosquitto (MQTT QoS 1): 10,000 values, all arrive, in order, none twice',
    { skip: mosquittoSkip, timeout: 240_000 },
    async () => {
      const broker = new Mosquitto({ persistence: true });
      let sub: MqttClient | undefined;
      const values: number[] = [];
      await outageScenario({
        provider: 'MQTT',
        remoteName: 'outage/values',
        config: () => ({ host: '127.0.0.1', port: broker.port, qos: 1, reconnectInterval: 300 }),
        async up() {
          await broker.start();
          if (!sub) {
            // A persistent session (clean false) at QoS 1: the broker keeps what arrives while it is away.
            sub = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, {
              clientId: 'outage-receiver',
              clean: false,
              reconnectPeriod: 200,
            });
            sub.on('error', () => undefined);
            sub.on('message', (_t, payload) =>
              values.push((JSON.parse(payload.toString()) as { value: number }).value),
            );
            await sub.subscribeAsync('outage/#', { qos: 1 });
          }
        },
        down: () => broker.stop(),
        received: async () => values,
        count: async () => values.length,
        async dispose() {
          await sub?.endAsync(true);
          await broker.dispose();
        },
      });
    },
  );

  test(
    'RabbitMQ (publisher confirms): 10,000 values, all arrive, in order, none twice',
    { timeout: 240_000 },
    async (t) => {
      const reason = await amqpUnreachable();
      if (reason) return t.skip(reason);
      const target = new URL(amqpUrl);
      const proxy = new TcpProxy(Number(target.port || 5672), target.hostname);
      const conn = await amqp.connect(amqpUrl);
      const ch = await conn.createChannel();
      const queue = `mw-outage-${process.pid}-${Date.now()}`;
      await ch.assertQueue(queue, { durable: false });
      const values: number[] = [];
      await ch.consume(
        queue,
        (m) => {
          if (m) values.push((JSON.parse(m.content.toString()) as { value: number }).value);
        },
        { noAck: true },
      );
      await outageScenario({
        provider: 'AMQP 0-9-1',
        remoteName: queue,
        config: () => ({
          url: `amqp://127.0.0.1:${proxy.port}`,
          username: 'guest',
          password: 'guest',
          reconnectInterval: 300,
        }),
        up: async () => void (await proxy.start()),
        down: () => proxy.stop(),
        received: async () => values,
        count: async () => values.length,
        async dispose() {
          await proxy.stop();
          await ch.deleteQueue(queue).catch(() => undefined);
          await conn.close();
        },
      });
    },
  );

  test(
    'PostgreSQL (committed inserts): 10,000 rows, in order, none twice',
    { timeout: 240_000 },
    async (t) => {
      const db = await pgTestDatabase(t);
      if (!db) return;
      const target = new URL(db.url);
      const proxy = new TcpProxy(Number(target.port || 5432), target.hostname);
      const viaProxy = () => {
        const u = new URL(db.url);
        u.hostname = '127.0.0.1';
        u.port = String(proxy.port);
        return u.toString();
      };
      const reader = new pg.Client({ connectionString: db.url });
      await reader.connect();
      await outageScenario({
        provider: 'PostgreSQL',
        remoteName: 'outage_values',
        config: () => ({ url: viaProxy(), reconnectInterval: 300 }),
        up: async () => void (await proxy.start()),
        down: () => proxy.stop(),
        async received() {
          const exists = await reader.query(`select to_regclass('outage_values') as t`);
          if (!exists.rows[0].t) return [];
          const r = await reader.query(`select (payload->>'value')::int as v from outage_values order by id`);
          return r.rows.map((x: { v: number }) => x.v);
        },
        async count() {
          const exists = await reader.query(`select to_regclass('outage_values') as t`);
          if (!exists.rows[0].t) return 0;
          return (await reader.query(`select count(*)::int as n from outage_values`)).rows[0].n as number;
        },
        async dispose() {
          await proxy.stop();
          await reader.end();
        },
      });
    },
  );
});
