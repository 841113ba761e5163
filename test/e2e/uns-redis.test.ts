/**
 * Two UNS processes' worth of service (two nodes in this process, each with its own broker, ports
 * and data directory) sharing this machine's Redis (subscriptions, retained messages, sessions,
 * deliveries) and one PostgreSQL database (users, accounts and rules): a client on node A receives
 * what is published on node B, a persistent session moves between nodes, and an account disabled
 * through node A is cut off on node B.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pgTestDatabase } from '../helpers/postgres.js';
import { redisTestUrl } from '../helpers/redis.js';
import {
  closed,
  connectMqtt,
  createAccount,
  end,
  gql,
  nextMessage,
  publish,
  startTestUns,
  subscribe,
  unsToken,
} from '../helpers/uns.js';

test('two UNS nodes on one Redis and one PostgreSQL: publish on one, receive on the other', async (t) => {
  const redisUrl = await redisTestUrl(t);
  if (!redisUrl) return;
  const pg = await pgTestDatabase(t);
  if (!pg) return;
  const a = await startTestUns({ redisUrl, databaseUrl: pg.url });
  const b = await startTestUns({ redisUrl, databaseUrl: pg.url });
  const run = randomBytes(4).toString('hex');
  const base = `twonode/${run}`;
  try {
    // Accounts made through node A are known to node B (same database).
    const token = await unsToken(a);
    const id = await createAccount(a, token, `node-test-${run}`, 'node-test-password', [
      { path: 'twonode/#', perm: 'PubSub' },
    ]);
    const creds = { username: `node-test-${run}`, password: 'node-test-password' };
    const tokenB = await unsToken(b);
    // Node B notices the change within its 1 s refresh.
    let seen = 0;
    for (let i = 0; i < 30 && seen === 0; i++) {
      seen = (await gql(b, tokenB, `query($id: ID) { account(id: $id) { id } }`, { id })).account.length;
      if (seen === 0) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(seen, 1);

    const onA = await connectMqtt(`mqtt://127.0.0.1:${a.mqttPort}`, creds);
    const onB = await connectMqtt(`mqtt://127.0.0.1:${b.mqttPort}`, creds);
    assert.equal(await subscribe(onA, `${base}/#`, 1), 1);
    // No event says that the other node knows of the subscription (shared through Redis).
    await new Promise((r) => setTimeout(r, 200));
    for (const qos of [0, 1, 2] as const) {
      const got = nextMessage(onA, `${base}/q${qos}`);
      await publish(onB, `${base}/q${qos}`, `from B qos ${qos}`, { qos });
      assert.equal((await got).payload, `from B qos ${qos}`);
    }

    // Retained messages are shared.
    await publish(onA, `${base}/state`, 'retained on A', { qos: 1, retain: true });
    const late = await connectMqtt(`mqtt://127.0.0.1:${b.mqttPort}`, creds);
    const retained = nextMessage(late, `${base}/state`);
    await subscribe(late, `${base}/state`, 1);
    assert.equal((await retained).payload, 'retained on A');
    await publish(late, `${base}/state`, '', { qos: 1, retain: true });
    await end(late);

    // A persistent session made on A collects messages while offline and is resumed on B.
    const clientId = `twonode-${run}`;
    const s1 = await connectMqtt(`mqtt://127.0.0.1:${a.mqttPort}`, { ...creds, clientId, clean: false });
    await subscribe(s1, `${base}/session`, 1);
    await end(s1);
    await publish(onB, `${base}/session`, 'queued while offline', { qos: 1 });
    const s2 = await connectMqtt(`mqtt://127.0.0.1:${b.mqttPort}`, { ...creds, clientId, clean: false });
    assert.equal((await nextMessage(s2, `${base}/session`)).payload, 'queued while offline');
    await end(s2);
    await end(await connectMqtt(`mqtt://127.0.0.1:${b.mqttPort}`, { ...creds, clientId, clean: true }));

    // Disabling the account through node A cuts its connection on node B (within the 1 s refresh).
    const cut = closed(onB, 5000);
    await gql(a, token, `mutation($id: ID!) { disableAccount(accountId: $id) { enabled } }`, { id });
    await cut;
    await end(onA);
    await end(onB);
  } finally {
    await a.stop();
    await b.stop();
  }
});
