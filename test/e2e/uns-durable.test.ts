/**
 * Persistent sessions across a broker restart: QoS 1 and QoS 2 messages queued for an offline
 * subscriber (clean session off) are delivered after the UNS is stopped and started again on the
 * same data directory; the subscription itself and retained messages survive too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { MqttClient } from 'mqtt';
import {
  connectMqtt,
  createAccount,
  end,
  publish,
  startTestUns,
  subscribe,
  unsToken,
} from '../helpers/uns.js';

function collect(
  client: MqttClient,
  count: number,
  ms = 5000,
): Promise<{ topic: string; payload: string; qos: number }[]> {
  const got: { topic: string; payload: string; qos: number }[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`got ${got.length} of ${count}: ${JSON.stringify(got)}`)),
      ms,
    );
    client.on('message', (topic, payload, packet) => {
      got.push({ topic, payload: payload.toString(), qos: packet.qos });
      if (got.length === count) {
        clearTimeout(timer);
        resolve(got);
      }
    });
  });
}

test('QoS 1 and 2 messages for an offline persistent session are delivered after a broker restart', async () => {
  let t = await startTestUns();
  const dataDir = t.dataDir;
  try {
    const token = await unsToken(t);
    await createAccount(t, token, 'plc', 'plc-password', [{ path: 'durable/#', perm: 'PubSub' }]);
    const creds = { username: 'plc', password: 'plc-password' };
    let url = `mqtt://127.0.0.1:${t.mqttPort}`;

    const sub = await connectMqtt(url, { ...creds, clientId: 'durable-sub', clean: false });
    assert.equal(await subscribe(sub, 'durable/#', 2), 2);
    await end(sub);

    const pub = await connectMqtt(url, { ...creds, clientId: 'durable-pub' });
    await publish(pub, 'durable/q1', 'one', { qos: 1 });
    await publish(pub, 'durable/q2', 'two', { qos: 2 });
    await publish(pub, 'durable/state', 'retained', { qos: 1, retain: true });
    await end(pub);

    // Restart on the same data directory (new ports); a connection left open does not hold up the stop.
    const bystander = await connectMqtt(url, { ...creds, clientId: 'bystander' });
    bystander.on('error', () => undefined);
    await t.stop({ keepData: true });
    await end(bystander);
    t = await startTestUns({ dataDir });
    url = `mqtt://127.0.0.1:${t.mqttPort}`;

    // The subscription survived too: a message published while the subscriber is still offline.
    const pub2 = await connectMqtt(url, { ...creds, clientId: 'durable-pub' });
    await publish(pub2, 'durable/q2b', 'three', { qos: 2 });
    await end(pub2);

    const back = await connectMqtt(url, { ...creds, clientId: 'durable-sub', clean: false });
    const messages = await collect(back, 4);
    await end(back);
    const byTopic = Object.fromEntries(messages.map((m) => [m.topic, m]));
    assert.deepEqual(byTopic['durable/q1'], { topic: 'durable/q1', payload: 'one', qos: 1 });
    assert.deepEqual(byTopic['durable/q2'], { topic: 'durable/q2', payload: 'two', qos: 2 });
    assert.deepEqual(byTopic['durable/q2b'], { topic: 'durable/q2b', payload: 'three', qos: 2 });
    assert.equal(byTopic['durable/state']?.payload, 'retained');

    // Nothing is delivered twice after another restart: the acknowledgements were kept as well.
    await t.stop({ keepData: true });
    t = await startTestUns({ dataDir });
    const again = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      ...creds,
      clientId: 'durable-sub',
      clean: false,
    });
    await assert.rejects(collect(again, 1, 500), /got 0 of 1/);
    // Retained messages survive the restart and reach a new subscriber.
    const fresh = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, { ...creds, clientId: 'fresh' });
    const retained = collect(fresh, 1);
    await subscribe(fresh, 'durable/state', 1);
    assert.equal((await retained)[0]!.payload, 'retained');
    await end(fresh);
    await end(again);
  } finally {
    await t.stop({ keepData: true });
    rmSync(dataDir, { recursive: true, force: true });
  }
});
