/**
 * Hardening of the UNS against what a client (or a guesser) can send (issue 10): each test runs an
 * attack against a real `millwright uns` process, with real MQTT clients or raw bytes on the wire,
 * and checks the process lives, stays within its memory bound, refuses as MQTT says and logs it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import {
  PROCESS_ACCOUNT,
  closed,
  connectMqtt,
  connectPacket,
  end,
  gql,
  gqlRaw,
  nextMessage,
  publish,
  publishPacket,
  rawMqtt,
  startTestUns,
  startUnsProcess,
  subscribe,
  subscribePacket,
  unsToken,
  waitForLog,
  type UnsProcess,
} from '../helpers/uns.js';
import { sleep } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

const creds = { username: PROCESS_ACCOUNT.username, password: PROCESS_ACCOUNT.password };
const MiB = 1024 * 1024;

async function rawConnected(p: UnsProcess, clientId: string) {
  const raw = await rawMqtt(p.mqttPort);
  raw.socket.write(connectPacket(clientId, creds.username, creds.password));
  assert.equal(await raw.connack(), 0);
  return raw;
}

/** The process still answers: a new client connects, subscribes and gets its own message. */
async function stillServing(p: UnsProcess): Promise<void> {
  assert.ok(p.alive(), `the UNS process died:\n${p.output().slice(-3000)}`);
  // Serving, not fast: a busy suite's machine may still be draining the attack's backlog.
  const c = await connectMqtt(p.mqttUrl, { ...creds, connectTimeout: 30_000 });
  try {
    assert.equal(await subscribe(c, 'check/alive'), 0);
    const t0 = Date.now();
    const got = nextMessage(c, 'check/alive', 30_000);
    await publish(c, 'check/alive', 'yes');
    assert.equal((await got).payload, 'yes');
    if (Date.now() - t0 > 1000) console.log('stillServing took', Date.now() - t0);
  } finally {
    await end(c);
  }
}

/** The session queue bounds of both processes that test them (see `queueRun`). */
const QUEUE_ARGS = ['--max-queued-messages', '5', '--max-queued-bytes', String(100 * 1024)];

/**
 * An offline persistent session (QoS 1 on q/#) gets 20 small messages, then three of 40 KiB (two
 * fit in --max-queued-bytes, three do not); answers what it receives when it comes back.
 */
async function queueRun(p: UnsProcess, clientId: string): Promise<string[]> {
  const opts = { ...creds, clientId, clean: false };
  const sub = await connectMqtt(p.mqttUrl, opts);
  assert.equal(await subscribe(sub, 'q/#', 1), 1);
  await end(sub);
  const pub = await connectMqtt(p.mqttUrl, creds);
  for (let i = 1; i <= 20; i++) await publish(pub, 'q/a', `m${i}`, { qos: 1 });
  // Bytes: 40 KiB messages (within the attack process's --max-packet-size), two fit in 100 KiB.
  for (let i = 1; i <= 3; i++) await publish(pub, 'q/b', `b${i}`.padEnd(40 * 1024, '.'), { qos: 1 });
  await end(pub);
  const got: string[] = [];
  const back = await new Promise<MqttClient>((resolve, reject) => {
    import('mqtt')
      .then(({ default: mqtt }) => {
        const c = mqtt.connect(p.mqttUrl, { ...opts, reconnectPeriod: 0 });
        c.on('message', (_t, payload) => got.push(payload.toString().slice(0, 3).replace(/\.+$/, '')));
        c.once('connect', () => resolve(c));
        c.once('error', reject);
      })
      .catch(reject);
  });
  // Time is the test: the queued messages arrive.
  await sleep(1500);
  await end(back);
  return got;
}

