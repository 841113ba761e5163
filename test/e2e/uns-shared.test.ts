/**
 * Shared subscriptions on one UNS node (issue 19, item 2): `$share/<group>/<filter>` for MQTT 5
 * and 3.1.1 clients, round robin over the connected members, account rules on the underlying
 * filter, and a member killed with QoS 1 messages in flight (handed to the others: nothing lost,
 * nothing twice).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  connectMqtt,
  createAccount,
  gql,
  startTestUns,
  subscribe,
  unsToken,
  type TestUns,
} from '../helpers/uns.js';
import { collect, connect5, end5, publish5, raw5, subscribe5, type Message5 } from '../helpers/mqtt5.js';
import { eventually, sleep } from '../helpers/util.js';

const run = promisify(execFile);
const DEV = { username: 'shared-dev', password: 'shared-dev-password' };
const LIMITED = { username: 'limited', password: 'limited-password' };

function payloads(got: Message5[]): string[] {
  return got.map((m) => m.payload);
}

describe('UNS shared subscriptions on one node', () => {
  let t: TestUns;
  let url: string;
  let token: string;
  before(async () => {
    t = await startTestUns();
    token = await unsToken(t);
    url = `mqtt://127.0.0.1:${t.mqttPort}`;
    await createAccount(t, token, DEV.username, DEV.password, [{ path: 'plant/#', perm: 'PubSub' }]);
    await createAccount(t, token, LIMITED.username, LIMITED.password, [
      { path: 'plant/public/#', perm: 'Sub' },
    ]);
  });
  after(() => t.stop());

  test('three members (MQTT 5 and 3.1.1) share a group round robin; a plain subscriber gets everything', async () => {
    const a = (await connect5(url, DEV)).client;
    const b = (await connect5(url, DEV)).client;
    const c = await connectMqtt(url, DEV); // MQTT 3.1.1
    const plain = (await connect5(url, DEV)).client;
    const pub = (await connect5(url, DEV)).client;
    try {
      const [ga, gb, gc, gp] = [collect(a), collect(b), collect(c), collect(plain)];
      assert.deepEqual(await subscribe5(a, '$share/grp/plant/#', { qos: 1 }), [1]);
      assert.deepEqual(await subscribe5(b, '$share/grp/plant/#', { qos: 1 }), [1]);
      assert.equal(await subscribe(c, '$share/grp/plant/#', 1), 1);
      assert.deepEqual(await subscribe5(plain, 'plant/#', { qos: 1 }), [1]);
      for (let i = 0; i < 30; i++) assert.equal(await publish5(pub, `plant/m/${i}`, `m${i}`, { qos: 1 }), 0);
      const counts = () => JSON.stringify([ga.length, gb.length, gc.length, gp.length]);
      await eventually(() => ga.length + gb.length + gc.length === 30 && gp.length === 30, 5000, counts);
      // Time is the test: nothing more (no duplicate) arrives.
      await sleep(200);
      assert.deepEqual([ga.length, gb.length, gc.length], [10, 10, 10]);
      const all = [...payloads(ga), ...payloads(gb), ...payloads(gc)].sort();
      assert.deepEqual(all, Array.from({ length: 30 }, (_, i) => `m${i}`).sort());
      // Members get the topic as published, not the $share filter.
      assert.ok(ga.every((m) => m.topic.startsWith('plant/m/')));

      // A member that leaves is skipped: the other two share what follows, nothing is lost.
      await end5(a);
      await sleep(300); // the broker has seen it go
      for (let i = 30; i < 40; i++) await publish5(pub, `plant/m/${i}`, `m${i}`, { qos: 1 });
      await eventually(() => gb.length + gc.length === 30, 5000, counts);
      // Time is the test: nothing more (no duplicate) arrives.
      await sleep(200);
      assert.equal(gb.length + gc.length, 30);
      assert.deepEqual([gb.length - 10, gc.length - 10], [5, 5]);
      // After UNSUBSCRIBE a member gets nothing more from the group.
      await b.unsubscribeAsync('$share/grp/plant/#');
      for (let i = 40; i < 44; i++) await publish5(pub, `plant/m/${i}`, `m${i}`, { qos: 1 });
      await eventually(() => gc.length === 19, 5000, counts);
      // Time is the test: nothing more (no duplicate) arrives.
      await sleep(200);
      assert.equal(gb.length, 15);
    } finally {
      for (const x of [a, b, c, plain, pub]) await end5(x);
    }
  });

  test('groups are independent; the account rules judge the underlying filter (0x87, 3.1.1: 0x80)', async () => {
    const l5 = (await connect5(url, LIMITED)).client;
    const l3 = await connectMqtt(url, LIMITED);
    const x = (await connect5(url, DEV)).client;
    const y = (await connect5(url, DEV)).client;
    const pub = (await connect5(url, DEV)).client;
    try {
      assert.deepEqual(await subscribe5(l5, '$share/g1/plant/#'), [0x87]);
      assert.equal(await subscribe(l3, '$share/g1/plant/secret/#'), 128);
      assert.deepEqual(await subscribe5(l5, '$share/g1/plant/public/#', { qos: 1 }), [1]);
      const gl = collect(l5);
      const [gx, gy] = [collect(x), collect(y)];
      await subscribe5(x, '$share/g1/plant/public/#', { qos: 1 });
      await subscribe5(y, '$share/g2/plant/#', { qos: 1 });
      for (let i = 0; i < 4; i++) await publish5(pub, 'plant/public/v', `p${i}`, { qos: 1 });
      await publish5(pub, 'plant/secret/v', 's', { qos: 1 });
      await eventually(() => gl.length + gx.length === 4 && gy.length === 5);
      // Time is the test: nothing more arrives.
      await sleep(200);
      assert.deepEqual([gl.length, gx.length], [2, 2]);
      assert.ok(!payloads(gl).includes('s'));
    } finally {
      for (const c of [l5, l3, x, y, pub]) await end5(c);
    }
  });

  test('a member killed with QoS 1 messages in flight: they go to the other members, nothing lost, nothing twice', async () => {
    // The member that will die acknowledges nothing.
    const dying = await raw5(t.mqttPort, { clientId: 'dying-member', ...DEV });
    await dying.next('connack');
    dying.send({
      cmd: 'subscribe',
      messageId: 1,
      subscriptions: [{ topic: '$share/work/plant/jobs/#', qos: 1 }],
    });
    await dying.next('suback');
    const b = (await connect5(url, DEV)).client;
    const c = await connectMqtt(url, DEV);
    const pub = (await connect5(url, DEV)).client;
    try {
      const [gb, gc] = [collect(b), collect(c)];
      await subscribe5(b, '$share/work/plant/jobs/#', { qos: 1 });
      assert.equal(await subscribe(c, '$share/work/plant/jobs/#', 1), 1);
      for (let i = 0; i < 12; i++) await publish5(pub, 'plant/jobs/j', `j${i}`, { qos: 1 });
      await eventually(() => dying.packets.filter((p) => p.cmd === 'publish').length === 4);
      await eventually(() => gb.length + gc.length === 8);
      const unacked = dying.packets.filter((p) => p.cmd === 'publish').map((p) => p.payload.toString());
      dying.socket.destroy();
      await eventually(() => gb.length + gc.length === 12);
      // Time is the test: nothing more (no duplicate) arrives.
      await sleep(300);
      const got = [...payloads(gb), ...payloads(gc)];
      assert.equal(got.length, 12, 'nothing twice');
      assert.deepEqual([...got].sort(), Array.from({ length: 12 }, (_, i) => `j${i}`).sort(), 'nothing lost');
      for (const u of unacked) assert.ok(got.includes(u));
      // Counted for operators (GraphQL broker { shared }).
      const { broker } = await gql(
        t,
        token,
        '{ broker { protocols shared { delivered redelivered dropped } } }',
      );
      assert.ok(broker.shared.redelivered >= 4, JSON.stringify(broker.shared));
      assert.ok(broker.shared.delivered >= 12, JSON.stringify(broker.shared));
      assert.ok(broker.protocols.includes('MQTT 5'));
    } finally {
      for (const x of [b, c, pub]) await end5(x);
    }
  });

  test('retained messages are not sent to a shared subscription when it is made; live ones are', async () => {
    const c = (await connect5(url, DEV)).client;
    try {
      await publish5(c, 'plant/ret/x', 'kept', { qos: 1, retain: true });
      const got = collect(c);
      assert.deepEqual(await subscribe5(c, '$share/ret/plant/ret/#', { qos: 1 }), [1]);
      // Time is the test: no retained message for a shared subscription.
      await sleep(400);
      assert.equal(got.length, 0);
      await publish5(c, 'plant/ret/x', 'live', { qos: 1 });
      await eventually(() => got.length === 1);
      assert.equal(got[0]!.payload, 'live');
      await publish5(c, 'plant/ret/x', '', { qos: 1, retain: true });
    } finally {
      await end5(c);
    }
  });

  test('mosquitto_sub -V 5 and -V 311 as members of one group', async () => {
    const port = String(t.mqttPort);
    const args = (v: string) => [
      ...['-V', v, '-h', '127.0.0.1', '-p', port, '-u', DEV.username, '-P', DEV.password],
      ...['-t', '$share/mosq/plant/mosq/#', '-C', '2', '-W', '10', '-q', '1'],
    ];
    const s5 = run('mosquitto_sub', args('5'));
    const s3 = run('mosquitto_sub', args('311'));
    // No event says that mosquitto_sub (another process) has subscribed.
    await sleep(500);
    const pub = (await connect5(url, DEV)).client;
    for (let i = 0; i < 4; i++) await publish5(pub, 'plant/mosq/x', `q${i}`, { qos: 1 });
    await end5(pub);
    const out5 = (await s5).stdout.trim().split('\n');
    const out3 = (await s3).stdout.trim().split('\n');
    assert.equal(out5.length, 2);
    assert.equal(out3.length, 2);
    assert.deepEqual([...out5, ...out3].sort(), ['q0', 'q1', 'q2', 'q3']);
  });
});
