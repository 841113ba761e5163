/**
 * A PUBACKed retained message is on disk (issue 34): the PUBACK of a retained QoS 1 PUBLISH leaves
 * only once the retained message's store has committed (aedes writes it before it stores the
 * message; wire.ts holds it), PUBACKs stay in the order of their PUBLISHes, and a `kill -9` of the
 * UNS right after the PUBACKs loses none of the acknowledged retained messages.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import {
  connectMqtt,
  createAccount,
  end,
  PROCESS_ACCOUNT,
  startTestUns,
  startUnsProcess,
  subscribe,
  unsToken,
} from '../helpers/uns.js';
import { eventually } from '../helpers/util.js';
import { BrokerRepository } from '../../src/uns/broker/repository.js';

/** PUBACK message ids in the order the client receives them. */
function pubacks(client: MqttClient): number[] {
  const ids: number[] = [];
  client.on('packetreceive', (packet) => {
    if (packet.cmd === 'puback') ids.push(packet.messageId!);
  });
  return ids;
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

test('the PUBACK of a retained QoS 1 message waits for its store, and PUBACKs keep their order', async () => {
  const t = await startTestUns();
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  try {
    const token = await unsToken(t);
    await createAccount(t, token, 'dev', 'dev-password', [{ path: 'r/#', perm: 'PubSub' }]);
    // The retained store is held until the test lets it go.
    const persistence = t.uns.broker.persistence;
    const storeRetained = persistence.storeRetained.bind(persistence);
    const events: string[] = [];
    persistence.storeRetained = async (packet) => {
      events.push(`store ${packet.topic}`);
      await gate;
      await storeRetained(packet);
      events.push(`stored ${packet.topic}`);
    };
    const client = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'dev',
      password: 'dev-password',
    });
    const acked = pubacks(client);
    client.on('packetreceive', (packet) => {
      if (packet.cmd === 'puback') events.push(`puback ${packet.messageId}`);
    });
    const done = Promise.all([
      client.publishAsync('r/state', 'on', { qos: 1, retain: true }),
      client.publishAsync('r/plain', 'x', { qos: 1 }),
    ]);
    await eventually(() => events.includes('store r/state'));
    // The broker has had many turns of its event loop to send a PUBACK it did not hold.
    await turns(50);
    // Time is the test: a PUBACK not held would have arrived by now.
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(acked, [], `no PUBACK before the retained message is stored: ${events.join(', ')}`);
    open();
    await done;
    // The plain message's PUBACK waited behind the retained one's: the order of the PUBLISHes.
    assert.equal(acked.length, 2);
    assert.ok(acked[0]! !== acked[1]!);
    assert.ok(
      events.indexOf('stored r/state') < events.indexOf(`puback ${acked[0]}`),
      `stored before the PUBACK: ${events.join(', ')}`,
    );
    await end(client);
  } finally {
    open();
    await t.stop();
  }
});

test('a retained QoS 1 message is delivered before its commit, and its PUBACK waits for the commit', async () => {
  const t = await startTestUns();
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  // The commit of retained messages is held until the test lets it go.
  const writeRetained = BrokerRepository.prototype.writeRetained;
  const committed: string[] = [];
  BrokerRepository.prototype.writeRetained = async function (trx, packets) {
    await gate;
    await writeRetained.call(this, trx, packets);
    committed.push(...packets.keys());
  };
  try {
    const token = await unsToken(t);
    await createAccount(t, token, 'dev', 'dev-password', [{ path: 'r/#', perm: 'PubSub' }]);
    const url = `mqtt://127.0.0.1:${t.mqttPort}`;
    const sub = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
    const live: string[] = [];
    sub.on('message', (topic) => live.push(topic));
    await subscribe(sub, 'r/#', 1);
    const client = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
    // Connected before (a clean session's connect writes, and writes queue behind the held commit).
    const late = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
    const acked = pubacks(client);
    const done = Promise.all([
      client.publishAsync('r/a', 'on', { qos: 1, retain: true }),
      client.publishAsync('r/b', 'off', { qos: 1, retain: true }),
      client.publishAsync('r/plain', 'x', { qos: 1 }),
    ]);
    // Delivered (and retained in memory: a new subscriber gets them) while the commit is held.
    await eventually(() => live.length === 3, 5000, `3 live messages, got ${live.join(', ')}`);
    const retained = new Map<string, string>();
    late.on('message', (topic, payload, packet) => {
      if (packet.retain) retained.set(topic, payload.toString());
    });
    await subscribe(late, 'r/#', 0);
    await eventually(() => retained.size === 2, 5000, `2 retained messages, got ${retained.size}`);
    assert.deepEqual(Object.fromEntries(retained), { 'r/a': 'on', 'r/b': 'off' });
    // No PUBACK before the commit, not even the plain message's (it waits behind them).
    await turns(50);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(acked, [], 'no PUBACK before the retained messages are committed');
    assert.deepEqual(committed, []);
    open();
    await done;
    assert.deepEqual(committed.sort(), ['r/a', 'r/b']);
    assert.equal(acked.length, 3);
    await Promise.all([end(client), end(sub), end(late)]);
  } finally {
    BrokerRepository.prototype.writeRetained = writeRetained;
    open();
    await t.stop();
  }
});

