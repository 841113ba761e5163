/**
 * The UNS broker speaks MQTT 5 (issue 19, item 1), with the `mqtt` client (protocol version 5),
 * raw MQTT 5 packets, and mosquitto_pub/mosquitto_sub -V 5: reason codes of every refusal, the
 * account rules repeated on MQTT 5, properties forwarded, expiry, topic aliases both ways, flow
 * control, subscription options and identifiers, server keep alive, assigned client identifiers,
 * will delay and the server's DISCONNECTs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { pgTestDatabase } from '../helpers/postgres.js';
import { createAccount, gql, startTestUns, unsToken, ACCOUNT_FIELDS, type TestUns } from '../helpers/uns.js';
import { collect, connect5, end5, publish5, raw5, subscribe5, type Raw5 } from '../helpers/mqtt5.js';
import { eventually, sleep } from '../helpers/util.js';

const run = promisify(execFile);

const READER = { username: 'reader5', password: 'reader5-password' };
const SENSOR = { username: 'sensor5', password: 'sensor5-password' };

describe('UNS broker on MQTT 5', () => {
  let t: TestUns;
  let token: string;
  let url: string;
  before(async () => {
    t = await startTestUns({ maxPacketSize: 64 * 1024, maxSubscriptions: 8, maxKeepAlive: 120 });
    token = await unsToken(t);
    url = `mqtt://127.0.0.1:${t.mqttPort}`;
    await createAccount(t, token, READER.username, READER.password, [
      { path: 'plant/#', perm: 'Sub' },
      { path: 'cmd/#', perm: 'PubSub' },
      { path: 'free/#', perm: 'PubSub' },
    ]);
    await createAccount(t, token, SENSOR.username, SENSOR.password, [
      { path: 'plant/line1/#', perm: 'Pub' },
      { path: 'cmd/+/sensor', perm: 'Sub' },
      { path: 'free/#', perm: 'PubSub' },
    ]);
  });
  after(() => t.stop());

  test('CONNACK of MQTT 5 on TCP, TLS and WebSocket advertises the limits; GraphQL reports protoLevel 5', async () => {
    for (const u of [url, `mqtts://127.0.0.1:${t.mqttsPort}`, t.uns.wsUrl]) {
      const { client, connack } = await connect5(u, {
        ...READER,
        wsOptions: { rejectUnauthorized: false },
      } as never);
      try {
        assert.equal(connack.reasonCode, 0, u);
        assert.equal(connack.properties?.maximumPacketSize, 64 * 1024, u);
        assert.equal(connack.properties?.receiveMaximum, 100, u);
        assert.equal(connack.properties?.topicAliasMaximum, 100, u);
        assert.equal(connack.properties?.sharedSubscriptionAvailable, true, u);
        if (u === url) {
          const res = await gql(t, token, `{ accounts(filter: "reader5") { items { ${ACCOUNT_FIELDS} } } }`);
          const live = res.accounts.items[0].clients.filter((c: { connected: boolean }) => c.connected);
          assert.equal(live.length, 1);
          assert.equal(live[0].protoLevel, 5);
        }
      } finally {
        await end5(client);
      }
    }
    // Publish over WebSocket, receive over TLS, both MQTT 5, properties kept.
    const tls = (await connect5(`mqtts://127.0.0.1:${t.mqttsPort}`, READER)).client;
    const ws = (await connect5(t.uns.wsUrl, { ...SENSOR, wsOptions: { rejectUnauthorized: false } } as never))
      .client;
    try {
      const got = collect(tls);
      assert.deepEqual(await subscribe5(tls, 'plant/#', { qos: 1 }), [1]);
      const rc = await publish5(ws, 'plant/line1/ws', 'via ws', {
        qos: 1,
        properties: { userProperties: { via: 'ws' } },
      });
      assert.equal(rc, 0);
      await eventually(() => got.length === 1);
      assert.deepEqual({ ...got[0]!.packet.properties?.userProperties }, { via: 'ws' });
      assert.equal(await publish5(ws, 'plant/line2/ws', 'refused', { qos: 1 }), 0x87);
    } finally {
      await end5(tls);
      await end5(ws);
    }
    // Refused CONNECTs carry MQTT 5 reason codes.
    await assert.rejects(
      connect5(url, { username: 'reader5', password: 'wrong-password' }),
      /Bad User Name or Password/i,
    );
    await assert.rejects(connect5(url, {}), /Not authorized/i);
  });

  test('account rules on MQTT 5: SUBACK 0x87, PUBACK/PUBREC 0x87, the connection stays, nothing delivered', async () => {
    const { client: reader } = await connect5(url, READER);
    const { client: sensor } = await connect5(url, SENSOR);
    try {
      const got = collect(reader);
      assert.deepEqual(await subscribe5(reader, 'plant/#', { qos: 1 }), [1]);
      assert.deepEqual(await subscribe5(reader, 'plant/+/temp'), [0]);
      assert.deepEqual(await subscribe5(reader, 'other/#'), [0x87]);
      assert.deepEqual(await subscribe5(reader, '#'), [0x87], '# is wider than plant/#');
      assert.deepEqual(await subscribe5(sensor, 'cmd/line1/sensor', { qos: 1 }), [1]);
      assert.deepEqual(await subscribe5(sensor, 'cmd/#'), [0x87]);
      assert.deepEqual(await subscribe5(sensor, 'plant/line1/temp'), [0x87], 'Pub does not give Sub');
      // Several filters in one SUBSCRIBE, each with its own code.
      assert.deepEqual(await subscribe5(reader, ['cmd/a', 'secret/b']), [0, 0x87]);

      assert.equal(await publish5(sensor, 'plant/line1/temp', '21.5', { qos: 1 }), 0);
      await eventually(() => got.some((m) => m.topic === 'plant/line1/temp'));
      // Refused: QoS 1 → PUBACK 0x87, QoS 2 → PUBREC 0x87, QoS 0 dropped; the connection stays.
      assert.equal(await publish5(sensor, 'plant/line2/temp', 'not mine', { qos: 1 }), 0x87);
      assert.equal(await publish5(sensor, 'plant/line2/temp', 'not mine', { qos: 2 }), 0x87);
      assert.equal(await publish5(sensor, 'plant/line2/temp', 'not mine', { qos: 0 }), 0);
      assert.equal(sensor.connected, true);
      assert.equal(await publish5(sensor, 'plant/line1/after', 'still here', { qos: 1 }), 0);
      await eventually(() => got.some((m) => m.topic === 'plant/line1/after'));
      assert.equal(got.filter((m) => m.topic === 'plant/line2/temp').length, 0);
    } finally {
      await end5(reader);
      await end5(sensor);
    }
  });

  test('a rule removed applies to live MQTT 5 connections: 0x87 on publish, DISCONNECT 0x87 for a lost subscription, 0x98 for a disabled account', async () => {
    const id = await createAccount(t, token, 'ruled5', 'ruled5-password', [
      { path: 'area/a/#', perm: 'PubSub' },
      { path: 'area/b/#', perm: 'Pub' },
    ]);
    const rules = (await gql(t, token, `query($id: ID) { account(id: $id) { rules { id path } } }`, { id }))
      .account[0].rules as { id: string; path: string }[];
    const { client: dev } = await connect5(url, { username: 'ruled5', password: 'ruled5-password' });
    const disconnects: number[] = [];
    dev.on('disconnect', (p) => disconnects.push(p.reasonCode ?? 0));
    assert.deepEqual(await subscribe5(dev, 'area/a/#'), [0]);
    assert.equal(await publish5(dev, 'area/b/x', 'one', { qos: 1 }), 0);
    await gql(
      t,
      token,
      `mutation($id: ID!, $r: [ID!]!) { removeAccountRules(accountId: $id, ruleIds: $r) { id } }`,
      {
        id,
        r: [rules.find((r) => r.path === 'area/b/#')!.id],
      },
    );
    assert.equal(await publish5(dev, 'area/b/x', 'two', { qos: 1 }), 0x87);
    assert.equal(dev.connected, true);
    await gql(
      t,
      token,
      `mutation($id: ID!, $r: [ID!]!) { removeAccountRules(accountId: $id, ruleIds: $r) { id } }`,
      {
        id,
        r: [rules.find((r) => r.path === 'area/a/#')!.id],
      },
    );
    await eventually(() => disconnects.length > 0);
    assert.deepEqual(disconnects, [0x87]);
    await end5(dev);

    await gql(
      t,
      token,
      `mutation($id: ID!, $r: [RuleInput!]!) { addAccountRules(accountId: $id, rules: $r) { id } }`,
      {
        id,
        r: [{ path: 'area/#', perm: 'PubSub' }],
      },
    );
    const { client: dev2 } = await connect5(url, { username: 'ruled5', password: 'ruled5-password' });
    const d2: number[] = [];
    dev2.on('disconnect', (p) => d2.push(p.reasonCode ?? 0));
    await gql(t, token, `mutation($id: ID!) { disableAccount(accountId: $id) { enabled } }`, { id });
    await eventually(() => d2.length > 0);
    assert.deepEqual(d2, [0x98]);
    await end5(dev2);
  });

  test('refusals by the limits: bad topic 0x90, bad filter 0x8F, quota 0x97, packet too large DISCONNECT 0x95, receive maximum 0x93', async () => {
    const { client } = await connect5(url, READER);
    try {
      const deep = Array.from({ length: 40 }, (_, i) => `l${i}`).join('/');
      assert.equal(await publish5(client, `free/${deep}`, 'x', { qos: 1 }), 0x90);
      assert.equal(await publish5(client, `free/${'z'.repeat(2000)}`, 'x', { qos: 2 }), 0x90);
      assert.equal(await publish5(client, '$share/g/free/x', 'x', { qos: 1 }), 0x90);
      assert.deepEqual(await subscribe5(client, `free/${deep}`), [0x8f]);
      assert.equal(client.connected, true);
      // --max-subscriptions 8: the 9th is refused with 0x97 (an existing one may be renewed).
      const filters = Array.from({ length: 8 }, (_, i) => `free/q${i}`);
      assert.deepEqual(
        await subscribe5(client, filters),
        filters.map(() => 0),
      );
      assert.deepEqual(await subscribe5(client, 'free/q0', { qos: 1 }), [1]);
      assert.deepEqual(await subscribe5(client, ['free/q9', 'free/q1']), [0x97, 0]);
    } finally {
      await end5(client);
    }
    const raw = await raw5(t.mqttPort, { clientId: 'too-big', ...READER });
    assert.equal((await raw.next('connack')).reasonCode, 0);
    // A malformed shared subscription (wildcard in the group, no filter): 0x8F.
    raw.send({
      cmd: 'subscribe',
      messageId: 7,
      subscriptions: [
        { topic: '$share/g+/free/#', qos: 0 },
        { topic: '$share/g', qos: 0 },
        { topic: '$share/g/free/#', qos: 1 },
      ],
    });
    assert.deepEqual((await raw.next('suback')).granted, [0x8f, 0x8f, 1]);
    raw.send({ cmd: 'publish', topic: 'free/big', payload: Buffer.alloc(70 * 1024), qos: 0 });
    assert.equal((await raw.next('disconnect')).reasonCode, 0x95);
    await raw.closed();
    // QoS 2 messages awaiting PUBREL beyond the Receive Maximum (100): DISCONNECT 0x93.
    const hoarder = await raw5(t.mqttPort, { clientId: 'qos2-hoarder', ...READER });
    assert.equal((await hoarder.next('connack')).properties?.receiveMaximum, 100);
    for (let id = 1; id <= 100; id++)
      hoarder.send({ cmd: 'publish', topic: 'free/q2', payload: Buffer.from('v'), qos: 2, messageId: id });
    await eventually(() => hoarder.packets.filter((p) => p.cmd === 'pubrec').length === 100);
    assert.equal(hoarder.isClosed(), false);
    hoarder.send({ cmd: 'publish', topic: 'free/q2', payload: Buffer.from('v'), qos: 2, messageId: 101 });
    assert.equal((await hoarder.next('disconnect')).reasonCode, 0x93);
    await hoarder.closed();
  });

  test('user properties, content type, payload format, response topic and correlation data are forwarded; QoS 2 end to end', async () => {
    const { client: reader } = await connect5(url, READER);
    const { client: sensor } = await connect5(url, SENSOR);
    try {
      const got = collect(reader);
      await subscribe5(reader, 'plant/#', { qos: 2 });
      const properties = {
        userProperties: { site: 'north', unit: ['C', 'K'] },
        contentType: 'application/json',
        payloadFormatIndicator: true,
        responseTopic: 'cmd/reply/1',
        correlationData: Buffer.from('corr-42'),
      };
      assert.equal(await publish5(sensor, 'plant/line1/props', '{"v":1}', { qos: 2, properties }), 0);
      await eventually(() => got.length === 1);
      const p = got[0]!.packet.properties;
      assert.deepEqual({ ...p.userProperties }, properties.userProperties);
      assert.equal(p.contentType, 'application/json');
      assert.equal(p.payloadFormatIndicator, true);
      assert.equal(p.responseTopic, 'cmd/reply/1');
      assert.equal(Buffer.from(p.correlationData).toString(), 'corr-42');
      assert.equal(got[0]!.packet.qos, 2);
    } finally {
      await end5(reader);
      await end5(sensor);
    }
  });

  test('the topic tree (GraphQL) shows the properties of a retained message', async () => {
    const { client } = await connect5(url, READER);
    try {
      await publish5(client, 'free/tree/state', '{"on":true}', {
        qos: 1,
        retain: true,
        properties: {
          contentType: 'application/json',
          payloadFormatIndicator: true,
          userProperties: { line: '1', tag: ['a', 'b'] },
        },
      });
      const q = `{ topic(path: "free/tree/state") { retained lastValue retainedProperties { contentType payloadFormatIndicator responseTopic userProperties { name value } } } }`;
      const res = await gql(t, token, q);
      assert.deepEqual(res.topic, {
        retained: true,
        lastValue: '{"on":true}',
        retainedProperties: {
          contentType: 'application/json',
          payloadFormatIndicator: true,
          responseTopic: null,
          userProperties: [
            { name: 'line', value: '1' },
            { name: 'tag', value: 'a' },
            { name: 'tag', value: 'b' },
          ],
        },
      });
      // Cleared with the retained message.
      await publish5(client, 'free/tree/state', '', { qos: 1, retain: true });
      const cleared = await gql(t, token, q);
      assert.equal(cleared.topic.retained, false);
      assert.equal(cleared.topic.retainedProperties, null);
    } finally {
      await end5(client);
    }
  });

  test('mosquitto_pub and mosquitto_sub -V 5: user properties delivered, refusals reported', async () => {
    const port = String(t.mqttPort);
    const sub = run('mosquitto_sub', [
      ...['-V', '5', '-h', '127.0.0.1', '-p', port, '-u', READER.username, '-P', READER.password],
      ...['-t', 'plant/line1/#', '-C', '1', '-W', '10', '-q', '1', '-F', '%t %p %P'],
    ]);
    // No event says that mosquitto_sub (another process) has subscribed.
    await sleep(400);
    await run('mosquitto_pub', [
      ...['-V', '5', '-h', '127.0.0.1', '-p', port, '-u', SENSOR.username, '-P', SENSOR.password],
      ...[
        '-t',
        'plant/line1/m',
        '-m',
        'from-mosquitto',
        '-q',
        '1',
        '-D',
        'publish',
        'user-property',
        'k',
        'v',
      ],
    ]);
    assert.equal((await sub).stdout.trim(), 'plant/line1/m from-mosquitto k:v');
    const denied = await run('mosquitto_sub', [
      ...['-V', '5', '-h', '127.0.0.1', '-p', port, '-u', SENSOR.username, '-P', SENSOR.password],
      ...['-t', 'secret/#', '-C', '1', '-W', '3'],
    ]).then(
      (r) => r.stdout + r.stderr,
      (e: { stdout: string; stderr: string }) => e.stdout + e.stderr,
    );
    assert.match(denied, /All subscription requests were denied/);
    const refused = await run('mosquitto_pub', [
      ...['-V', '5', '-h', '127.0.0.1', '-p', port, '-u', SENSOR.username, '-P', SENSOR.password],
      ...['-t', 'secret/x', '-m', 'x', '-q', '1', '-d'],
    ]).then(
      (r) => r.stdout + r.stderr,
      (e: { stdout: string; stderr: string }) => e.stdout + e.stderr,
    );
    assert.match(refused, /PUBACK.*rc=135|Not authorized/i);
  });

  test('mosquitto -V 5: properties, subscription identifier, message expiry, 0x90 and 0x97 seen by the tools', async () => {
    const port = String(t.mqttPort);
    const conn = (u: { username: string; password: string }) => [
      ...['-V', '5', '-h', '127.0.0.1', '-p', port, '-u', u.username, '-P', u.password],
    ];
    const quiet = (p: Promise<{ stdout: string; stderr: string }>) =>
      p.then(
        (r) => r.stdout + r.stderr,
        (e: { stdout: string; stderr: string }) => e.stdout + e.stderr,
      );
    const sub = run('mosquitto_sub', [
      ...conn(READER),
      ...['-t', 'free/mosq/#', '-C', '1', '-W', '10', '-q', '1', '-F', '%t|%p|%C|%R|%P|%S|%F'],
      ...['-D', 'subscribe', 'subscription-identifier', '7'],
    ]);
    // No event says that mosquitto_sub (another process) has subscribed.
    await sleep(400);
    await run('mosquitto_pub', [
      ...conn(SENSOR),
      ...['-t', 'free/mosq/a', '-m', 'hello', '-q', '1'],
      ...['-D', 'publish', 'content-type', 'text/plain', '-D', 'publish', 'response-topic', 'free/reply'],
      ...['-D', 'publish', 'user-property', 'k', 'v', '-D', 'publish', 'payload-format-indicator', '1'],
    ]);
    assert.equal((await sub).stdout.trim(), 'free/mosq/a|hello|text/plain|free/reply|k:v|7|1');

    // Message expiry through a persistent session (-c -x): the expired one is never delivered.
    const id = ['-i', 'mosq-exp', '-c', '-x', '300'];
    await quiet(run('mosquitto_sub', [...conn(READER), ...id, '-t', 'free/mexp/#', '-q', '1', '-W', '1']));
    await run('mosquitto_pub', [
      ...conn(SENSOR),
      ...['-t', 'free/mexp/a', '-m', 'expires', '-q', '1', '-D', 'publish', 'message-expiry-interval', '1'],
    ]);
    await run('mosquitto_pub', [
      ...conn(SENSOR),
      ...['-t', 'free/mexp/b', '-m', 'stays', '-q', '1', '-D', 'publish', 'message-expiry-interval', '300'],
    ]);
    // Time is the test: the 1 s message expires.
    await sleep(2200);
    const resumed = await quiet(
      run('mosquitto_sub', [
        ...conn(READER),
        ...id,
        '-t',
        'free/mexp/#',
        '-q',
        '1',
        '-C',
        '1',
        '-W',
        '3',
        '-F',
        '%p %E',
      ]),
    );
    const [payload, left] = resumed.trim().split(' ');
    assert.equal(payload, 'stays');
    assert.ok(Number(left) > 290 && Number(left) <= 300, resumed);

    // A topic refused by the limits: PUBACK 0x90 (144) in mosquitto_pub's debug output.
    const deep = Array.from({ length: 40 }, (_, i) => `l${i}`).join('/');
    const bad = await quiet(
      run('mosquitto_pub', [...conn(SENSOR), '-t', `free/${deep}`, '-m', 'x', '-q', '1', '-d']),
    );
    assert.match(bad, /PUBACK.*rc=144|Topic name invalid/i);
    // More subscriptions than --max-subscriptions (8): the ninth is refused.
    const many = Array.from({ length: 9 }, (_, i) => ['-t', `free/many/${i}`]).flat();
    const quota = await quiet(run('mosquitto_sub', [...conn(READER), ...many, '-d', '-W', '1']));
    assert.match(quota, /Subscribed \(mid: \d+\): 0, 0, 0, 0, 0, 0, 0, 0, 151/);
  });

  test('message expiry: an expired queued message is never delivered, a live one carries its remaining interval', async () => {
    const { client: s1 } = await connect5(url, {
      ...READER,
      clientId: 'exp-sub',
      clean: false,
      properties: { sessionExpiryInterval: 300 },
    });
    await subscribe5(s1, 'free/exp/#', { qos: 1 });
    await end5(s1);
    const { client: pub } = await connect5(url, SENSOR);
    await publish5(pub, 'free/exp/short', 'short', { qos: 1, properties: { messageExpiryInterval: 1 } });
    await publish5(pub, 'free/exp/long', 'long', { qos: 1, properties: { messageExpiryInterval: 100 } });
    await end5(pub);
    // Time is the test: the 1 s message expires.
    await sleep(2200);
    const { client: s2, connack } = await connect5(url, {
      ...READER,
      clientId: 'exp-sub',
      clean: false,
      properties: { sessionExpiryInterval: 300 },
    });
    const got = collect(s2);
    assert.equal(connack.sessionPresent, true);
    // Time is the test: nothing more arrives (the expired one).
    await sleep(600);
    try {
      assert.deepEqual(
        got.map((m) => m.payload),
        ['long'],
      );
      const left = got[0]!.packet.properties?.messageExpiryInterval as number;
      assert.ok(left <= 98 && left > 90, `remaining interval ${left}`);
    } finally {
      await end5(s2);
    }
  });

  test('session expiry interval: the session lives that long after a disconnect, then is gone', async () => {
    const opts = { ...READER, clientId: 'sess-exp', clean: false, properties: { sessionExpiryInterval: 1 } };
    const a = await connect5(url, opts);
    assert.equal(a.connack.sessionPresent, false);
    await subscribe5(a.client, 'free/sess/#', { qos: 1 });
    await end5(a.client);
    const b = await connect5(url, opts);
    assert.equal(b.connack.sessionPresent, true, 'resumed within the interval');
    await end5(b.client);
    // Time is the test: the 1 s session expires.
    await sleep(1600);
    const c = await connect5(url, opts);
    assert.equal(c.connack.sessionPresent, false, 'expired after the interval');
    await end5(c.client);
  });

  test('topic aliases both ways: a client alias is resolved; aliases are assigned to a client that allows them', async () => {
    const { client: reader } = await connect5(url, { ...READER, properties: { topicAliasMaximum: 5 } });
    const raw: Record<string, any>[] = [];
    reader.on('packetreceive', (p) => {
      if (p.cmd === 'publish') raw.push({ topic: p.topic, alias: p.properties?.topicAlias });
    });
    const got = collect(reader);
    const { client: sensor } = await connect5(url, SENSOR);
    try {
      await subscribe5(reader, 'plant/#');
      // The sensor sets alias 3 for a topic, then publishes with the alias only.
      await publish5(sensor, 'plant/line1/aliased', 'one', { properties: { topicAlias: 3 } });
      await publish5(sensor, '', 'two', { properties: { topicAlias: 3 } });
      await eventually(() => got.length === 2);
      assert.deepEqual(
        got.map((m) => [m.topic, m.payload]),
        [
          ['plant/line1/aliased', 'one'],
          ['plant/line1/aliased', 'two'],
        ],
      );
      // To the reader: the topic once with alias 1, then the alias alone.
      assert.deepEqual(raw[0], { topic: 'plant/line1/aliased', alias: 1 });
      assert.deepEqual(raw[1], { topic: '', alias: 1 });
    } finally {
      await end5(reader);
      await end5(sensor);
    }
    // An alias beyond the maximum (100): DISCONNECT 0x94.
    const r = await raw5(t.mqttPort, { clientId: 'bad-alias', ...SENSOR });
    await r.next('connack');
    r.send({
      cmd: 'publish',
      topic: 'free/x',
      payload: Buffer.from('x'),
      qos: 0,
      properties: { topicAlias: 101 },
    });
    assert.equal((await r.next('disconnect')).reasonCode, 0x94);
  });

  test("the client's Maximum Packet Size and Receive Maximum are kept when sending to it", async () => {
    const small = await raw5(t.mqttPort, {
      clientId: 'small-max',
      ...READER,
      properties: { maximumPacketSize: 200, receiveMaximum: 2 },
    });
    await small.next('connack');
    small.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: 'free/flow/#', qos: 1 }] });
    await small.next('suback');
    const { client: pub } = await connect5(url, SENSOR);
    try {
      await publish5(pub, 'free/flow/big', Buffer.alloc(500), { qos: 1 });
      for (let i = 1; i <= 5; i++) await publish5(pub, 'free/flow/n', `m${i}`, { qos: 1 });
      // Time is the test: no more than the receive maximum is in flight.
      await sleep(400);
      const pubs = () => small.packets.filter((p) => p.cmd === 'publish');
      // The 500-byte message is not sent at all; two are in flight, unacknowledged.
      assert.deepEqual(
        pubs().map((p) => p.payload.toString()),
        ['m1', 'm2'],
      );
      small.send({ cmd: 'puback', messageId: pubs()[0]!.messageId });
      await eventually(() => pubs().length === 3);
      // Time is the test: nothing more is sent.
      await sleep(200);
      assert.equal(pubs().length, 3, 'one acknowledged, one more sent');
      for (const p of pubs().slice(1)) small.send({ cmd: 'puback', messageId: p.messageId });
      await eventually(() => pubs().length === 5);
      assert.deepEqual(
        pubs().map((p) => p.payload.toString()),
        ['m1', 'm2', 'm3', 'm4', 'm5'],
      );
      const { broker } = await gql(
        t,
        token,
        '{ broker { refusals { oversizedDropped subscriptionsRefused } } }',
      );
      assert.ok(broker.refusals.oversizedDropped >= 1, JSON.stringify(broker.refusals));
    } finally {
      await end5(pub);
      small.socket.destroy();
    }
  });

  test('subscription options (retain handling, retain as published, no local) and subscription identifiers', async () => {
    const { client } = await connect5(url, READER);
    const got = collect(client);
    try {
      await publish5(client, 'free/ret/a', 'kept', { qos: 1, retain: true });
      // rh 2: no retained message on subscribe; rh 1: only for a new subscription; rh 0: always.
      await subscribe5(client, 'free/ret/#', { qos: 1, rh: 2 });
      // Time is the test: no retained message (rh 2).
      await sleep(300);
      assert.equal(got.length, 0);
      await client.unsubscribeAsync('free/ret/#');
      await subscribe5(client, 'free/ret/#', { qos: 1, rh: 1 });
      await eventually(() => got.length === 1);
      await subscribe5(client, 'free/ret/#', { qos: 1, rh: 1 });
      // Time is the test: no retained message for an existing subscription (rh 1).
      await sleep(300);
      assert.equal(got.length, 1, 'rh 1: not again for an existing subscription');
      await subscribe5(client, 'free/ret/#', { qos: 1, rh: 0 });
      await eventually(() => got.length === 2);
      got.length = 0;
      // rap: a live message keeps its retain flag only with retain-as-published.
      await subscribe5(client, 'free/ret/#', { qos: 1, rh: 2, rap: false });
      await publish5(client, 'free/ret/b', 'live', { qos: 1, retain: true });
      await eventually(() => got.length === 1);
      assert.equal(got[0]!.packet.retain, false);
      await subscribe5(client, 'free/ret/#', { qos: 1, rh: 2, rap: true });
      await publish5(client, 'free/ret/c', 'live', { qos: 1, retain: true });
      await eventually(() => got.length === 2);
      assert.equal(got[1]!.packet.retain, true);
      // nl: its own publishes are not sent back.
      await subscribe5(client, 'free/nl/#', { qos: 1, nl: true });
      await publish5(client, 'free/nl/x', 'mine', { qos: 1 });
      // Time is the test: its own publish is not sent back (nl).
      await sleep(300);
      assert.equal(got.filter((m) => m.topic === 'free/nl/x').length, 0);
      // Subscription identifier echoed.
      await subscribe5(client, 'free/sid/#', { qos: 1, properties: { subscriptionIdentifier: 42 } });
      await publish5(client, 'free/sid/x', 'sid', { qos: 1 });
      await eventually(() => got.some((m) => m.topic === 'free/sid/x'));
      const m = got.find((x) => x.topic === 'free/sid/x')!;
      assert.deepEqual([m.packet.properties?.subscriptionIdentifier].flat(), [42]);
      await publish5(client, 'free/ret/a', '', { qos: 1, retain: true });
      await publish5(client, 'free/ret/b', '', { qos: 1, retain: true });
      await publish5(client, 'free/ret/c', '', { qos: 1, retain: true });
    } finally {
      await end5(client);
    }
  });

  test('server keep alive, assigned client identifier, session takeover 0x8E, keep-alive timeout 0x8D', async () => {
    const a = await connect5(url, { ...READER, keepalive: 600, clientId: '' });
    try {
      assert.equal(a.connack.properties?.serverKeepAlive, 120);
      assert.match(String(a.connack.properties?.assignedClientIdentifier), /.+/);
    } finally {
      await end5(a.client);
    }
    const first = await connect5(url, { ...READER, clientId: 'taken' });
    const reasons: number[] = [];
    first.client.on('disconnect', (p) => reasons.push(p.reasonCode ?? 0));
    const second = await connect5(url, { ...READER, clientId: 'taken' });
    await eventually(() => reasons.length > 0);
    assert.deepEqual(reasons, [0x8e]);
    await end5(second.client);
    await end5(first.client);
    // A client silent for 1.5 keep alive periods: DISCONNECT 0x8D, then closed.
    const silent: Raw5 = await raw5(t.mqttPort, { clientId: 'silent', keepalive: 1, ...READER });
    await silent.next('connack');
    assert.equal((await silent.next('disconnect', 4000)).reasonCode, 0x8d);
    await silent.closed();
  });

  test('will delay interval: the will is published after the delay, not at once', async () => {
    const { client: watcher } = await connect5(url, READER);
    const got = collect(watcher);
    await subscribe5(watcher, 'free/will/#', { qos: 1 });
    const dying = await raw5(t.mqttPort, {
      clientId: 'dying',
      ...SENSOR,
      properties: { sessionExpiryInterval: 10 },
      will: {
        topic: 'free/will/dying',
        payload: Buffer.from('gone'),
        qos: 1,
        retain: false,
        properties: { willDelayInterval: 2 },
      },
    });
    await dying.next('connack');
    const killed = Date.now();
    dying.socket.destroy();
    // Time is the test: the will is delayed.
    await sleep(1000);
    assert.equal(got.length, 0, 'not before the delay');
    await eventually(() => got.length === 1, 4000);
    assert.ok(Date.now() - killed >= 1900, `after ${Date.now() - killed} ms`);
    assert.equal(got[0]!.payload, 'gone');
    await end5(watcher);
  });
});

describe('UNS broker on MQTT 5 across restarts', () => {
  for (const dialect of ['SQLite', 'PostgreSQL'] as const) {
    test(`server shutdown: DISCONNECT 0x8B; message expiry and properties hold across a restart (${dialect} session store)`, async (ctx) => {
      let databaseUrl: string | undefined;
      if (dialect === 'PostgreSQL') {
        const pg = await pgTestDatabase(ctx);
        if (!pg) return;
        databaseUrl = pg.url;
      }
      const t = await startTestUns({ databaseUrl });
      const token = await unsToken(t);
      await createAccount(t, token, 'dev', 'dev-password', [{ path: '#', perm: 'PubSub' }]);
      const url = () => `mqtt://127.0.0.1:${t.mqttPort}`;
      const opts = {
        username: 'dev',
        password: 'dev-password',
        clientId: 'restart-sub',
        clean: false,
        properties: { sessionExpiryInterval: 3600 },
      };
      const s = await connect5(url(), opts);
      await subscribe5(s.client, 'r/#', { qos: 1 });
      await end5(s.client);
      const pub = await connect5(url(), { username: 'dev', password: 'dev-password' });
      await publish5(pub.client, 'r/short', 'short', { qos: 1, properties: { messageExpiryInterval: 2 } });
      await publish5(pub.client, 'r/long', 'long', {
        qos: 1,
        properties: {
          messageExpiryInterval: 3600,
          correlationData: Buffer.from('corr'),
          userProperties: { k: 'v' },
          contentType: 'text/plain',
        },
      });
      const reasons: number[] = [];
      pub.client.on('disconnect', (p) => reasons.push(p.reasonCode ?? 0));
      const dataDir = t.dataDir;
      await t.stop({ keepData: true });
      await eventually(() => reasons.length > 0);
      assert.deepEqual(reasons, [0x8b]);
      await end5(pub.client);
      // Time is the test: the short-lived message expires across the restart.
      await sleep(2500);
      const t2 = await startTestUns({ dataDir, databaseUrl });
      try {
        const s2 = await connect5(`mqtt://127.0.0.1:${t2.mqttPort}`, opts);
        const got = collect(s2.client);
        assert.equal(s2.connack.sessionPresent, true);
        // Time is the test: nothing more arrives.
        await sleep(800);
        assert.deepEqual(
          got.map((m) => m.payload),
          ['long'],
        );
        const p = got[0]!.packet.properties;
        assert.equal(Buffer.from(p.correlationData).toString(), 'corr');
        assert.deepEqual({ ...p.userProperties }, { k: 'v' });
        assert.equal(p.contentType, 'text/plain');
        assert.ok(p.messageExpiryInterval <= 3600 && p.messageExpiryInterval > 3500);
        await end5(s2.client);
      } finally {
        await t2.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});
