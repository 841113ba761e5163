/**
 * Digital twins live: a pump model with three dynamic attributes bound to Generator tags, one
 * static attribute and one `UNS` attribute fed from a real UNS broker started in-process; the
 * instance's payload read on its `Topic` by a plain NATS client with the transformation applied;
 * a nested instance embedded; a nesting cycle reported without stopping the others; `DataAccess`
 * and `PlaygroundMessages` over a real WebSocket speaking graphql-transport-ws.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from 'nats';
import WebSocket from 'ws';
import type { MqttClient } from 'mqtt';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { connectMqtt, createAccount, end, startTestUns, unsToken, type TestUns } from '../helpers/uns.js';
import { nextMessage } from '../edge/acquisition/support.js';
import { TWINS, TWINS_PATH } from '../../src/client/index.js';
import { eventually } from '../helpers/util.js';

let uns: TestUns;
let t: TestEdge;
let auth: string;
let nc: NatsConnection;
let publisher: MqttClient;
const ids: Record<string, string> = {};

async function ok(path: string, query: string, variables?: Record<string, unknown>): Promise<any> {
  const r = await graphql(t, path, auth, query, variables);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
  return r.body.data;
}
const twins = (q: string, v?: Record<string, unknown>) => ok(TWINS_PATH, q, v);

before(async () => {
  uns = await startTestUns();
  const token = await unsToken(uns);
  await createAccount(uns, token, 'edge-twins', 'edge-twins-pw', [{ path: 'plant/#', perm: 'Sub' }]);
  await createAccount(uns, token, 'line-1', 'line-1-pw', [{ path: 'plant/#', perm: 'Pub' }]);
  const mqttUrl = `mqtt://127.0.0.1:${uns.mqttPort}`;
  t = await startTestEdge({
    logLevel: 'error',
    unsMqttUrl: mqttUrl,
    unsUsername: 'edge-twins',
    unsPassword: 'edge-twins-pw',
  });
  const admin = await bootstrapAdmin(t);
  auth = `Bearer ${(await clientToken(t, admin)).token}`;
  nc = await connect({ servers: t.edge.datahub.gateway!.url });
  publisher = await connectMqtt(mqttUrl, { username: 'line-1', password: 'line-1-pw' });

  // A Generator device with three tags.
  const dev = await ok(
    '/devicehub/v2',
    `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`,
    {
      in: { Name: 'gen', DriverID: 'Generator', Properties: [] },
    },
  );
  const tag = (Name: string, TagName: string, ValueType: string) => ({
    DeviceID: dev.CreateDevice.ID,
    Name,
    TagName,
    ValueType,
    IntervalMs: 100,
    Properties: [
      { Name: 'address', Value: '0' },
      { Name: 'amplitude', Value: '5' },
      { Name: 'periodMs', Value: '2000' },
    ],
  });
  await ok(
    '/devicehub/v2',
    `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`,
    {
      in: [tag('S', 'pressure', 'float64'), tag('R', 'speed', 'float64'), tag('Q', 'running', 'bool')],
    },
  );

  // The pump model.
  const m = (await twins(TWINS.CreateModel, { input: { Name: 'Pump', Assets: 'pump', StaleAfterMs: 5000 } }))
    .CreateModel;
  ids.pumpModel = m.ID;
  const tr = (
    await twins(TWINS.CreateTransformation, {
      input: {
        Name: 'bar-and-kpa',
        Expression: '{ "bar": value, "kPa": value * 100, "device": $params.Device }',
      },
    })
  ).CreateTransformation;
  await twins(TWINS.CreateParameter, { input: { ModelID: m.ID, Key: 'Device', Value: 'gen' } });
  await twins(TWINS.CreateStaticAttribute, { input: { ModelID: m.ID, Key: 'Vendor', Value: 'ACME' } });
  const dyn = (input: Record<string, unknown>) =>
    twins(TWINS.CreateDynamicAttribute, { input: { ModelID: m.ID, ...input } });
  await dyn({ Name: 'Pressure', Topic: 'devicehub.raw.{{Device}}.pressure', TransformationID: tr.ID });
  await dyn({ Name: 'Speed', Topic: 'devicehub.raw.{{Device}}.speed' });
  await dyn({ Name: 'Running', Topic: 'devicehub.raw.{{Device}}.running' });
  await dyn({ Name: 'Setpoint', AttributeType: 'UNS', Topic: 'plant/line1/pump1/setpoint' });
  const inst = (
    await twins(TWINS.CreateInstance, { input: { ModelID: m.ID, Name: 'pump1', Topic: 'plant.pump1' } })
  ).CreateInstance;
  ids.pump1 = inst.ID;
});
after(async () => {
  await end(publisher).catch(() => undefined);
  await nc?.close().catch(() => undefined);
  await t?.stop();
  await uns?.stop();
});

describe('twins live', () => {
  test('the payload on the instance Topic, read by a plain NATS client, with the transformation applied', async () => {
    const p = await nextMessage(
      nc,
      'plant.pump1',
      (x) => typeof x.data?.Speed === 'number' && x.data?.Pressure !== null,
      10_000,
    );
    assert.equal(p.instance, 'pump1');
    assert.equal(p.model, 'Pump');
    assert.equal(p.data.Vendor, 'ACME');
    assert.equal(typeof p.data.Pressure.bar, 'number');
    assert.ok(
      Math.abs(p.data.Pressure.kPa - p.data.Pressure.bar * 100) < 1e-9,
      JSON.stringify(p.data.Pressure),
    );
    assert.equal(p.data.Pressure.device, 'gen');
    assert.equal(typeof p.data.Running, 'boolean');
    assert.ok(!p.stale.includes('Speed'));
    assert.ok(p.ageMs.Speed >= 0 && p.ageMs.Speed < 5000);
    assert.ok(p.stale.includes('Setpoint'), 'no UNS message yet');
  });

  test('a UNS attribute is fed from the UNS broker', async () => {
    await eventually(async () => {
      publisher.publish('plant/line1/pump1/setpoint', JSON.stringify({ value: 42.5 }));
      const p = await nextMessage(nc, 'plant.pump1', (x) => x.data?.Setpoint === 42.5, 1000);
      assert.ok(!p.stale.includes('Setpoint'));
      return true;
    }, 10_000);
  });

  test('a nested instance is embedded; a nesting cycle is reported and the others keep running', async () => {
    const skid = (await twins(TWINS.CreateModel, { input: { Name: 'Skid', Assets: 'skid' } })).CreateModel;
    await twins(TWINS.CreateDynamicAttribute, {
      input: { ModelID: skid.ID, Name: 'Pump', Type: 'nestedModel', NestedInstanceID: ids.pump1 },
    });
    const s1 = (
      await twins(TWINS.CreateInstance, { input: { ModelID: skid.ID, Name: 'skid1', Topic: 'plant.skid1' } })
    ).CreateInstance;
    const p = await nextMessage(nc, 'plant.skid1', (x) => typeof x.data?.Pump?.Speed === 'number', 10_000);
    assert.equal(p.data.Pump.Vendor, 'ACME');

    const loop = (await twins(TWINS.CreateModel, { input: { Name: 'Loop', Assets: 'loop' } })).CreateModel;
    const a = (await twins(TWINS.CreateInstance, { input: { ModelID: loop.ID, Name: 'a' } })).CreateInstance;
    const b = (await twins(TWINS.CreateInstance, { input: { ModelID: loop.ID, Name: 'b' } })).CreateInstance;
    await twins(TWINS.CreateDynamicAttribute, {
      input: {
        ModelID: loop.ID,
        InstanceID: a.ID,
        Name: 'Next',
        Type: 'nestedModel',
        NestedInstanceID: b.ID,
      },
    });
    await twins(TWINS.CreateDynamicAttribute, {
      input: {
        ModelID: loop.ID,
        InstanceID: b.ID,
        Name: 'Next',
        Type: 'nestedModel',
        NestedInstanceID: a.ID,
      },
    });
    await eventually(async () => {
      const st = (await twins(TWINS.GetInstanceStatus, { ID: a.ID })).GetInstanceStatus;
      assert.equal(st.State, 'error');
      assert.equal(st.Error, 'nesting cycle: a → b → a');
      return true;
    }, 5000);
    assert.equal(
      (await twins(TWINS.GetInstanceStatus, { ID: ids.pump1 })).GetInstanceStatus.State,
      'running',
    );
    assert.equal((await twins(TWINS.GetInstanceStatus, { ID: s1.ID })).GetInstanceStatus.State, 'running');
    const since = Date.now();
    const again = await nextMessage(nc, 'plant.skid1', (x) => x.timestamp > since, 10_000);
    assert.equal(typeof again.data.Pump.Speed, 'number');
  });
});

/** A graphql-transport-ws client on /digital-twins. */
async function wsClient() {
  const ws = new WebSocket(`${t.url.replace(/^https/, 'wss')}${TWINS_PATH}`, 'graphql-transport-ws', {
    headers: { authorization: auth },
    rejectUnauthorized: false,
  });
  const queue: any[] = [];
  const waiters: ((m: any) => void)[] = [];
  ws.on('message', (data) => {
    const m = JSON.parse(String(data));
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = (ms = 10_000): Promise<any> =>
    queue.length > 0
      ? Promise.resolve(queue.shift())
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no WebSocket message within ${ms} ms`)), ms);
          waiters.push((m) => {
            clearTimeout(timer);
            resolve(m);
          });
        });
  const send = (m: unknown) => ws.send(JSON.stringify(m));
  send({ type: 'connection_init', payload: {} });
  assert.equal((await next()).type, 'connection_ack');
  return { ws, next, send };
}

describe('subscriptions over the GraphQL WebSocket', () => {
  test('DataAccess streams the instance payloads', async () => {
    const c = await wsClient();
    c.send({
      id: '1',
      type: 'subscribe',
      payload: { query: TWINS.DataAccess, variables: { input: { InstanceID: ids.pump1 } } },
    });
    const m = await c.next();
    assert.equal(m.type, 'next', JSON.stringify(m));
    assert.equal(m.id, '1');
    assert.equal(m.payload.data.DataAccess.InstanceID, ids.pump1);
    assert.equal(m.payload.data.DataAccess.Topic, 'plant.pump1');
    assert.equal(m.payload.data.DataAccess.Payload.data.Vendor, 'ACME');
    c.send({ id: '1', type: 'complete' });
    // the input is required
    c.send({ id: '2', type: 'subscribe', payload: { query: 'subscription { DataAccess { Payload } }' } });
    let e = await c.next();
    while (e.id !== '2') e = await c.next(); // payloads of '1' sent before its complete arrived
    assert.equal(e.type, 'error');
    assert.match(e.payload[0].message, /argument "input" of type "DataAccessRequest!" is required/);
    c.ws.close();
  });

  test('PlaygroundMessages evaluates a transformation on samples and on live messages without saving it', async () => {
    const before = (await twins('{ ListTransformations { Total } }')).ListTransformations.Total;
    const c = await wsClient();
    c.send({
      id: 's',
      type: 'subscribe',
      payload: {
        query: TWINS.PlaygroundMessages,
        variables: { input: { Expression: 'value * 2', Messages: [{ value: 1 }, { value: 'x' }] } },
      },
    });
    const one = await c.next();
    assert.deepEqual(one.payload.data.PlaygroundMessages, {
      Source: 'sample',
      Input: { value: 1 },
      Output: 2,
      Error: null,
    });
    const two = await c.next();
    assert.match(two.payload.data.PlaygroundMessages.Error, /T2001/);
    const done = await c.next();
    assert.equal(done.type, 'complete');
    assert.equal(done.id, 's');

    c.send({
      id: 'l',
      type: 'subscribe',
      payload: {
        query: TWINS.PlaygroundMessages,
        variables: { input: { Expression: '$round(value, 1)', Topic: 'devicehub.raw.gen.speed' } },
      },
    });
    const live = await c.next();
    assert.equal(live.type, 'next');
    assert.equal(live.payload.data.PlaygroundMessages.Source, 'devicehub.raw.gen.speed');
    assert.equal(typeof live.payload.data.PlaygroundMessages.Output, 'number');
    c.send({ id: 'l', type: 'complete' });

    c.send({
      id: 'bad',
      type: 'subscribe',
      payload: {
        query: TWINS.PlaygroundMessages,
        variables: { input: { Expression: 'value +', Messages: [{}] } },
      },
    });
    let bad = await c.next();
    while (bad.id !== 'bad') bad = await c.next();
    assert.match(JSON.stringify(bad.payload), /does not parse at position/);
    c.ws.close();
    assert.equal((await twins('{ ListTransformations { Total } }')).ListTransformations.Total, before);
  });
});