describe('one UNS process under attack', () => {
  let p: UnsProcess;
  before(async () => {
    p = await startUnsProcess([
      '--max-packet-size',
      String(64 * 1024),
      '--max-topic-tree-bytes',
      String(8 * MiB),
      '--max-inflight-inbound',
      '3',
      // For the session queue and the CONNECT limit tests at the end of this group (one process
      // less for each): persistent sessions and failed CONNECTs, which the attacks above do not use.
      ...QUEUE_ARGS,
      '--queue-overflow',
      'drop-newest',
      '--auth-rate-limit',
      '5',
    ]);
  });
  after(() => p.stop());

  test('item 1: a backlog of QoS 0 publishes whose slow subscriber leaves is drained without a stack overflow', async () => {
    // A subscriber that stops reading: deliveries wait for its socket, and aedes's emitter queues
    // the publishes behind its 100 in flight. Then the subscriber goes, and the queue (now matching
    // nobody) drains at once: before the fix, one stack frame deeper per message.
    const slow = await rawConnected(p, 'slow-sub');
    slow.socket.write(subscribePacket('flood/#'));
    // The raw SUBSCRIBE gets time to land (its SUBACK is not read).
    await sleep(200);
    slow.socket.pause();
    const one = publishPacket('flood/a', Buffer.from('x'));
    const publishers = await Promise.all([1, 2, 3, 4].map((i) => rawConnected(p, `flooder-${i}`)));
    // 100,000 publishes in all (it was 800,000): with the fix disabled (breakEmitterRecursion a
    // no-op in a copy of dist/), 50,000 in one round already killed the process (2026-11-28).
    const burst = Buffer.concat(Array.from({ length: 12_500 }, () => one));
    for (let round = 0; round < 2; round++) {
      for (const pub of publishers) pub.socket.write(burst);
      // Time is the test: bursts spaced in time.
      await sleep(250);
    }
    slow.socket.destroy();
    // Time is the test: the broker drains the dropped subscriber.
    await sleep(1500);
    for (const pub of publishers) pub.socket.destroy();
    await stillServing(p);
  });

  test('item 5: a packet above --max-packet-size closes the connection at its header, logged; the process does not buffer it', async () => {
    const raw = await rawConnected(p, 'big-one');
    const rssBefore = p.rss();
    // A PUBLISH announcing 250 MB; its body follows in 1 MiB pieces for as long as the socket stays open.
    const body = 250 * MiB;
    const header = Buffer.concat([Buffer.from([0x30]), Buffer.from([0x80, 0x80, 0x80, 0x7f])]);
    raw.socket.write(header);
    assert.equal(body < 0x0fffffff, true);
    const piece = Buffer.alloc(MiB, 0x61);
    for (let i = 0; i < 50 && !raw.isClosed(); i++) {
      raw.socket.write(piece);
      // Pacing: the broker reads the stream as it comes.
      await sleep(10);
    }
    await raw.closed(3000);
    const lines = await waitForLog(p, 'refused (at most 65536, --max-packet-size)');
    assert.match(lines[0]!, /mqtt packet of \d+ bytes refused/);
    assert.ok(p.rss() - rssBefore < 40 * MiB, `RSS grew by ${(p.rss() - rssBefore) / MiB} MiB`);

    // The same through a real client: a 100 KiB publish closes its connection, a 60 KiB one passes.
    const c = await connectMqtt(p.mqttUrl, { ...creds, connectTimeout: 30_000 });
    await publish(c, 'big/ok', 'x'.repeat(60 * 1024));
    c.publish('big/no', Buffer.alloc(100 * 1024));
    await closed(c);
    await end(c);
    await stillServing(p);
  });

  test('item 2: 20,000 long, deep topics keep the process under its memory bound; the browser stops at --max-topic-tree-bytes', async () => {
    const rssBefore = p.rss();
    const c = await connectMqtt(p.mqttUrl, creds);
    const level = 'x'.repeat(30);
    for (let i = 0; i < 20_000; i++) {
      // 31 levels, about 1000 bytes: within --max-topic-length and --max-topic-levels.
      const topic = `long/${i}/${Array.from({ length: 29 }, () => level).join('/')}`;
      c.publish(topic, 'v');
      // Pacing: a yield every 500 publishes.
      if (i % 500 === 0) await sleep(1);
    }
    await publish(c, 'long/done', 'v', { qos: 1 });
    await end(c);
    const grown = p.rss() - rssBefore;
    // Before: every node kept its full path (quadratic in the depth): about 1 GB for this attack.
    assert.ok(grown < 200 * MiB, `RSS grew by ${Math.round(grown / MiB)} MiB`);
    await waitForLog(p, 'namespace browser full (--max-topic-tree-bytes)');
    const token = await unsToken({ url: p.url });
    const { broker } = await gql(
      { url: p.url },
      token,
      '{ broker { topics refusals { topicsNotRecorded packetTooLarge } } }',
    );
    assert.ok(broker.topics > 100 && broker.topics < 30_000, `${broker.topics} nodes`);
    assert.ok(broker.refusals.topicsNotRecorded > 1000, JSON.stringify(broker.refusals));
    await stillServing(p);
  });

  test('item 2 and 10: a topic longer than --max-topic-length, deeper than --max-topic-levels or with NUL closes the publisher, logged; such a SUBSCRIBE gets 0x80 (NUL: closed)', async () => {
    const cases: [string | Buffer, string][] = [
      [`long/${'y'.repeat(54 * 1024)}`, 'bytes; at most 1024 (--max-topic-length)'],
      [Array.from({ length: 40 }, (_, i) => `l${i}`).join('/'), 'levels; at most 32 (--max-topic-levels)'],
      [Array.from({ length: 120 }, (_, i) => `m${i}`).join('/'), 'too many levels'],
      [Buffer.from('nul/a\u0000b'), 'a topic cannot contain NUL'],
    ];
    for (const [topic, logged] of cases) {
      const raw = await rawConnected(p, 'bad-topic');
      raw.socket.write(publishPacket(topic, Buffer.from('v')));
      await raw.closed(3000);
      await waitForLog(p, logged);
    }
    const c = await connectMqtt(p.mqttUrl, creds);
    assert.equal(await subscribe(c, Array.from({ length: 40 }, (_, i) => `s${i}`).join('/')), 128);
    assert.equal(await subscribe(c, `s/${'z'.repeat(2000)}`), 128);
    await waitForLog(p, 'mqtt subscribe refused (0x80)');
    await end(c);
    const raw = await rawConnected(p, 'nul-filter');
    raw.socket.write(subscribePacket(Buffer.from('nul/\u0000/#')));
    await raw.closed(3000);
    await waitForLog(p, 'a topic filter cannot contain NUL');
    await stillServing(p);
  });

  test('item 5: QoS 2 publishes awaiting PUBREL beyond --max-inflight-inbound close the connection, logged', async () => {
    const raw = await rawConnected(p, 'qos2-hoarder');
    for (let id = 1; id <= 3; id++) raw.socket.write(publishPacket('q2/a', Buffer.from('v'), 2, id));
    // Time is the test: three awaiting PUBREL do not close the connection.
    await sleep(300);
    assert.equal(raw.isClosed(), false, 'three awaiting PUBREL are allowed');
    raw.socket.write(publishPacket('q2/a', Buffer.from('v'), 2, 4));
    await raw.closed(3000);
    await waitForLog(p, 'maxInflightInbound exceeded');
    await stillServing(p);
  });

  test('item 5: --queue-overflow drop-newest keeps the first messages of an offline session within the count and byte limits, logged', async () => {
    const got = await queueRun(p, 'sess-drop-newest');
    assert.deepEqual(got, ['m1', 'm2', 'm3', 'm4', 'm5']);
    await waitForLog(p, 'mqtt session queue full');
    await stillServing(p);
  });

  // Last: it leaves 127.0.0.1 refused by this process.
  test('item 9 (issue 33): many user names failing from one address refuse it (--auth-rate-limit); one user name failing does not', async () => {
    const connect = async (clientId: string, user: string, password: string) => {
      const raw = await rawMqtt(p.mqttPort);
      raw.socket.write(connectPacket(clientId, user, password));
      const code = await raw.connack();
      raw.socket.destroy();
      return code;
    };
    // One user name guessed 8 times: only that name waits; the right account still connects.
    for (let i = 0; i < 8; i++) await connect(`guess-${i}`, 'nobody', `wrong-${i}`);
    assert.equal(await connect('right-1', creds.username, creds.password), 0);
    // Credential stuffing: six distinct user names fail; past five, the address is refused for all.
    const codes: number[] = [];
    for (let i = 0; i < 6; i++) codes.push(await connect(`stuff-${i}`, `user-${i}`, 'wrong'));
    // `nobody` (the eight guesses above) counts as one of the address's failing user names: with
    // user-0..user-4 that is six names past the limit of 5, so user-5's CONNECT is refused (5).
    assert.deepEqual(codes, [4, 4, 4, 4, 4, 5]);
    // `nobody` and user-0..4 make six names: the address is refused, even the right password.
    assert.equal(await connect('right-2', creds.username, creds.password), 5);
    await waitForLog(p, 'too many user names failed from');
  });
});

