/**
 * What the UNS console calls, on the wire against a real UNS and real MQTT clients: the session
 * cookie of `/auth/console/login` and its CSRF token, the rule tester against the broker's own
 * answers (a real publish delivered or not, a real SUBACK), the connected clients with their
 * sessions and subscriptions, a disconnect, the broker's metrics and a test publish.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  UNS_ADMIN_PASSWORD,
  closed,
  connectMqtt,
  createAccount,
  end,
  gql,
  gqlRaw,
  nextMessage,
  noMessage,
  publish,
  startTestUns,
  subscribe,
  unsToken,
  type TestUns,
} from '../helpers/uns.js';
import { eventually } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

let t: TestUns;
let token: string;

before(async () => {
  t = await startTestUns();
  token = await unsToken(t);
});
after(() => t.stop());

/** The cookies a reply sets, by name. */
function cookiesOf(headers: Record<string, unknown>): Record<string, string> {
  const raw = headers['set-cookie'];
  const list = Array.isArray(raw) ? (raw as string[]) : raw ? [String(raw)] : [];
  return Object.fromEntries(list.map((c) => c.split(';')[0]!.split('=') as [string, string]));
}

describe('the console session', () => {
  test('login sets an HttpOnly session and a CSRF token; a GraphQL POST needs the token', async () => {
    const bad = await t.call('/auth/console/login', { json: { username: 'admin', password: 'wrong' } });
    assert.equal(bad.status, 401, bad.text);
    const extra = await t.call('/auth/console/login', { json: { username: 'admin', password: 'x', y: 1 } });
    assert.equal(extra.status, 400, extra.text);
    const res = await t.call('/auth/console/login', {
      json: { username: 'admin', password: UNS_ADMIN_PASSWORD },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.role, 'admin');
    const raw = String(res.headers['set-cookie']);
    assert.match(raw, /jwtAccess=[^;]+;.*HttpOnly/i);
    assert.match(raw, /SameSite=Strict/i);
    const { jwtAccess, csrfToken } = cookiesOf(res.headers);
    assert.ok(jwtAccess && csrfToken);
    const cookie = `jwtAccess=${jwtAccess}; csrfToken=${csrfToken}`;
    const query = { query: '{ me { username role } }' };
    const without = await t.call('/mqtt/gql', { headers: { cookie, origin: t.url }, json: query });
    assert.equal(without.status, 403, without.text);
    assert.equal(
      without.body.code ?? without.body.errors?.[0]?.extensions?.code,
      ERRORS.csrfRequired.code,
      without.text,
    );
    const forged = await t.call('/mqtt/gql', {
      headers: { cookie, origin: t.url, 'x-csrf-token': `${csrfToken.split('.')[0]}.forged` },
      json: query,
    });
    assert.equal(forged.status, 403, forged.text);
    const ok = await t.call('/mqtt/gql', {
      headers: { cookie, origin: t.url, 'x-csrf-token': csrfToken },
      json: query,
    });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.data.me, { username: 'admin', role: 'admin' });
    const out = await t.call('/auth/console/logout', { method: 'POST' });
    assert.equal(out.status, 204);
    assert.match(String(out.headers['set-cookie']), /jwtAccess=;/);
  });
});

const TEST_RULE = `query($r: TestRuleRequest!) { testRule(request: $r) { allowed reason matchedRules { path perm } account { username } } }`;

