/** UnsClient against a real UNS: the password grant, GraphQL at /mqtt/gql, MQTT over TLS. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuthenticationError, GraphqlError, UnsClient } from '../../src/client/index.js';
import { startTestUns, UNS_ADMIN_PASSWORD, type TestUns } from '../helpers/uns.js';

describe('UnsClient', () => {
  let t: TestUns;
  const clients: UnsClient[] = [];
  const client = (options: Partial<ConstructorParameters<typeof UnsClient>[0]> = {}) => {
    const c = new UnsClient({
      url: t.url,
      username: 'admin',
      password: UNS_ADMIN_PASSWORD,
      mqttUrl: `mqtts://127.0.0.1:${t.mqttsPort}`,
      insecure: true,
      ...options,
    });
    clients.push(c);
    return c;
  };

  before(async () => {
    t = await startTestUns();
  });
  after(async () => {
    for (const c of clients) c.close();
    await t.stop();
  });

  test('password grant once, GraphQL data, and an account that connects over MQTT with TLS', async () => {
    const uns = client();
    const token = await uns.token();
    assert.equal(await uns.token(), token);
    const created = await uns.graphql(
      `mutation($u: String!, $p: String!) { createAccount(username: $u, password: $p, acType: "General", enabled: true) { id username } }`,
      { u: 'line-7', p: 'line-7-password' },
    );
    assert.equal(created.createAccount.username, 'line-7');
    await uns.graphql(
      `mutation($id: ID!, $r: [RuleInput!]!) { addAccountRules(accountId: $id, rules: $r) { id } }`,
      {
        id: created.createAccount.id,
        r: [{ path: 'line7/#', perm: 'PubSub' }],
      },
    );
    const mqtt = await uns.mqtt({ username: 'line-7', password: 'line-7-password' });
    try {
      await mqtt.subscribeAsync('line7/temp');
      const got = new Promise<string>((r) => mqtt.once('message', (_t, p) => r(p.toString())));
      await mqtt.publishAsync('line7/temp', '21.5');
      assert.equal(await got, '21.5');
    } finally {
      await mqtt.endAsync(true);
    }
  });

  test('refusals are typed: bad password, bad MQTT credentials, GraphQL errors', async () => {
    await assert.rejects(client({ password: 'wrong-password' }).token(), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError);
      assert.equal(err.error, 'invalid_grant');
      return true;
    });
    await assert.rejects(client().mqtt({ username: 'line-7', password: 'nope-nope' }), (err: unknown) => {
      assert.ok(err instanceof AuthenticationError);
      assert.match(err.message, /Bad username or password/i);
      assert.ok(err.cause instanceof Error);
      return true;
    });
    await assert.rejects(client().graphql('{ nope }'), (err: unknown) => {
      assert.ok(err instanceof GraphqlError);
      assert.equal(err.status, 400);
      return true;
    });
    await assert.rejects(
      client({ username: undefined, password: undefined, bearer: 'not-a-token' }).graphql(
        '{ broker { mqttPort } }',
      ),
      {
        name: 'GraphqlError',
        status: 401,
      },
    );
  });

  test('certificates: the self-signed one is refused unless insecure or its CA is given', async () => {
    await assert.rejects(client({ insecure: false }).token(), { name: 'ConnectionError' });
  });
});
