/**
 * The UNS broker on the wire, with the `mqtt` npm client and Debian's mosquitto_pub/mosquitto_sub:
 * authentication against accounts, publish and subscribe allowed or refused per rule and wildcard,
 * live effect of disabling and deleting accounts and removing rules, retained messages, and the
 * TLS and WebSocket listeners.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import {
  ACCOUNT_FIELDS,
  closed,
  connectMqtt,
  createAccount,
  end,
  gql,
  nextMessage,
  noMessage,
  publish,
  startTestUns,
  subscribe,
  unsToken,
  type TestUns,
} from '../helpers/uns.js';

const run = promisify(execFile);

describe('UNS broker: accounts, rules and listeners', () => {
  let t: TestUns;
  let token: string;
  let mqttUrl: string;
  let sensorId: string;
  before(async () => {
    t = await startTestUns();
    token = await unsToken(t);
    mqttUrl = `mqtt://127.0.0.1:${t.mqttPort}`;
    // sensor: publishes under plant/line1/#, reads commands on cmd/+/sensor
    sensorId = await createAccount(t, token, 'sensor', 'sensor-password', [
      { path: 'plant/line1/#', perm: 'Pub' },
      { path: 'cmd/+/sensor', perm: 'Sub' },
    ]);
    // reader: reads all of plant/#, writes commands
    await createAccount(t, token, 'reader', 'reader-password', [
      { path: 'plant/#', perm: 'Sub' },
      { path: 'cmd/#', perm: 'PubSub' },
    ]);
  });
  after(() => t.stop());

  test('bad credentials, a missing user name and a disabled account are refused at CONNECT', async () => {
    await assert.rejects(
      connectMqtt(mqttUrl, { username: 'sensor', password: 'wrong-password' }),
      /Bad username or password/i,
    );
    await assert.rejects(
      connectMqtt(mqttUrl, { username: 'nobody', password: 'whatever-pw' }),
      /Bad username or password/i,
    );
    await assert.rejects(connectMqtt(mqttUrl, {}), /Not authorized/i);
    const id = await createAccount(t, token, 'off', 'off-password', [{ path: '#', perm: 'PubSub' }]);
    await gql(t, token, `mutation($id: ID!) { disableAccount(accountId: $id) { enabled } }`, { id });
    await assert.rejects(
      connectMqtt(mqttUrl, { username: 'off', password: 'off-password' }),
      /Bad username or password/i,
    );
  });

  test('publish and subscribe are allowed or refused per rule, with + and # wildcards', async () => {
    const sensor = await connectMqtt(mqttUrl, { username: 'sensor', password: 'sensor-password' });
    const reader = await connectMqtt(mqttUrl, { username: 'reader', password: 'reader-password' });
    try {
      // Subscriptions: covered by a Sub/PubSub rule or refused with SUBACK 0x80.
      assert.equal(await subscribe(reader, 'plant/#', 1), 1);
      assert.equal(await subscribe(reader, 'plant/+/temp', 0), 0);
      assert.equal(await subscribe(reader, 'other/#', 0), 128);
      assert.equal(await subscribe(reader, '#', 0), 128, '# is wider than plant/#');
      assert.equal(await subscribe(sensor, 'cmd/line1/sensor', 1), 1);
      assert.equal(await subscribe(sensor, 'cmd/+/sensor', 1), 1);
      assert.equal(await subscribe(sensor, 'cmd/#', 1), 128, 'cmd/# is wider than cmd/+/sensor');
      assert.equal(await subscribe(sensor, 'plant/line1/temp', 0), 128, 'Pub does not give Sub');

      // An allowed publish is delivered.
      const got = nextMessage(reader, 'plant/line1/temp');
      await publish(sensor, 'plant/line1/temp', '21.5', { qos: 1 });
      assert.equal((await got).payload, '21.5');
      const cmd = nextMessage(sensor, 'cmd/line1/sensor');
      await publish(reader, 'cmd/line1/sensor', 'calibrate', { qos: 1 });
      assert.equal((await cmd).payload, 'calibrate');
    } finally {
      await end(sensor);
      await end(reader);
    }
    // A refused publish reaches nobody and closes the publisher's connection (MQTT 3.1.1 3.3.5-2).
    const sensor2 = await connectMqtt(mqttUrl, { username: 'sensor', password: 'sensor-password' });
    const reader2 = await connectMqtt(mqttUrl, { username: 'reader', password: 'reader-password' });
    try {
      await subscribe(reader2, 'plant/#', 0);
      const gone = closed(sensor2);
      sensor2.publish('plant/line2/temp', 'not mine', { qos: 0 });
      await gone;
      await noMessage(reader2, 'plant/line2/temp');
    } finally {
      await end(sensor2);
      await end(reader2);
    }
  });

  test("mosquitto_pub and mosquitto_sub work against the rules, and the account's clients are listed", async () => {
    const port = String(t.mqttPort);
    const sub = run('mosquitto_sub', [
      '-h',
      '127.0.0.1',
      '-p',
      port,
      '-u',
      'reader',
      '-P',
      'reader-password',
      '-t',
      'plant/line1/#',
      '-C',
      '1',
      '-W',
      '10',
      '-v',
      '-q',
      '1',
    ]);
    // Let the subscription land before publishing.
    // No event says that mosquitto_sub (another process) has subscribed.
    await new Promise((r) => setTimeout(r, 400));
    const clients = await gql(t, token, `query($id: ID) { account(id: $id) { ${ACCOUNT_FIELDS} } }`, {
      id: (await gql(t, token, '{ accounts(filter: "reader") { items { id } } }')).accounts.items[0].id,
    });
    const live = clients.account[0].clients.filter((c: { connected: boolean }) => c.connected);
    assert.equal(live.length, 1, JSON.stringify(clients));
    assert.equal(live[0].protoLevel, 4);
    assert.match(live[0].remote, /^127\.0\.0\.1:\d+$/);
    await run('mosquitto_pub', [
      '-h',
      '127.0.0.1',
      '-p',
      port,
      '-u',
      'sensor',
      '-P',
      'sensor-password',
      '-t',
      'plant/line1/pressure',
      '-m',
      '1.2',
      '-q',
      '1',
    ]);
    const { stdout } = await sub;
    assert.equal(stdout.trim(), 'plant/line1/pressure 1.2');

    // Refused: mosquitto_sub is told its subscription was denied; a wrong password cannot connect.
    const denied = await run('mosquitto_sub', [
      '-h',
      '127.0.0.1',
      '-p',
      port,
      '-u',
      'sensor',
      '-P',
      'sensor-password',
      '-t',
      'secret/#',
      '-C',
      '1',
      '-W',
      '3',
    ]).then(
      (r) => ({ code: 0, out: r.stdout + r.stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );
    assert.match(denied.out, /All subscription requests were denied/);
    const badPub = await run('mosquitto_pub', [
      '-h',
      '127.0.0.1',
      '-p',
      port,
      '-u',
      'sensor',
      '-P',
      'nope-nope',
      '-t',
      'plant/line1/x',
      '-m',
      '1',
    ]).then(
      () => ({ code: 0, out: '' }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
    );
    assert.notEqual(badPub.code, 0);
    assert.match(badPub.out, /Connection Refused: bad user name or password/);
  });

  test('disabling an account cuts its live connections at once; enabling lets it back in', async () => {
    const id = await createAccount(t, token, 'temp-dev', 'temp-password', [
      { path: 'plant/#', perm: 'PubSub' },
    ]);
    const a = await connectMqtt(mqttUrl, { username: 'temp-dev', password: 'temp-password' });
    const b = await connectMqtt(mqttUrl, { username: 'temp-dev', password: 'temp-password' });
    const gone = Promise.all([closed(a), closed(b)]);
    const started = Date.now();
    const res = await gql(
      t,
      token,
      `mutation($id: ID!) { disableAccount(accountId: $id) { ${ACCOUNT_FIELDS} } }`,
      { id },
    );
    await gone;
    assert.ok(Date.now() - started < 2000, 'closed at once');
    assert.equal(res.disableAccount.enabled, false);
    await assert.rejects(
      connectMqtt(mqttUrl, { username: 'temp-dev', password: 'temp-password' }),
      /Bad username or password/i,
    );
    const back = await gql(t, token, `mutation($id: ID!) { enableAccount(accountId: $id) { enabled } }`, {
      id,
    });
    assert.equal(back.enableAccount.enabled, true);
    const c = await connectMqtt(mqttUrl, { username: 'temp-dev', password: 'temp-password' });
    const gone2 = closed(c);
    assert.equal(
      (await gql(t, token, `mutation($id: ID!) { deleteAccount(accountId: $id) }`, { id })).deleteAccount,
      true,
    );
    await gone2;
    await assert.rejects(
      connectMqtt(mqttUrl, { username: 'temp-dev', password: 'temp-password' }),
      /Bad username or password/i,
    );
  });

  test('removing a rule applies to live connections: its publishes are refused, a subscription it no longer allows closes the connection', async () => {
    const id = await createAccount(t, token, 'ruled', 'ruled-password', [
      { path: 'area/a/#', perm: 'PubSub' },
      { path: 'area/b/#', perm: 'Pub' },
    ]);
    const rules = (
      await gql(t, token, `query($id: ID) { account(id: $id) { rules { id path perm } } }`, { id })
    ).account[0].rules;
    const ruleB = rules.find((r: { path: string }) => r.path === 'area/b/#').id;
    const ruleA = rules.find((r: { path: string }) => r.path === 'area/a/#').id;
    const watcher = await connectMqtt(mqttUrl, { username: 'reader', password: 'reader-password' });
    const dev = await connectMqtt(mqttUrl, { username: 'ruled', password: 'ruled-password' });
    try {
      assert.equal(await subscribe(dev, 'area/a/#', 0), 0);
      // Publishing to area/b works, then the rule goes and the same connection is refused.
      await publish(dev, 'area/b/x', 'one', { qos: 1 });
      await gql(
        t,
        token,
        `mutation($id: ID!, $r: [ID!]!) { removeAccountRules(accountId: $id, ruleIds: $r) { id } }`,
        { id, r: [ruleB] },
      );
      const gone = closed(dev);
      dev.publish('area/b/x', 'two', { qos: 0 });
      await gone;
    } finally {
      await end(dev);
    }
    const dev2 = await connectMqtt(mqttUrl, { username: 'ruled', password: 'ruled-password' });
    try {
      assert.equal(await subscribe(dev2, 'area/a/#', 0), 0);
      const gone = closed(dev2);
      await gql(
        t,
        token,
        `mutation($id: ID!, $r: [ID!]!) { removeAccountRules(accountId: $id, ruleIds: $r) { id } }`,
        { id, r: [ruleA] },
      );
      await gone;
    } finally {
      await end(dev2);
      await end(watcher);
    }
  });

  test('retained messages reach later subscribers; an empty retained message clears them', async () => {
    const id = (await gql(t, token, '{ accounts(filter: "sensor") { items { id } } }')).accounts.items[0].id;
    assert.equal(id, sensorId);
    const sensor = await connectMqtt(mqttUrl, { username: 'sensor', password: 'sensor-password' });
    await publish(sensor, 'plant/line1/state', 'running', { qos: 1, retain: true });
    await end(sensor);
    const reader = await connectMqtt(mqttUrl, { username: 'reader', password: 'reader-password' });
    try {
      const got = nextMessage(reader, 'plant/line1/state');
      await subscribe(reader, 'plant/line1/state', 1);
      const m = await got;
      assert.equal(m.payload, 'running');
      assert.equal(m.retain, true);
    } finally {
      await end(reader);
    }
    const { stdout } = await run('mosquitto_sub', [
      '-h',
      '127.0.0.1',
      '-p',
      String(t.mqttPort),
      '-u',
      'reader',
      '-P',
      'reader-password',
      '-t',
      'plant/line1/state',
      '-C',
      '1',
      '-W',
      '5',
    ]);
    assert.equal(stdout.trim(), 'running');
    const s2 = await connectMqtt(mqttUrl, { username: 'sensor', password: 'sensor-password' });
    await publish(s2, 'plant/line1/state', '', { qos: 1, retain: true });
    await end(s2);
    const r2 = await connectMqtt(mqttUrl, { username: 'reader', password: 'reader-password' });
    try {
      await subscribe(r2, 'plant/line1/state', 1);
      await noMessage(r2, 'plant/line1/state', 300);
    } finally {
      await end(r2);
    }
  });

  test("a message goes out at the lower of its QoS and the subscription's, wildcard filters included", async () => {
    const sensor = await connectMqtt(mqttUrl, { username: 'sensor', password: 'sensor-password' });
    const readers: { client: Awaited<ReturnType<typeof connectMqtt>>; filter: string; qos: 0 | 1 | 2 }[] = [];
    try {
      // [MQTT-3.8.4-8]: a QoS 2 message reaches a QoS 1 subscription of `plant/#` at QoS 1 (it
      // went out at QoS 2 when the filter was not the message's topic itself).
      for (const [filter, qos] of [
        ['plant/#', 1],
        ['plant/line1/+', 1],
        ['plant/line1/qos', 1],
        ['plant/#', 2],
        ['plant/line1/+', 0],
      ] as const)
        readers.push({
          client: await connectMqtt(mqttUrl, { username: 'reader', password: 'reader-password' }),
          filter,
          qos,
        });
      for (const r of readers) await subscribe(r.client, r.filter, r.qos);
      for (const sent of [2, 1, 0] as const) {
        const got = readers.map((r) => nextMessage(r.client, 'plant/line1/qos'));
        await publish(sensor, 'plant/line1/qos', `q${sent}`, { qos: sent });
        const messages = await Promise.all(got);
        readers.forEach((r, i) =>
          assert.deepEqual(
            { payload: messages[i]!.payload, qos: messages[i]!.qos },
            { payload: `q${sent}`, qos: Math.min(sent, r.qos) },
            `a QoS ${sent} message to a QoS ${r.qos} subscription of ${r.filter}`,
          ),
        );
      }
    } finally {
      await end(sensor);
      for (const r of readers) await end(r.client);
    }
  });

  test('MQTT over TLS (mqtts) and over WebSocket (wss /mqtt) authenticate and deliver with the same rules', async () => {
    const tls = await connectMqtt(`mqtts://127.0.0.1:${t.mqttsPort}`, {
      username: 'reader',
      password: 'reader-password',
    });
    const ws = await connectMqtt(`${t.uns.wsUrl}`, {
      username: 'sensor',
      password: 'sensor-password',
      wsOptions: { rejectUnauthorized: false },
    } as never);
    try {
      assert.equal(await subscribe(tls, 'plant/#', 1), 1);
      const got = nextMessage(tls, 'plant/line1/ws');
      await publish(ws, 'plant/line1/ws', 'via websocket', { qos: 1 });
      assert.equal((await got).payload, 'via websocket');
      assert.equal(await subscribe(ws, 'plant/#', 0), 128);
    } finally {
      await end(tls);
      await end(ws);
    }
    // mosquitto_sub over TLS, with the service's own certificate as the CA.
    const sub = run('mosquitto_sub', [
      '-h',
      '127.0.0.1',
      '-p',
      String(t.mqttsPort),
      '--insecure',
      '--cafile',
      `${t.dataDir}/tls/server.crt`,
      '-u',
      'reader',
      '-P',
      'reader-password',
      '-t',
      'plant/line1/tls',
      '-C',
      '1',
      '-W',
      '10',
    ]);
    // No event says that mosquitto_sub (another process) has subscribed.
    await new Promise((r) => setTimeout(r, 400));
    const pub = await connectMqtt(`mqtts://127.0.0.1:${t.mqttsPort}`, {
      username: 'sensor',
      password: 'sensor-password',
    });
    await publish(pub, 'plant/line1/tls', 'over tls', { qos: 1 });
    await end(pub);
    assert.equal((await sub).stdout.trim(), 'over tls');
  });
});