describe('the rule tester agrees with the broker', () => {
  test('publish and subscribe verdicts match what real connections are told', async () => {
    const accountId = await createAccount(t, token, 'tester-line', 'tester-password', [
      { path: 'plant/line1/#', perm: 'Pub' },
      { path: 'plant/+/status', perm: 'Sub' },
    ]);
    const { testRule: allowed } = await gql(t, token, TEST_RULE, {
      r: { accountId, action: 'publish', topic: 'plant/line1/temp' },
    });
    assert.equal(allowed.allowed, true);
    assert.deepEqual(allowed.matchedRules, [{ path: 'plant/line1/#', perm: 'Pub' }]);
    assert.match(allowed.reason, /allowed by Pub plant\/line1\/#/);
    const { testRule: refused } = await gql(t, token, TEST_RULE, {
      r: { username: 'tester-line', action: 'publish', topic: 'plant/line2/temp' },
    });
    assert.equal(refused.allowed, false);
    assert.match(refused.reason, /no Pub or PubSub rule matches/);
    const { testRule: subOk } = await gql(t, token, TEST_RULE, {
      r: { accountId, action: 'subscribe', topic: 'plant/line9/status' },
    });
    assert.equal(subOk.allowed, true);
    const { testRule: subNo } = await gql(t, token, TEST_RULE, {
      r: { accountId, action: 'subscribe', topic: 'plant/#' },
    });
    assert.equal(subNo.allowed, false);

    // The broker: an all-seeing watcher, and the account's own connection (MQTT 5 keeps it open).
    await createAccount(t, token, 'tester-watch', 'watch-password', [{ path: '#', perm: 'Sub' }]);
    const watch = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'tester-watch',
      password: 'watch-password',
    });
    const line = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'tester-line',
      password: 'tester-password',
      protocolVersion: 5,
    });
    try {
      assert.equal(await subscribe(watch, 'plant/#'), 0);
      const got = nextMessage(watch, 'plant/line1/temp');
      await publish(line, 'plant/line1/temp', '21.5', { qos: 1 });
      assert.equal((await got).payload, '21.5');
      await assert.rejects(publish(line, 'plant/line2/temp', '9', { qos: 1 }));
      await noMessage(watch, 'plant/line2/temp', 500);
      assert.equal(await subscribe(line, 'plant/line9/status'), 0);
      assert.ok((await subscribe(line, 'plant/#')) >= 0x80, 'the broker refuses plant/# as the tester does');
    } finally {
      await end(watch);
      await end(line);
    }
  });

  test('a disabled account, a wildcard publish topic and an unknown account', async () => {
    const id = await createAccount(t, token, 'tester-off', 'tester-password', [
      { path: '#', perm: 'PubSub' },
    ]);
    const wild = await gql(t, token, TEST_RULE, { r: { accountId: id, action: 'publish', topic: 'a/+' } });
    assert.equal(wild.testRule.allowed, false);
    assert.match(wild.testRule.reason, /no wildcard/);
    await gql(t, token, `mutation($id: ID!) { disableAccount(accountId: $id) { id } }`, { id });
    const off = await gql(t, token, TEST_RULE, { r: { accountId: id, action: 'publish', topic: 'a/b' } });
    assert.equal(off.testRule.allowed, false);
    assert.match(off.testRule.reason, /disabled/);
    const none = await gqlRaw(t, token, TEST_RULE, {
      r: { username: 'nobody', action: 'publish', topic: 'a' },
    });
    assert.equal(none.body.errors[0].extensions.code, ERRORS.notFound.code);
    const neither = await gqlRaw(t, token, TEST_RULE, { r: { action: 'publish', topic: 'a' } });
    assert.equal(neither.body.errors[0].extensions.code, ERRORS.badRequest.code);
  });
});

