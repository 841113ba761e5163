/**
 * `/cc/v2` end to end: the provider catalogue and the rules of contract part 2.3, the errors of
 * part 7 (a ProviderID that is not a UUID fails GraphQL validation; QoS 2 on the cloud message
 * service is invalid config), client documents that declare `$input: <Operation>Request!`, CRUD
 * of instances and subscriptions, the queue view, and `/cc/version`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startIntegEdge, type IntegEdge } from '../helpers/integrations.js';
import { PROVIDERS, uuidv5 } from '../../src/edge/integrations/catalogue.js';
import { ERRORS } from '../../src/kernel/errors.js';

const byName = (name: string) => PROVIDERS.find((p) => p.name === name)!.id;
const CREATE = `mutation CreateInstance($input: CreateInstanceRequest!) { CreateInstance(input: $input) { ID InstanceID Name ProviderID ProviderName Config Enabled ExecCommandEnabled InstanceState } }`;
const SCHEMA = `query GetProviderSchema($input: GetProviderSchemaRequest!) { GetProviderSchema(input: $input) {
  ProviderID Name IsExperimental Hidden Rules
  Properties { Name Type Required RequiredWhen AppliesWhen Default Enum Secret Config { Required } }
} }`;

describe('integrations: /cc/v2', () => {
  let e: IntegEdge;
  let seq = 0;
  const name = () => `instance-${++seq}`;
  const create = (providerId: string, config: Record<string, unknown>) =>
    e.gql(CREATE, { input: { Name: name(), ProviderID: providerId, Config: config } });

  before(async () => {
    e = await startIntegEdge();
  });
  after(async () => {
    await e.stop();
  });

  test('provider IDs are name-based UUIDs, stable across installs; plain names and (Gen 1)', async () => {
    const d = await e.ok(
      `query ListProviders($input: ListProvidersRequest) { ListProviders(input: $input) { Total Items { ProviderID Name Group IsExperimental Hidden Transport } } }`,
      { input: { IncludeHidden: true } },
    );
    const items = d.ListProviders.Items as any[];
    assert.equal(d.ListProviders.Total, PROVIDERS.length);
    for (const p of items)
      assert.match(p.ProviderID, /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(new Set(items.map((p) => p.ProviderID)).size, items.length);
    assert.equal(byName('MQTT'), uuidv5('millwright.integration.provider/mqtt'));
    // The UUID of a fixed name under the fixed namespace: the same in every release.
    assert.equal(byName('MQTT'), 'e00adfe9-730f-5bed-a37e-d2f1b20cd97d');
    assert.ok(items.some((p) => p.Name === 'MQTT (Gen 1)'));
    // Hidden providers are listed only on request; experimental ones are listed.
    const visible = (await e.ok(`{ ListProviders { Total Items { Name Hidden IsExperimental } } }`))
      .ListProviders;
    assert.ok(!visible.Items.some((p: any) => p.Hidden));
    // Experimental and not hidden: listed (and selectable, see the Sparkplug B suite).
    assert.ok(visible.Items.some((p: any) => p.Name === 'Sparkplug B' && p.IsExperimental));
    assert.equal(visible.Total, PROVIDERS.filter((p) => !p.hidden).length);
    const groups = (await e.ok(`{ ListGroupedProviders { Group IsExperimental Providers { Name } } }`))
      .ListGroupedProviders;
    assert.ok(
      groups.some((g: any) => g.Group === 'Brokers' && g.Providers.some((p: any) => p.Name === 'MQTT')),
    );
    const filtered = (
      await e.ok(
        `query($input: ListProvidersRequest) { ListProviders(input: $input) { Total Items { Name } } }`,
        {
          input: { Filter: { Name: { Contains: 'mqtt' } } },
        },
      )
    ).ListProviders;
    assert.deepEqual(
      filtered.Items.map((p: any) => p.Name),
      ['MQTT'],
    );
  });

  test('a hidden provider stays usable by ProviderID (GetProviderSchema, CreateInstance)', async () => {
    const gen1 = byName('MQTT (Gen 1)');
    const s = (await e.ok(SCHEMA, { input: { ProviderID: gen1 } })).GetProviderSchema;
    assert.equal(s.Hidden, true);
    assert.equal(s.IsExperimental, false);
    const defaults = Object.fromEntries(s.Properties.map((p: any) => [p.Name, p.Default]));
    assert.equal(defaults.connectTimeout, 30000);
    assert.equal(defaults.pingTimeout, 10000);
    assert.equal(defaults.reconnectInterval, 5000);
    assert.equal(defaults.publishWaitTimeout, 10000);
    const r = await create(gen1, { host: '127.0.0.1', port: 1, reconnectInterval: 60000 });
    assert.equal(r.errors, undefined, JSON.stringify(r.errors));
    assert.equal(r.data.CreateInstance.Config.publishWaitTimeout, 10000);
    assert.equal(r.data.CreateInstance.Config.connectTimeout, 30000);
    assert.equal(r.data.CreateInstance.ProviderName, 'MQTT (Gen 1)');
  });

  test('SchemaProperty.Required, and Config.Required kept (deprecated) with the same value', async () => {
    const s = (await e.ok(SCHEMA, { input: { ProviderID: byName('MQTT') } })).GetProviderSchema;
    const host = s.Properties.find((p: any) => p.Name === 'host');
    assert.equal(host.Required, true);
    assert.equal(host.Config.Required, true);
    const ca = s.Properties.find((p: any) => p.Name === 'caCert');
    assert.equal(ca.Required, false);
    assert.equal(ca.RequiredWhen, 'when tls is true');
    const introspect = await e.ok(
      `{ __type(name: "Config") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }`,
    );
    assert.deepEqual(
      introspect.__type.fields.map((f: any) => [f.name, f.isDeprecated]),
      [['Required', true]],
    );
  });

  test('part 7: a ProviderID that is not a UUID (a 4.0.x slug) fails GraphQL validation', async () => {
    for (const bad of ['mqtt', 'generic-mqtt-client', '1234', 'd9e0ac22-1a77-5cd7-a3b4']) {
      const r = await e.gql(CREATE, { input: { Name: name(), ProviderID: bad, Config: {} } });
      assert.equal(r.status, 400, JSON.stringify(r));
      assert.equal(r.data, null);
      assert.match(r.errors[0].message, /UUID/);
    }
    // As a literal too, and on GetProviderSchema.
    const lit = await e.gql(`{ GetProviderSchema(input: { ProviderID: "generic-mqtt" }) { Name } }`);
    assert.equal(lit.status, 400);
    assert.match(lit.errors[0].message, /UUID/);
    // A well-formed UUID that names no provider is a plain not-found error.
    const unknown = await e.gql(SCHEMA, { input: { ProviderID: '00000000-0000-4000-8000-000000000000' } });
    assert.match(unknown.errors[0].message, /provider 00000000-0000-4000-8000-000000000000 not found/);
  });

  test('part 7: qos or willQoS 2 on the cloud message service is invalid config; 0 and 1 are fine', async () => {
    const cms = byName('Cloud Message Service');
    for (const prop of ['qos', 'willQoS']) {
      const r = await create(cms, { host: 'example.invalid', caCert: PEM, [prop]: 2 });
      assert.match(r.errors[0].message, new RegExp(`config property "${prop}": must be one of 0, 1, got 2`));
      assert.equal(r.errors[0].extensions.code, ERRORS.badRequest.code);
    }
    const good = await create(cms, {
      host: '127.0.0.1',
      port: 1,
      qos: 0,
      willQoS: 1,
      reconnectInterval: 60000,
    });
    assert.equal(good.errors, undefined, JSON.stringify(good.errors));
    // The generic MQTT provider does take QoS 2.
    const generic = await create(byName('MQTT'), {
      host: '127.0.0.1',
      port: 1,
      qos: 2,
      reconnectInterval: 60000,
    });
    assert.equal(generic.errors, undefined, JSON.stringify(generic.errors));
  });

  test('caCert is required for TLS on generic MQTT; proxyValue when a proxy is configured on data ingest', async () => {
    const r = await create(byName('MQTT'), { host: 'h', tls: true });
    assert.match(r.errors[0].message, /config property "caCert" is required when tls is true/);
    const plain = await create(byName('MQTT'), {
      host: '127.0.0.1',
      port: 1,
      tls: false,
      reconnectInterval: 60000,
    });
    assert.equal(plain.errors, undefined);
    const di = byName('Data Ingest');
    const p = await create(di, { url: 'https://ingest.example.invalid', proxy: 'http' });
    assert.match(p.errors[0].message, /config property "proxyValue" is required when proxy is "http"/);
    const ok = await create(di, {
      url: 'https://ingest.example.invalid',
      proxy: 'none',
      reconnectInterval: 60000,
    });
    assert.equal(ok.errors, undefined, JSON.stringify(ok.errors));
  });

  test('connectionType: credentials of the other connection type are not required', async () => {
    const az = byName('Azure IoT Hub');
    const sas = await create(az, {
      hostName: 'localhost',
      deviceId: 'd1',
      connectionType: 'sas',
      port: 1,
      reconnectInterval: 60000,
    });
    assert.match(
      sas.errors[0].message,
      /config property "sharedAccessKey" is required when connectionType is "sas"/,
    );
    const sasOk = await create(az, {
      hostName: 'localhost',
      deviceId: 'd1',
      connectionType: 'sas',
      sharedAccessKey: Buffer.from('k').toString('base64'),
      port: 1,
      reconnectInterval: 60000,
    });
    assert.equal(sasOk.errors, undefined, JSON.stringify(sasOk.errors));
    assert.equal(sasOk.data.CreateInstance.Config.sharedAccessKey, '********');
    assert.equal(sasOk.data.CreateInstance.Config.clientCert, undefined);
    const x509 = await create(az, { hostName: 'localhost', deviceId: 'd1', connectionType: 'x509', port: 1 });
    assert.match(
      x509.errors[0].message,
      /config property "clientCert" is required when connectionType is "x509"/,
    );
  });

  test('bad input is refused naming the property and the rule', async () => {
    const mqtt = byName('MQTT');
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /config property "host" is required/],
      [{ host: 'h', port: 70000 }, /config property "port": must be at most 65535/],
      [{ host: 'h', port: 'x' }, /config property "port": must be an integer/],
      [{ host: 'h', colour: 'red' }, /config property "colour" is not a property of provider "MQTT"/],
      [{ host: 'h', protocolVersion: 3 }, /config property "protocolVersion": must be one of 4, 5/],
      [
        { host: 'h', queueFullPolicy: 'block' },
        /config property "queueFullPolicy": must be one of drop-oldest, drop-newest/,
      ],
      [{ host: 'h', tls: true, caCert: 'not pem' }, /config property "caCert": must be PEM text/],
    ];
    for (const [config, pattern] of cases) {
      const r = await create(mqtt, config);
      assert.match(r.errors?.[0]?.message ?? JSON.stringify(r), pattern);
    }
  });

  test('instances and subscriptions: create, list, update, delete; the queue view; the state machine', async () => {
    const id = (
      await e.ok(CREATE, {
        input: {
          Name: 'crud',
          ProviderID: byName('MQTT'),
          Config: { host: '127.0.0.1', port: 1, reconnectInterval: 60000 },
          ExecCommandEnabled: true,
          Description: 'd',
        },
      })
    ).CreateInstance.ID;
    const dup = await e.gql(CREATE, {
      input: { Name: 'crud', ProviderID: byName('MQTT'), Config: { host: 'h' } },
    });
    assert.match(dup.errors[0].message, /named "crud" exists/);
    const status = await e.waitState(id, 'Disconnected');
    assert.match(status.Reason, /ECONNREFUSED/);
    assert.equal(status.LastError, status.Reason);
    assert.equal(status.ProviderName, 'MQTT');
    assert.equal(status.ExecCommandEnabled, true);

    const l2r = await e.subscribe(id, true, 'devicehub.raw.>', 'plant/{subject}');
    await e.subscribe(id, false, 'remote.{topic}', 'factory/#');
    const subs = await e.ok(
      `query ListSubscriptions($input: ListSubscriptionsRequest!) { ListSubscriptions(input: $input) { Total Items { TopicID IsLocalToRemote Enabled LocalName RemoteName Config Description } } }`,
      { input: { InstanceID: id, Sort: [{ Field: 'LocalName', Order: 'ASC' }] } },
    );
    assert.equal(subs.ListSubscriptions.Total, 2);
    assert.deepEqual(
      subs.ListSubscriptions.Items.map((s: any) => [s.LocalName, s.IsLocalToRemote, s.RemoteName, s.Enabled]),
      [
        ['devicehub.raw.>', true, 'plant/{subject}', true],
        ['remote.{topic}', false, 'factory/#', true],
      ],
    );
    const badSub = await e.gql(
      `mutation($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { TopicID } }`,
      { input: { InstanceID: id, IsLocalToRemote: true, LocalName: 'a.>.b', RemoteName: 'x' } },
    );
    assert.match(badSub.errors[0].message, /LocalName "a.>.b" is not a DataHub subject pattern/);
    const wild = await e.gql(
      `mutation($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { TopicID } }`,
      { input: { InstanceID: id, IsLocalToRemote: true, LocalName: 'a.b', RemoteName: 'x/#' } },
    );
    assert.match(wild.errors[0].message, /no wildcards/);

    // Disconnected: what the DataHub publishes is queued on disk.
    await e.waitState(id, 'Disconnected');
    for (let i = 0; i < 5; i++) e.t.edge.datahub.hub.publish(`devicehub.raw.d.t${i}`, { value: i });
    let queue: any;
    const deadline = Date.now() + 5000;
    do {
      queue = (
        await e.ok(
          `query GetInstanceQueue($input: GetInstanceQueueRequest!) { GetInstanceQueue(input: $input) { Depth Bytes FileBytes OldestMessageAgeMs FullPolicy MaxMessages } }`,
          {
            input: { InstanceID: id },
          },
        )
      ).GetInstanceQueue;
    } while (queue.Depth < 5 && Date.now() < deadline);
    assert.equal(queue.Depth, 5);
    assert.ok(queue.Bytes > 0 && queue.FileBytes > 0 && queue.OldestMessageAgeMs >= 0);
    assert.equal(queue.FullPolicy, 'drop-oldest');

    // A config change keeps the queue; Enabled false → Disabled.
    const upd = await e.ok(
      `mutation UpdateInstance($input: UpdateInstanceRequest!) { UpdateInstance(input: $input) { Enabled InstanceState Config } }`,
      {
        input: {
          InstanceID: id,
          Enabled: false,
          Config: { host: '127.0.0.1', port: 2, reconnectInterval: 60000 },
        },
      },
    );
    assert.equal(upd.UpdateInstance.Enabled, false);
    assert.equal(upd.UpdateInstance.InstanceState, 'Disabled');
    assert.equal(upd.UpdateInstance.Config.port, 2);
    const st = await e.status(id);
    assert.equal(st.InstanceState, 'Disabled');
    assert.equal(st.Queue.Depth, 5);

    await e.ok(
      `mutation UpdateSubscription($input: UpdateSubscriptionRequest!) { UpdateSubscription(input: $input) { Enabled } }`,
      { input: { TopicID: l2r, Enabled: false } },
    );
    assert.equal(
      (
        await e.ok(
          `mutation DeleteSubscription($input: DeleteSubscriptionRequest!) { DeleteSubscription(input: $input) }`,
          { input: { TopicID: l2r } },
        )
      ).DeleteSubscription,
      true,
    );
    const list = await e.ok(
      `query ListInstances($input: ListInstancesRequest) { ListInstances(input: $input) { Total Items { Name ProviderID ProviderName } } }`,
      { input: { Filter: { Name: { Eq: 'crud' } } } },
    );
    assert.equal(list.ListInstances.Total, 1);
    assert.equal(list.ListInstances.Items[0].ProviderName, 'MQTT');
    assert.equal(
      (
        await e.ok(
          `mutation DeleteInstance($input: DeleteInstanceRequest!) { DeleteInstance(input: $input) }`,
          { input: { InstanceID: id } },
        )
      ).DeleteInstance,
      true,
    );
    const gone = await e.gql(STATUS_Q, { input: { InstanceID: id } });
    assert.match(gone.errors[0].message, /not found/);
  });

  test('an unreachable host and an unresolvable name are states with a reason, never errors of the API', async () => {
    const id = await e.createInstance(name(), byName('MQTT'), {
      host: 'no-such-host.invalid',
      reconnectInterval: 60000,
    });
    const st = await e.waitState(id, 'Disconnected');
    assert.match(st.Reason, /ENOTFOUND|EAI_AGAIN/);
  });

  test('the record type Subscription keeps its name and is not the subscription root', async () => {
    const d = await e.ok(`{
      __schema { queryType { name } mutationType { name } subscriptionType { name fields { name } } }
      __type(name: "Subscription") { kind fields { name } }
    }`);
    assert.equal(d.__schema.queryType.name, 'Query');
    assert.equal(d.__schema.mutationType.name, 'Mutation');
    // Introspection used to list the record's fields (TopicID, InstanceID...) as subscriptions.
    assert.equal(d.__schema.subscriptionType, null);
    assert.equal(d.__type.kind, 'OBJECT');
    assert.ok(d.__type.fields.some((f: any) => f.name === 'TopicID'));
    // A client's fragment on the record type still applies.
    const id = await e.createInstance(name(), byName('MQTT'), {
      host: '127.0.0.1',
      reconnectInterval: 60000,
    });
    const created = await e.ok(
      `mutation CreateSubscription($input: CreateSubscriptionRequest!) { CreateSubscription(input: $input) { __typename ...S } }
       fragment S on Subscription { TopicID InstanceID LocalName }`,
      { input: { InstanceID: id, IsLocalToRemote: true, LocalName: 'plant.>', RemoteName: 'out/{subject}' } },
    );
    assert.equal(created.CreateSubscription.__typename, 'Subscription');
    assert.equal(created.CreateSubscription.InstanceID, id);
    // Over HTTP, a subscription operation is a GraphQL error too, not a field of the record.
    const overHttp = await e.gql('subscription { TopicID }');
    assert.ok(overHttp.errors?.length, JSON.stringify(overHttp));
    assert.equal(overHttp.data?.TopicID, undefined);
  });

  test('a subscription over the WebSocket is refused with a GraphQL error, the socket stays open', async () => {
    const ws = new WebSocket(`${e.t.url.replace(/^http/, 'ws')}/cc/v2`, 'graphql-transport-ws', {
      headers: { authorization: e.auth },
      rejectUnauthorized: false,
    });
    const messages: any[] = [];
    let closed: { code: number; reason: string } | null = null;
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    ws.on('close', (code, reason) => (closed = { code, reason: String(reason) }));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const next = async (type: string) => {
      const until = Date.now() + 10_000;
      for (;;) {
        const i = messages.findIndex((m) => m.type === type);
        if (i >= 0) return messages.splice(i, 1)[0];
        assert.equal(closed, null, `the socket closed waiting for ${type}`);
        assert.ok(Date.now() < until, `no ${type} within 10 s: ${JSON.stringify(messages)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
      await next('connection_ack');
      ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { TopicID }' } }));
      const refused = await next('error');
      assert.equal(refused.id, '1');
      assert.ok(Array.isArray(refused.payload) && refused.payload.length > 0, JSON.stringify(refused));
      assert.match(refused.payload[0].message, /subscription/i);
      // The connection is still usable: a ping is answered.
      ws.send(JSON.stringify({ type: 'ping' }));
      await next('pong');
      assert.equal(closed, null);
    } finally {
      ws.close();
    }
  });

  test('/cc/version answers; mutations need an admin', async () => {
    const v = await e.t.call('/cc/version', { headers: { authorization: e.auth } });
    assert.equal(v.status, 200);
    assert.equal(typeof v.body.version, 'string');
    const anon = await e.t.call('/cc/v2', { json: { query: '{ ListProviders { Total } }' } });
    assert.equal(anon.status, 401);
  });
});

const STATUS_Q = `query GetInstanceStatus($input: GetInstanceStatusRequest!) { GetInstanceStatus(input: $input) { InstanceState } }`;
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