test('a window of retained QoS 1 messages read at once commits in halves, the first half PUBACKed before the second commits', async () => {
  const t = await startTestUns(); // Receive Maximum 100 (--max-inflight-inbound)
  const writeRetained = BrokerRepository.prototype.writeRetained;
  let conn: { bytesWritten: number } | undefined;
  // Each commit of retained messages: its rows, and the bytes the publisher's connection had been
  // sent when it began (the PUBACKs of the commits before it, once they are on the socket).
  const commits: { rows: number; sent: number }[] = [];
  BrokerRepository.prototype.writeRetained = async function (trx, packets) {
    commits.push({ rows: packets.size, sent: conn?.bytesWritten ?? -1 });
    await writeRetained.call(this, trx, packets);
  };
  try {
    const token = await unsToken(t);
    await createAccount(t, token, 'dev', 'dev-password', [{ path: 'w/#', perm: 'PubSub' }]);
    const client = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'dev',
      password: 'dev-password',
      protocolVersion: 5,
      clientId: 'window',
    });
    const aedes = t.uns.broker.aedes as unknown as {
      clients: Record<string, { conn: { bytesWritten: number } }>;
    };
    conn = aedes.clients.window!.conn;
    const before = conn.bytesWritten;
    const acked = pubacks(client);
    // 100 PUBLISHes in one write (mqtt.js corks the publishes of one tick): one read of the broker.
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        client.publishAsync(`w/t${i}`, `v${i}`, { qos: 1, retain: true }),
      ),
    );
    assert.equal(acked.length, 100);
    assert.deepEqual(
      commits.map((c) => c.rows),
      [50, 50],
    );
    // The first half's 50 PUBACKs were on the socket before the second half's commit began.
    assert.ok(
      commits[1]!.sent - before >= 50 * 4,
      `bytes sent before the second commit: ${commits[1]!.sent - before}`,
    );
    await end(client);
  } finally {
    BrokerRepository.prototype.writeRetained = writeRetained;
    await t.stop();
  }
});

test('a new subscriber gets every retained message, more of them than are written at once', async () => {
  const t = await startTestUns();
  try {
    const token = await unsToken(t);
    await createAccount(t, token, 'dev', 'dev-password', [{ path: 'many/#', perm: 'PubSub' }]);
    const url = `mqtt://127.0.0.1:${t.mqttPort}`;
    const pub = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
    const count = 700; // beyond RETAINED_WINDOW (256) of aedes-support.ts
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < count) {
          const n = next++;
          await pub.publishAsync(`many/t${n}`, `v${n}`, { qos: 1, retain: true });
        }
      }),
    );
    // MQTT 3.1.1 and 5; a subscription at QoS 0 and at QoS 1 of a wildcard filter.
    for (const [protocolVersion, qos] of [
      [4, 0],
      [4, 1],
      [5, 0],
      [5, 1],
    ] as const) {
      const sub = await connectMqtt(url, { username: 'dev', password: 'dev-password', protocolVersion });
      const got = new Map<string, string>();
      const qosSeen = new Set<number>();
      let live = 0;
      sub.on('message', (topic, payload, packet) => {
        if (packet.retain) {
          got.set(topic, payload.toString());
          qosSeen.add(packet.qos);
        } else live++;
      });
      await subscribe(sub, 'many/#', qos);
      await eventually(() => got.size === count, 10_000, `QoS ${qos}: ${count} retained, got ${got.size}`);
      for (let n = 0; n < count; n++) assert.equal(got.get(`many/t${n}`), `v${n}`);
      // At the subscription's QoS, not the stored message's (QoS 1): [MQTT-3.8.4-8].
      assert.deepEqual([...qosSeen], [qos], `MQTT ${protocolVersion}, a QoS ${qos} subscription`);
      // After them, a live message arrives as a live one (not retained).
      await pub.publishAsync('many/t0', 'live', { qos: 1 });
      await eventually(() => live === 1, 5000, `QoS ${qos}: the live message`);
      await end(sub);
    }
    await end(pub);
  } finally {
    await t.stop();
  }
});

