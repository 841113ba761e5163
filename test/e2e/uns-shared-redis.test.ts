/**
 * Shared subscriptions across two UNS nodes on one Redis (and one PostgreSQL for the accounts):
 * each message goes to one member of the group whichever node it was published on and whichever
 * node the member is connected to; a member killed with QoS 1 messages in flight on one node has
 * them handed to the other members (nothing lost, nothing twice).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { pgTestDatabase } from '../helpers/postgres.js';
import { redisTestUrl } from '../helpers/redis.js';
import { connectMqtt, createAccount, gql, startTestUns, subscribe, unsToken } from '../helpers/uns.js';
import { collect, connect5, publish5, raw5, subscribe5, type Message5 } from '../helpers/mqtt5.js';
import { eventually, sleep } from '../helpers/util.js';

const texts = (got: Message5[]) => got.map((m) => m.payload);

test('shared subscriptions across two nodes over Redis: round robin over all members, a killed member redelivered', async (t) => {
  const redisUrl = await redisTestUrl(t);
  if (!redisUrl) return;
  const pg = await pgTestDatabase(t);
  if (!pg) return;
  const a = await startTestUns({ redisUrl, databaseUrl: pg.url });
  const b = await startTestUns({ redisUrl, databaseUrl: pg.url });
  const run = randomBytes(4).toString('hex');
  const base = `sharednode/${run}`;
  const creds = { username: `shared-${run}`, password: 'shared-node-password' };
  const urlA = `mqtt://127.0.0.1:${a.mqttPort}`;
  const urlB = `mqtt://127.0.0.1:${b.mqttPort}`;
  const clients: { end(force: boolean, opts: object, cb: () => void): unknown }[] = [];
  try {
    const token = await unsToken(a);
    const id = await createAccount(a, token, creds.username, creds.password, [
      { path: 'sharednode/#', perm: 'PubSub' },
    ]);
    const tokenB = await unsToken(b);
    for (let i = 0; i < 40; i++) {
      const seen = (await gql(b, tokenB, `query($id: ID) { account(id: $id) { id } }`, { id })).account
        .length;
      if (seen === 1) break;
      await sleep(100);
    }

    const a1 = (await connect5(urlA, creds)).client;
    const b1 = (await connect5(urlB, creds)).client;
    const b2 = await connectMqtt(urlB, creds); // MQTT 3.1.1
    const pubA = (await connect5(urlA, creds)).client;
    const pubB = (await connect5(urlB, creds)).client;
    clients.push(a1, b1, b2, pubA, pubB);
    const [g1, g2, g3] = [collect(a1), collect(b1), collect(b2)];
    const filter = `$share/grp/${base}/#`;
    assert.deepEqual(await subscribe5(a1, filter, { qos: 1 }), [1]);
    assert.deepEqual(await subscribe5(b1, filter, { qos: 1 }), [1]);
    assert.equal(await subscribe(b2, filter, 1), 1);
    await sleep(1000); // the nodes tell each other their members

    for (let i = 0; i < 30; i++) await publish5(pubA, `${base}/a`, `a${i}`, { qos: 1 });
    for (let i = 0; i < 30; i++) await publish5(pubB, `${base}/b`, `b${i}`, { qos: 1 });
    const counts = () => JSON.stringify([g1.length, g2.length, g3.length]);
    await eventually(() => g1.length + g2.length + g3.length === 60, 8000, counts);
    // Time is the test: nothing more (no duplicate) arrives.
    await sleep(500);
    assert.equal(g1.length + g2.length + g3.length, 60, `nothing twice ${counts()}`);
    assert.deepEqual([g1.length, g2.length, g3.length], [20, 20, 20]);
    const all = [...texts(g1), ...texts(g2), ...texts(g3)].sort();
    assert.deepEqual(
      all,
      [
        ...Array.from({ length: 30 }, (_, i) => `a${i}`),
        ...Array.from({ length: 30 }, (_, i) => `b${i}`),
      ].sort(),
    );
    // Both nodes deliver to members of both nodes.
    assert.ok(texts(g1).some((x) => x.startsWith('a')) && texts(g1).some((x) => x.startsWith('b')));
    assert.ok(texts(g2).some((x) => x.startsWith('a')) && texts(g2).some((x) => x.startsWith('b')));

    // A member on node B that acknowledges nothing, then dies with messages published on A in flight.
    await b2.unsubscribeAsync(filter);
    const dying = await raw5(b.mqttPort, { clientId: `dying-${run}`, ...creds });
    await dying.next('connack');
    dying.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos: 1 }] });
    await dying.next('suback');
    // The nodes tell each other their members (no event to wait on).
    await sleep(1000);
    g1.length = 0;
    g2.length = 0;
    for (let i = 0; i < 12; i++) await publish5(pubA, `${base}/job`, `j${i}`, { qos: 1 });
    const inFlight = () => dying.packets.filter((p) => p.cmd === 'publish');
    await eventually(
      () => inFlight().length === 4,
      8000,
      () => `dying got ${inFlight().length}`,
    );
    await eventually(() => g1.length + g2.length === 8, 8000, counts);
    const unacked = inFlight().map((p) => p.payload.toString());
    dying.socket.destroy();
    await eventually(() => g1.length + g2.length === 12, 8000, counts);
    // Time is the test: nothing more (no duplicate) arrives.
    await sleep(500);
    const got = [...texts(g1), ...texts(g2)];
    assert.equal(got.length, 12, 'nothing twice');
    assert.deepEqual([...got].sort(), Array.from({ length: 12 }, (_, i) => `j${i}`).sort(), 'nothing lost');
    for (const u of unacked) assert.ok(got.includes(u), `${u} redelivered`);
  } finally {
    for (const c of clients) await new Promise<void>((r) => c.end(true, {}, () => r()));
    await a.stop();
    await b.stop();
  }
});

test('MQTT 5 across two nodes over Redis: properties and message expiry through a session moved between nodes', async (t) => {
  const redisUrl = await redisTestUrl(t);
  if (!redisUrl) return;
  const pg = await pgTestDatabase(t);
  if (!pg) return;
  const a = await startTestUns({ redisUrl, databaseUrl: pg.url });
  const b = await startTestUns({ redisUrl, databaseUrl: pg.url });
  const run = randomBytes(4).toString('hex');
  const base = `v5node/${run}`;
  const creds = { username: `v5node-${run}`, password: 'v5-node-password' };
  try {
    const token = await unsToken(a);
    const id = await createAccount(a, token, creds.username, creds.password, [
      { path: 'v5node/#', perm: 'PubSub' },
    ]);
    const tokenB = await unsToken(b);
    for (let i = 0; i < 40; i++) {
      if ((await gql(b, tokenB, `query($id: ID) { account(id: $id) { id } }`, { id })).account.length === 1)
        break;
      await sleep(100);
    }
    const session = {
      ...creds,
      clientId: `v5s-${run}`,
      clean: false,
      properties: { sessionExpiryInterval: 300 },
    };
    const s1 = (await connect5(`mqtt://127.0.0.1:${a.mqttPort}`, session)).client;
    await subscribe5(s1, `${base}/#`, { qos: 1 });
    await new Promise<void>((r) => s1.end(true, {}, () => r()));
    const pub = (await connect5(`mqtt://127.0.0.1:${b.mqttPort}`, creds)).client;
    await publish5(pub, `${base}/short`, 'short', { qos: 1, properties: { messageExpiryInterval: 1 } });
    await publish5(pub, `${base}/long`, 'long', {
      qos: 1,
      properties: {
        messageExpiryInterval: 300,
        userProperties: { site: 'north' },
        correlationData: Buffer.from('c-1'),
        contentType: 'text/plain',
      },
    });
    await new Promise<void>((r) => pub.end(true, {}, () => r()));
    // Time is the test: the short-lived message expires.
    await sleep(2200);
    const s2 = await connect5(`mqtt://127.0.0.1:${b.mqttPort}`, session);
    const got = collect(s2.client);
    assert.equal(s2.connack.sessionPresent, true);
    // Time is the test: nothing more arrives.
    await sleep(800);
    assert.deepEqual(texts(got), ['long']);
    const p = got[0]!.packet.properties;
    assert.deepEqual({ ...p.userProperties }, { site: 'north' });
    assert.equal(Buffer.from(p.correlationData).toString(), 'c-1');
    assert.equal(p.contentType, 'text/plain');
    await new Promise<void>((r) => s2.client.end(true, {}, () => r()));
  } finally {
    await a.stop();
    await b.stop();
  }
});
