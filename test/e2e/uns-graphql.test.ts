/**
 * The UNS's identity provider and GraphQL API on the wire: the password grant at both token paths
 * (body and Basic client credentials, RFC 6749 errors, the realm's token lifetime), 401 without or
 * with a bad token, operators read but do not change, and every query and mutation of /mqtt/gql.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACCOUNT_FIELDS,
  TOKEN_PATH,
  UNS_ADMIN_PASSWORD,
  closed,
  connectMqtt,
  end,
  gql,
  gqlRaw,
  publish,
  startTestUns,
  subscribe,
  unsToken,
  type TestUns,
} from '../helpers/uns.js';
import { basic } from '../helpers/edge.js';
import { eventually } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

const TOKEN_PATHS = [TOKEN_PATH, '/auth/v3/oauth/token'];

describe('UNS identity: the password grant', () => {
  let t: TestUns;
  before(async () => {
    t = await startTestUns();
  });
  after(() => t.stop());

  test('both token paths issue a Bearer token for 30 minutes by default; client in the body or as Basic', async () => {
    for (const path of TOKEN_PATHS) {
      const res = await t.call(path, {
        form: {
          grant_type: 'password',
          client_id: 'ide-ui',
          client_secret: '',
          username: 'admin',
          password: UNS_ADMIN_PASSWORD,
        },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.token_type, 'Bearer');
      assert.equal(res.body.expires_in, 1800);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.match(res.body.access_token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
      const viaBasic = await t.call(path, {
        headers: { authorization: basic('ide-ui', '') },
        form: { grant_type: 'password', username: 'admin', password: UNS_ADMIN_PASSWORD },
      });
      assert.equal(viaBasic.status, 200, viaBasic.text);
      const me = await gql(t, viaBasic.body.access_token, '{ me { username role } }');
      assert.deepEqual(me.me, { username: 'admin', role: 'admin' });
    }
  });

  test('errors are RFC 6749 bodies', async () => {
    const cases: [Record<string, string>, Record<string, string>, number, string][] = [
      [{}, { client_id: 'ide-ui', username: 'admin', password: 'x' }, 400, 'invalid_request'],
      [{}, { grant_type: 'client_credentials', client_id: 'ide-ui' }, 400, 'unsupported_grant_type'],
      [
        {},
        { grant_type: 'password', username: 'admin', password: UNS_ADMIN_PASSWORD },
        400,
        'invalid_request',
      ],
      [
        {},
        { grant_type: 'password', client_id: 'other', username: 'admin', password: UNS_ADMIN_PASSWORD },
        401,
        'invalid_client',
      ],
      [
        {},
        {
          grant_type: 'password',
          client_id: 'ide-ui',
          client_secret: 's',
          username: 'admin',
          password: UNS_ADMIN_PASSWORD,
        },
        401,
        'invalid_client',
      ],
      [
        {},
        { grant_type: 'password', client_id: 'ide-ui', username: 'admin', password: 'wrong-password' },
        400,
        'invalid_grant',
      ],
      [
        {},
        { grant_type: 'password', client_id: 'ide-ui', username: 'ghost', password: 'wrong-password' },
        400,
        'invalid_grant',
      ],
      [{}, { grant_type: 'password', client_id: 'ide-ui' }, 400, 'invalid_request'],
      [
        { authorization: basic('other', '') },
        { grant_type: 'password', username: 'admin', password: UNS_ADMIN_PASSWORD },
        401,
        'invalid_client',
      ],
    ];
    for (const [headers, form, status, error] of cases) {
      const res = await t.call(TOKEN_PATH, { headers, form });
      assert.equal(res.status, status, `${JSON.stringify(form)}: ${res.text}`);
      assert.equal(res.body.error, error, JSON.stringify(form));
      assert.equal(typeof res.body.error_description, 'string');
    }
    const basicRefused = await t.call(TOKEN_PATH, {
      headers: { authorization: basic('other', '') },
      form: { grant_type: 'password', username: 'admin', password: UNS_ADMIN_PASSWORD },
    });
    assert.match(String(basicRefused.headers['www-authenticate']), /^Basic/);
  });

  test('/mqtt/gql answers 401 without a token, with a bad one and with a non-Bearer scheme', async () => {
    const variants: Record<string, string>[] = [
      {},
      { authorization: 'Bearer not-a-token' },
      { authorization: basic('admin', UNS_ADMIN_PASSWORD) },
    ];
    for (const headers of variants) {
      for (const query of ['{ account { id } }', 'mutation { enableAccount(accountId: "x") { id } }']) {
        const res = await t.call('/mqtt/gql', { headers, json: { query } });
        assert.equal(res.status, 401, `${JSON.stringify(headers)} ${query}: ${res.text}`);
      }
    }
    const res = await t.call('/mqtt/gql', { json: { query: '{ account { id } }' } });
    assert.match(String(res.headers['www-authenticate']), /^Bearer/);
  });

  test('the realm policy sets the lifetime (15 to 60 minutes); operators read but cannot mutate; password changes end old tokens', async () => {
    const admin = await unsToken(t);
    const realm = await gql(t, admin, '{ realm { name clientId tokenLifetimeMinutes } }');
    assert.deepEqual(realm.realm, { name: 'standalone', clientId: 'ide-ui', tokenLifetimeMinutes: 30 });
    for (const bad of [14, 61]) {
      const res = await gqlRaw(
        t,
        admin,
        `mutation { setRealmPolicy(tokenLifetimeMinutes: ${bad}) { tokenLifetimeMinutes } }`,
      );
      assert.match(res.body.errors[0].message, /from 15 to 60/);
    }
    const set = await gql(
      t,
      admin,
      'mutation { setRealmPolicy(tokenLifetimeMinutes: 15) { tokenLifetimeMinutes } }',
    );
    assert.equal(set.setRealmPolicy.tokenLifetimeMinutes, 15);
    const short = await t.call(TOKEN_PATH, {
      form: { grant_type: 'password', client_id: 'ide-ui', username: 'admin', password: UNS_ADMIN_PASSWORD },
    });
    assert.equal(short.body.expires_in, 900);
    await gql(t, admin, 'mutation { setRealmPolicy(tokenLifetimeMinutes: 30) { tokenLifetimeMinutes } }');

    const created = await gql(
      t,
      admin,
      'mutation { createUser(username: "op", password: "operator-password") { username role createdAt } }',
    );
    assert.equal(created.createUser.role, 'operator');
    const op = await unsToken(t, 'op', 'operator-password');
    const users = await gql(t, op, '{ users { username role } me { username role } }');
    assert.deepEqual(
      users.users.map((u: { username: string }) => u.username),
      ['admin', 'op'],
    );
    assert.deepEqual(users.me, { username: 'op', role: 'operator' });
    const refused = await gqlRaw(
      t,
      op,
      'mutation { createUser(username: "x", password: "xxxxxxxxxx") { username } }',
    );
    assert.equal(refused.status, 403);
    assert.equal(refused.body.errors[0].extensions.code, ERRORS.graphqlForbidden.code);

    // A new password ends the tokens issued before it.
    // Time is the test: the new password is later than the tokens issued before it.
    await new Promise((r) => setTimeout(r, 5));
    const changed = await gql(
      t,
      admin,
      'mutation { setUserPassword(username: "op", password: "operator-password-2") { username } }',
    );
    assert.equal(changed.setUserPassword.username, 'op');
    assert.equal((await gqlRaw(t, op, '{ me { username } }')).status, 401);
    const op2 = await unsToken(t, 'op', 'operator-password-2');
    assert.equal((await gql(t, op2, '{ me { username } }')).me.username, 'op');
    assert.equal((await gql(t, admin, 'mutation { deleteUser(username: "op") }')).deleteUser, true);
    assert.equal((await gqlRaw(t, op2, '{ me { username } }')).status, 401);
    const last = await gqlRaw(t, admin, 'mutation { deleteUser(username: "admin") }');
    assert.match(last.body.errors[0].message, /last administrator/);
  });
});

describe('UNS GraphQL: accounts, rules, namespaces, topics, activation', () => {
  let t: TestUns;
  let token: string;
  before(async () => {
    t = await startTestUns();
    token = await unsToken(t);
  });
  after(() => t.stop());

  test('createAccount, account(id), account, accounts, addAccountRules, removeAccountRules, enable/disable, setAccountPassword, deleteAccount', async () => {
    const created = await gql(
      t,
      token,
      `mutation { createAccount(username: "line1", password: "line1-password", acType: "General", enabled: true) { ${ACCOUNT_FIELDS} createdAt } }`,
    );
    const a = created.createAccount;
    assert.equal(a.username, 'line1');
    assert.equal(a.acType, 'General');
    assert.equal(a.enabled, true);
    assert.deepEqual(a.rules, []);
    assert.deepEqual(a.clients, []);

    const added = await gql(
      t,
      token,
      `mutation($id: ID!) { addAccountRules(accountId: $id, rules: [{ path: "plant/line1/#", perm: PubSub }, { path: "cmd/+", perm: Sub }]) { rules { id path perm } } }`,
      { id: a.id },
    );
    assert.deepEqual(
      added.addAccountRules.rules.map((r: { path: string; perm: string }) => [r.path, r.perm]),
      [
        ['plant/line1/#', 'PubSub'],
        ['cmd/+', 'Sub'],
      ],
    );
    const bad = await gqlRaw(
      t,
      token,
      `mutation($id: ID!) { addAccountRules(accountId: $id, rules: [{ path: "a/#/b", perm: Pub }]) { id } }`,
      { id: a.id },
    );
    assert.match(bad.body.errors[0].message, /"#" must be a whole level and the last one/);
    const badPerm = await gqlRaw(
      t,
      token,
      `mutation($id: ID!) { addAccountRules(accountId: $id, rules: [{ path: "a", perm: Write }]) { id } }`,
      { id: a.id },
    );
    assert.equal(badPerm.status, 400, 'perm is an enum: GraphQL validation');

    const one = await gql(t, token, `query($id: ID) { account(id: $id) { ${ACCOUNT_FIELDS} } }`, {
      id: a.id,
    });
    assert.equal(one.account.length, 1);
    assert.equal(one.account[0].rules.length, 2);
    assert.deepEqual((await gql(t, token, '{ account(id: "nope") { id } }')).account, []);
    await gql(
      t,
      token,
      'mutation { createAccount(username: "line2", password: "line2-password") { id acType enabled } }',
    );
    const all = await gql(t, token, '{ account { username } }');
    assert.deepEqual(
      all.account.map((x: { username: string }) => x.username),
      ['line1', 'line2'],
    );
    const paged = await gql(
      t,
      token,
      '{ accounts(offset: 1, limit: 1) { items { username } total offset limit } }',
    );
    assert.deepEqual(paged.accounts, { items: [{ username: 'line2' }], total: 2, offset: 1, limit: 1 });
    const dup = await gqlRaw(
      t,
      token,
      'mutation { createAccount(username: "line1", password: "another-password") { id } }',
    );
    assert.equal(dup.body.errors[0].extensions.code, ERRORS.conflict.code);
    const weak = await gqlRaw(
      t,
      token,
      'mutation { createAccount(username: "weak", password: "short") { id } }',
    );
    assert.equal(weak.body.errors[0].extensions.code, ERRORS.weakPassword.code);
    const badType = await gqlRaw(
      t,
      token,
      'mutation { createAccount(username: "typed", password: "typed-password", acType: "Robot") { id } }',
    );
    assert.match(badType.body.errors[0].message, /acType must be one of General, Edge/);

    const cmdRule = added.addAccountRules.rules.find((r: { path: string }) => r.path === 'cmd/+').id;
    const removed = await gql(
      t,
      token,
      `mutation($id: ID!, $r: [ID!]!) { removeAccountRules(accountId: $id, ruleIds: $r) { rules { path } } }`,
      { id: a.id, r: [cmdRule] },
    );
    assert.deepEqual(removed.removeAccountRules.rules, [{ path: 'plant/line1/#' }]);
    const unknownRule = await gqlRaw(
      t,
      token,
      `mutation($id: ID!) { removeAccountRules(accountId: $id, ruleIds: ["x"]) { id } }`,
      { id: a.id },
    );
    assert.equal(unknownRule.body.errors[0].extensions.code, ERRORS.notFound.code);

    assert.equal(
      (await gql(t, token, `mutation($id: ID!) { disableAccount(accountId: $id) { enabled } }`, { id: a.id }))
        .disableAccount.enabled,
      false,
    );
    assert.equal(
      (await gql(t, token, `mutation($id: ID!) { enableAccount(accountId: $id) { enabled } }`, { id: a.id }))
        .enableAccount.enabled,
      true,
    );

    // The clients of an account, while connected and after.
    const mqttUrl = `mqtt://127.0.0.1:${t.mqttPort}`;
    const c = await connectMqtt(mqttUrl, {
      username: 'line1',
      password: 'line1-password',
      clientId: 'line1-plc',
    });
    const live = await gql(
      t,
      token,
      `query($id: ID) { account(id: $id) { clients { id connected protoLevel remote lastSeen } } }`,
      { id: a.id },
    );
    assert.equal(live.account[0].clients[0].id, 'line1-plc');
    assert.equal(live.account[0].clients[0].connected, true);
    assert.equal(live.account[0].clients[0].protoLevel, 4);
    assert.ok(!Number.isNaN(Date.parse(live.account[0].clients[0].lastSeen)));
    // A new password: the old one no longer connects.
    await gql(
      t,
      token,
      `mutation($id: ID!) { setAccountPassword(accountId: $id, password: "line1-password-2") { id } }`,
      { id: a.id },
    );
    await assert.rejects(
      connectMqtt(mqttUrl, { username: 'line1', password: 'line1-password' }),
      /Bad username or password/i,
    );
    await end(c);
    // The broker has seen the client go.
    const after = await eventually(async () => {
      const r = await gql(t, token, `query($id: ID) { account(id: $id) { clients { id connected } } }`, {
        id: a.id,
      });
      return r.account[0].clients.every((x: { connected: boolean }) => !x.connected) && r;
    }, 5000);
    assert.deepEqual(after.account[0].clients, [{ id: 'line1-plc', connected: false }]);

    assert.equal(
      (await gql(t, token, `mutation($id: ID!) { deleteAccount(accountId: $id) }`, { id: a.id }))
        .deleteAccount,
      true,
    );
    const gone = await gqlRaw(t, token, `mutation($id: ID!) { deleteAccount(accountId: $id) }`, { id: a.id });
    assert.equal(gone.body.errors[0].extensions.code, ERRORS.notFound.code);
  });

  test('namespaces, declared and seen topics browsed as a paged tree, broker info', async () => {
    const ns = await gql(
      t,
      token,
      'mutation { createNamespace(prefix: "acme/site1", description: "Site 1", defaultRules: [{ path: "acme/site1/shared/#", perm: Sub }]) { id prefix description defaultRules { path perm } createdAt } }',
    );
    assert.equal(ns.createNamespace.prefix, 'acme/site1');
    const id = ns.createNamespace.id;
    const updated = await gql(
      t,
      token,
      `mutation($id: ID!) { updateNamespace(id: $id, description: "Site one") { description } }`,
      { id },
    );
    assert.equal(updated.updateNamespace.description, 'Site one');
    assert.equal((await gql(t, token, '{ namespaces { prefix } }')).namespaces.length, 1);
    assert.equal(
      (await gql(t, token, `query($id: ID!) { namespace(id: $id) { prefix } }`, { id })).namespace.prefix,
      'acme/site1',
    );
    const dupNs = await gqlRaw(t, token, 'mutation { createNamespace(prefix: "acme/site1") { id } }');
    assert.equal(dupNs.body.errors[0].extensions.code, ERRORS.conflict.code);

    const declared = await gql(
      t,
      token,
      'mutation { declareTopic(path: "acme/site1/line1/temp", description: "temperature, °C") { path description declared seen } }',
    );
    assert.deepEqual(declared.declareTopic, {
      path: 'acme/site1/line1/temp',
      description: 'temperature, °C',
      declared: true,
      seen: false,
    });

    // Publish into the namespace: 120 machines under line2, each with a value.
    await gql(
      t,
      token,
      `mutation { createAccount(username: "site1", password: "site1-password", rules: [{ path: "acme/#", perm: PubSub }]) { id } }`,
    );
    const c = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: 'site1',
      password: 'site1-password',
    });
    for (let i = 0; i < 120; i++)
      await publish(c, `acme/site1/line2/m${String(i).padStart(3, '0')}/speed`, String(i));
    await publish(c, 'acme/site1/line1/temp', '21.5', { qos: 1, retain: true });
    await publish(c, 'acme/site1/line1/temp', '21.7', { qos: 1, retain: true });
    await end(c);

    const root = await gql(t, token, '{ topics { items { path childCount } total } }');
    assert.deepEqual(root.topics.items, [{ path: 'acme', childCount: 1 }]);
    const page = await gql(
      t,
      token,
      '{ topics(parent: "acme/site1/line2", offset: 100, limit: 50) { items { name path childCount } total offset limit } }',
    );
    assert.equal(page.topics.total, 120);
    assert.equal(page.topics.items.length, 20);
    assert.equal(page.topics.items[0].name, 'm100');
    const filtered = await gql(t, token, '{ topics(parent: "acme/site1/line2", filter: "m11") { total } }');
    assert.equal(filtered.topics.total, 10);
    const temp = await gql(
      t,
      token,
      '{ topic(path: "acme/site1/line1/temp") { path name description declared seen retained lastValue lastPublish messageCount messageRate childCount } }',
    );
    assert.equal(temp.topic.lastValue, '21.7');
    assert.equal(temp.topic.retained, true);
    assert.equal(temp.topic.seen, true);
    assert.equal(temp.topic.declared, true);
    assert.equal(temp.topic.messageCount, 2);
    assert.equal(typeof temp.topic.messageRate, 'number');
    assert.ok(Date.now() - Date.parse(temp.topic.lastPublish) < 60_000);
    const nested = await gql(
      t,
      token,
      '{ topic(path: "acme/site1") { childCount children(limit: 1) { items { name children(limit: 2) { items { name } total } } total } } }',
    );
    assert.equal(nested.topic.childCount, 2);
    assert.deepEqual(nested.topic.children.items[0], {
      name: 'line1',
      children: { items: [{ name: 'temp' }], total: 1 },
    });
    const withTopic = await gql(t, token, '{ namespaces { prefix topic { childCount } } }');
    assert.equal(withTopic.namespaces[0].topic.childCount, 2);
    assert.equal((await gql(t, token, '{ topic(path: "no/such") { path } }')).topic, null);
    assert.equal(
      (await gql(t, token, 'mutation { undeclareTopic(path: "acme/site1/line1/temp") }')).undeclareTopic,
      true,
    );

    const info = await gql(
      t,
      token,
      '{ broker { connectedClients topics mqttPort mqttsPort websocketPath protocols } }',
    );
    assert.equal(info.broker.mqttPort, t.mqttPort);
    assert.equal(info.broker.mqttsPort, t.mqttsPort);
    assert.equal(info.broker.websocketPath, '/mqtt');
    assert.ok(info.broker.topics >= 120);
    assert.deepEqual(info.broker.protocols, ['MQTT 3.1', 'MQTT 3.1.1', 'MQTT 5']);

    assert.equal(
      (await gql(t, token, `mutation($id: ID!) { deleteNamespace(id: $id) }`, { id })).deleteNamespace,
      true,
    );
  });

  test('an activation token gives an edge service credentials for its part of the namespace, once', async () => {
    await gql(
      t,
      token,
      'mutation { createNamespace(prefix: "acme/site2", defaultRules: [{ path: "acme/broadcast/#", perm: Sub }]) { id } }',
    );
    const made = await gql(
      t,
      token,
      'mutation { createActivationToken(path: "acme/site2/edge7", description: "edge 7", ttlMinutes: 60) { id token path description expiresAt usedAt redeemUrl } }',
    );
    const act = made.createActivationToken;
    assert.match(act.token, /^mwa_/);
    assert.equal(act.usedAt, null);
    assert.equal(act.redeemUrl, `${t.url}/mqtt/activate`);
    const listed = await gql(t, token, '{ activationTokens { id token path } }');
    assert.deepEqual(listed.activationTokens, [{ id: act.id, token: null, path: 'acme/site2/edge7' }]);

    const redeemed = await t.call('/mqtt/activate', { json: { token: act.token } });
    assert.equal(redeemed.status, 200, redeemed.text);
    assert.equal(redeemed.body.path, 'acme/site2/edge7');
    assert.equal(redeemed.body.mqtt.port, t.mqttPort);
    assert.deepEqual(
      redeemed.body.rules.map((r: { path: string; perm: string }) => `${r.path}:${r.perm}`).sort(),
      ['acme/broadcast/#:Sub', 'acme/site2/edge7/#:PubSub'],
    );
    assert.equal((await t.call('/mqtt/activate', { json: { token: act.token } })).status, 401, 'used once');
    assert.equal((await t.call('/mqtt/activate', { json: { token: 'mwa_nope' } })).status, 401);

    const edge = await connectMqtt(`mqtt://127.0.0.1:${t.mqttPort}`, {
      username: redeemed.body.username,
      password: redeemed.body.password,
    });
    assert.equal(await subscribe(edge, 'acme/site2/edge7/#', 1), 1);
    assert.equal(await subscribe(edge, 'acme/broadcast/#', 1), 1);
    assert.equal(await subscribe(edge, 'acme/site2/#', 1), 128);
    await publish(edge, 'acme/site2/edge7/m1/speed', '5', { qos: 1 });
    const gone = closed(edge);
    edge.publish('acme/site2/edge8/m1/speed', 'not mine');
    await gone;
    await end(edge);
    const acct = await gql(t, token, `query($id: ID) { account(id: $id) { acType username } }`, {
      id: redeemed.body.accountId,
    });
    assert.equal(acct.account[0].acType, 'Edge');

    const other = await gql(t, token, 'mutation { createActivationToken(path: "acme/site2/edge9") { id } }');
    assert.equal(
      (
        await gql(t, token, `mutation($id: ID!) { revokeActivationToken(id: $id) }`, {
          id: other.createActivationToken.id,
        })
      ).revokeActivationToken,
      true,
    );
    const wild = await gqlRaw(t, token, 'mutation { createActivationToken(path: "acme/+/x") { id } }');
    assert.match(wild.body.errors[0].message, /without wildcards/);
  });
});