test('retained messages past --max-retained and --max-retained-bytes are delivered, not retained', async () => {
  const t = await startTestUns({ maxRetained: 3, maxRetainedBytes: 2048 });
  try {
    const token = await unsToken(t);
    await createAccount(t, token, 'dev', 'dev-password', [{ path: 'cap/#', perm: 'PubSub' }]);
    const url = `mqtt://127.0.0.1:${t.mqttPort}`;
    const pub = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
    const watcher = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
    const live: string[] = [];
    watcher.on('message', (topic) => live.push(topic));
    await subscribe(watcher, 'cap/#', 1);
    for (const n of [1, 2, 3, 4]) await pub.publishAsync(`cap/t${n}`, `v${n}`, { qos: 1, retain: true });
    // What a new subscriber gets, and what the broker holds (the absence of a topic is read from
    // the broker: a subscriber cannot tell "not retained" from "not yet sent").
    const retainedNow = async (expected: number) => {
      const sub = await connectMqtt(url, { username: 'dev', password: 'dev-password' });
      const got = new Map<string, string>();
      sub.on('message', (topic, payload, packet) => {
        if (packet.retain) got.set(topic, payload.toString());
      });
      await subscribe(sub, 'cap/#', 1);
      await eventually(() => got.size >= expected, 5000, `${expected} retained, got ${got.size}`);
      await end(sub);
      const held: { topic: string }[] = await t.uns.broker.persistence
        .createRetainedStream('cap/#')
        .toArray();
      assert.deepEqual(held.map((p) => p.topic).sort(), [...got.keys()].sort());
      return Object.fromEntries([...got].sort());
    };
    // The fourth topic was delivered to the subscriber of the moment, not retained.
    await eventually(() => live.length === 4, 5000, `live: ${live.join(', ')}`);
    assert.deepEqual(await retainedNow(3), { 'cap/t1': 'v1', 'cap/t2': 'v2', 'cap/t3': 'v3' });
    // Replacing a retained topic's message works at the bound; a delete frees a place.
    await pub.publishAsync('cap/t1', 'v1b', { qos: 1, retain: true });
    await pub.publishAsync('cap/t2', '', { qos: 1, retain: true });
    await pub.publishAsync('cap/t5', 'x'.repeat(4096), { qos: 1, retain: true }); // over the bytes
    await pub.publishAsync('cap/t6', 'v6', { qos: 1, retain: true });
    assert.deepEqual(await retainedNow(3), { 'cap/t1': 'v1b', 'cap/t3': 'v3', 'cap/t6': 'v6' });
    await end(pub);
    await end(watcher);
  } finally {
    await t.stop();
  }
});

test('retained QoS 1 messages PUBACKed before a kill -9 of the UNS are there after its restart', async () => {
  const first = await startUnsProcess();
  let second: Awaited<ReturnType<typeof startUnsProcess>> | undefined;
  try {
    const pub = await connectMqtt(first.mqttUrl, { ...PROCESS_ACCOUNT, reconnectPeriod: 0 });
    pub.on('error', () => undefined);
    const acked: string[] = [];
    const count = 300;
    // A window of 50 in flight, as a publisher under load keeps; the process is killed at once
    // after the last PUBACK.
    let next = 0;
    await new Promise<void>((resolve) => {
      const send = () => {
        const n = next++;
        const topic = `durable/t${n}`;
        pub.publish(topic, `v${n}`, { qos: 1, retain: true }, (err) => {
          if (err) return;
          acked.push(topic);
          if (acked.length === count) {
            process.kill(first.pid, 'SIGKILL');
            resolve();
          } else if (next < count) send();
        });
      };
      for (let i = 0; i < 50; i++) send();
    });
    await first.stop({ keepData: true });
    pub.end(true);
    second = await startUnsProcess([], ['#:PubSub'], first.dataDir);
    const sub = await connectMqtt(second.mqttUrl, { ...PROCESS_ACCOUNT });
    const got = new Map<string, string>();
    sub.on('message', (topic, payload, packet) => {
      if (packet.retain) got.set(topic, payload.toString());
    });
    await subscribe(sub, 'durable/#', 0);
    await eventually(() => got.size === count, 10_000, `${count} retained messages, got ${got.size}`);
    for (const topic of acked) assert.equal(got.get(topic), `v${topic.slice('durable/t'.length)}`);
    await end(sub);
  } finally {
    if (second) await second.stop();
    else await first.stop();
  }
});