describe('connected clients, disconnect, metrics, publish', () => {
  test('a client is listed with its session and subscriptions, then disconnected', async () => {
    await createAccount(t, token, 'conn-acct', 'conn-password', [{ path: 'site/#', perm: 'PubSub' }]);
    const c = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'conn-acct',
      password: 'conn-password',
      clientId: 'console-probe-1',
      clean: false,
      reconnectPeriod: 0,
    });
    try {
      await subscribe(c, 'site/a/#', 1);
      const q = `query($r: ConnectionsRequest) { connections(request: $r) { total items { clientId username protoLevel cleanSession keepalive subscriptions { topic qos } subscriptionCount queued } } }`;
      const { connections } = await gql(t, token, q, { r: { filter: 'conn-acct' } });
      assert.equal(connections.total, 1);
      const [view] = connections.items;
      assert.equal(view.clientId, 'console-probe-1');
      assert.equal(view.username, 'conn-acct');
      assert.equal(view.cleanSession, false);
      assert.equal(view.protoLevel, 4);
      assert.deepEqual(view.subscriptions, [{ topic: 'site/a/#', qos: 1 }]);
      assert.equal(view.queued, 0);
      const neg = await gqlRaw(t, token, q, { r: { offset: -1 } });
      assert.equal(neg.body.errors[0].extensions.code, ERRORS.badRequest.code);

      const gone = closed(c, 10_000);
      const dc = await gql(
        t,
        token,
        `mutation($r: DisconnectClientRequest!) { disconnectClient(request: $r) }`,
        {
          r: { clientId: 'console-probe-1' },
        },
      );
      assert.equal(dc.disconnectClient, true);
      await gone;
      await eventually(
        async () => (await gql(t, token, q, { r: { filter: 'conn-acct' } })).connections.total === 0,
      );
      const again = await gql(
        t,
        token,
        `mutation($r: DisconnectClientRequest!) { disconnectClient(request: $r) }`,
        {
          r: { clientId: 'console-probe-1' },
        },
      );
      assert.equal(again.disconnectClient, false);
    } finally {
      await end(c);
    }
  });

  test('publishMessage reaches subscribers and the topic tree; metrics count it; bad input is a 400', async () => {
    await createAccount(t, token, 'pub-watch', 'watch-password', [{ path: '#', perm: 'Sub' }]);
    const w = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'pub-watch',
      password: 'watch-password',
    });
    try {
      await subscribe(w, 'console/test');
      const before = (await gql(t, token, '{ brokerMetrics { messagesTotal connections } }')).brokerMetrics;
      assert.ok(before.connections >= 1);
      const got = nextMessage(w, 'console/test');
      const pub = await gql(
        t,
        token,
        `mutation($r: PublishMessageRequest!) { publishMessage(request: $r) { topic bytes retain } }`,
        { r: { topic: 'console/test', payload: 'héllo', retain: true, qos: 1 } },
      );
      assert.deepEqual(pub.publishMessage, { topic: 'console/test', bytes: 6, retain: true });
      assert.equal((await got).payload, 'héllo');
      const topic = await gql(t, token, '{ topic(path: "console/test") { lastValue retained } }');
      assert.deepEqual(topic.topic, { lastValue: 'héllo', retained: true });
      const m = (
        await gql(
          t,
          token,
          '{ brokerMetrics { messagesPerSecond messagesTotal connections queuedMessages queuedBytes sessions } }',
        )
      ).brokerMetrics;
      assert.equal(m.messagesTotal, before.messagesTotal + 1);
      assert.equal(typeof m.messagesPerSecond, 'number');
      assert.equal(m.queuedMessages, 0);
      for (const r of [
        { topic: 'a/+', payload: 'x' },
        { topic: '', payload: 'x' },
        { topic: '$SYS/x', payload: 'x' },
        { topic: 'a', payload: 'x', qos: 3 },
      ]) {
        const res = await gqlRaw(
          t,
          token,
          `mutation($r: PublishMessageRequest!) { publishMessage(request: $r) { topic } }`,
          { r },
        );
        assert.equal(res.body.errors[0].extensions.code, ERRORS.badRequest.code, JSON.stringify(r));
      }
    } finally {
      await end(w);
    }
  });

  test('an operator reads the console data but cannot publish or disconnect', async () => {
    await gql(
      t,
      token,
      `mutation { createUser(username: "console-op", password: "operator-pass-1", role: operator) { username } }`,
    );
    const op = await unsToken(t, 'console-op', 'operator-pass-1');
    const m = await gql(t, op, '{ brokerMetrics { connections } connections { total } }');
    assert.equal(typeof m.brokerMetrics.connections, 'number');
    const res = await gqlRaw(t, op, `mutation { disconnectClient(request: { clientId: "x" }) }`);
    assert.equal(res.status, 403);
  });
});