describe('session queues', () => {
  test('item 5: --queue-overflow drop-oldest keeps the newest within the limits', async () => {
    const p = await startUnsProcess([...QUEUE_ARGS, '--queue-overflow', 'drop-oldest']);
    try {
      const got = await queueRun(p, 'sess-drop-oldest');
      // 5 messages at most, 100 KiB at most: the last two 40 KiB ones and at most three small ones.
      assert.deepEqual(got.slice(-2), ['b2', 'b3']);
      assert.ok(got.length <= 5, got.join(','));
      assert.ok(!got.includes('m1'));
      await waitForLog(p, 'mqtt session queue full');
    } finally {
      await p.stop();
    }
  });
});

describe('item 10: the management API', () => {
  let t: Awaited<ReturnType<typeof startTestUns>>;
  let admin: string;
  before(async () => {
    t = await startTestUns();
    admin = await unsToken(t);
  });
  after(() => t.stop());

  test('an operator running a mutation is told about operators, not viewers', async () => {
    await gql(
      t,
      admin,
      'mutation { createUser(username: "ops", password: "ops-password", role: operator) { username } }',
    );
    const ops = await unsToken(t, 'ops', 'ops-password');
    const res = await gqlRaw(t, ops, 'mutation { deleteAccount(accountId: "x") }');
    assert.equal(res.status, 403);
    assert.deepEqual(res.body, {
      errors: [
        { message: 'operator role cannot run mutations', extensions: { code: ERRORS.graphqlForbidden.code } },
      ],
      data: null,
    });
    // Queries still work for an operator.
    assert.equal((await gql(t, ops, '{ me { role } }')).me.role, 'operator');
  });

  test('MQTT user names with NUL, control characters, # or + are refused', async () => {
    for (const username of ['a\u0000b', 'tab\tname', 'plant#1', 'a+b']) {
      const res = await gqlRaw(
        t,
        admin,
        'mutation($u: String!) { createAccount(username: $u, password: "long-enough") { id } }',
        {
          u: username,
        },
      );
      assert.equal(res.body.data, null, username);
      assert.match(res.body.errors[0].message, /username cannot contain/, username);
    }
  });

  test('a negative offset or limit is refused, as on the edge', async () => {
    for (const q of [
      '{ accounts(offset: -1) { total } }',
      '{ accounts(limit: -5) { total } }',
      '{ topics(offset: -1) { total } }',
      '{ topics(limit: -1) { total } }',
    ]) {
      const res = await gqlRaw(t, admin, q);
      assert.equal(res.body.data, null, q);
      assert.match(res.body.errors[0].message, /(offset|limit) must be an integer of 0 or more/, q);
    }
    assert.equal((await gql(t, admin, '{ accounts(offset: 0, limit: 0) { limit } }')).accounts.limit, 0);
  });

  test('a token is accepted in exactly one encoding: padding or another spelling of it is refused', async () => {
    assert.equal((await gqlRaw(t, admin, '{ me { role } }')).status, 200);
    const [h, p, s] = admin.split('.');
    for (const bad of [`${admin}==`, `${admin}=`, `${h}.${p}==.${s}`, `${h}.${p}.${s}.`]) {
      assert.equal((await gqlRaw(t, bad, '{ me { role } }')).status, 401, bad.slice(-12));
    }
  });
});
