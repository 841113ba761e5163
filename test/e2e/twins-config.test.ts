/**
 * The twins' section of configuration templates against the real edge over HTTPS: a pump model
 * with a parameter, a static attribute, a transformed dynamic attribute and an instance, exported
 * through a saved template's download, wiped with mode `use`, applied again: the same twins come
 * back and the instance publishes on its Topic again (read by a plain NATS client). An apply that
 * fails in another section (failFast) leaves the twins as they were, in the database and live.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type NatsConnection } from 'nats';
import { bootstrapAdmin, graphql, startTestEdge, type HttpReply, type TestEdge } from '../helpers/edge.js';
import { nextMessage } from '../edge/acquisition/support.js';
import { applyTemplate, currentSections, templateOf } from '../helpers/config.js';
import { TWINS, TWINS_PATH } from '../../src/client/index.js';

let t: TestEdge;
let auth: Record<string, string>;
let nc: NatsConnection;

const ok = async (r: Promise<HttpReply>, status = 200): Promise<any> => {
  const reply = await r;
  assert.equal(reply.status, status, reply.text);
  return reply.body;
};
async function gql(path: string, query: string, variables?: Record<string, unknown>): Promise<any> {
  const r = await graphql(t, path, auth.authorization!, query, variables);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
  return r.body.data;
}
const twins = (q: string, v?: Record<string, unknown>) => gql(TWINS_PATH, q, v);

const upload = (doc: unknown, body: Record<string, unknown> = {}) => applyTemplate(t, auth, doc, body);
const template = templateOf;
const currentTwins = async () => (await currentSections(t, auth)).twins;

/** The payload follows the hierarchy: { Nameplate: { Vendor }, Process: { Pressure } }. */
const pumpPayload = (p: any) => p?.instance === 'pump1' && typeof p.data?.Process?.Pressure?.bar === 'number';

/** Messages on `subject` during `ms`. */
async function messagesDuring(subject: string, ms: number): Promise<number> {
  let n = 0;
  const sub = nc.subscribe(subject, { callback: () => void n++ });
  await new Promise((r) => setTimeout(r, ms));
  sub.unsubscribe();
  return n;
}

before(async () => {
  t = await startTestEdge({ logLevel: 'error' });
  auth = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  nc = await connect({ servers: t.edge.datahub.gateway!.url });
  const dev = await gql(
    '/devicehub/v2',
    `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`,
    { in: { Name: 'gen', DriverID: 'Generator', Properties: [] } },
  );
  await gql(
    '/devicehub/v2',
    `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`,
    {
      in: [
        {
          DeviceID: dev.CreateDevice.ID,
          Name: 'S',
          TagName: 'pressure',
          ValueType: 'float64',
          IntervalMs: 100,
          Properties: [
            { Name: 'address', Value: '0' },
            { Name: 'amplitude', Value: '5' },
            { Name: 'periodMs', Value: '2000' },
          ],
        },
      ],
    },
  );
  const m = (await twins(TWINS.CreateModel, { input: { Name: 'Pump', Assets: 'pump', StaleAfterMs: 5000 } }))
    .CreateModel;
  const tr = (
    await twins(TWINS.CreateTransformation, {
      input: { Name: 'to-bar', Expression: '{ "bar": value, "device": $params.Device }' },
    })
  ).CreateTransformation;
  await twins(TWINS.CreateParameter, { input: { ModelID: m.ID, Key: 'Device', Value: 'gen' } });
  const vendor = await twins(TWINS.CreateStaticAttribute, {
    input: { ModelID: m.ID, Key: 'Vendor', Value: 'ACME' },
  });
  const pressure = await twins(TWINS.CreateDynamicAttribute, {
    input: {
      ModelID: m.ID,
      Name: 'Pressure',
      Topic: 'devicehub.raw.{{Device}}.pressure',
      TransformationID: tr.ID,
    },
  });
  await twins(TWINS.CreateInstance, { input: { ModelID: m.ID, Name: 'pump1', Topic: 'plant.pump1' } });
  await twins(TWINS.SaveAllHierarchy, {
    modelId: m.ID,
    input: [
      {
        Node: { Name: 'Nameplate', IsFolder: true },
        Childs: [{ Node: { Name: 'Vendor', AttributeID: vendor.CreateStaticAttribute.ID } }],
      },
      {
        Node: { Name: 'Process', IsFolder: true },
        Childs: [{ Node: { Name: 'Pressure', AttributeID: pressure.CreateDynamicAttribute.ID } }],
      },
    ],
  });
});
after(async () => {
  await nc?.close().catch(() => undefined);
  await t?.stop();
});

describe('twins in configuration templates', () => {
  let exported: any;

  test('exported, wiped with use, applied again: the same twins, publishing again', async () => {
    const first = await nextMessage(nc, 'plant.pump1', pumpPayload, 10_000);
    assert.equal(first.data.Nameplate.Vendor, 'ACME');
    assert.equal(first.data.Process.Pressure.device, 'gen');

    exported = await currentTwins();
    assert.deepEqual(
      exported.transformations.map((x: any) => x.Name),
      ['to-bar'],
    );
    const pump = exported.models.find((x: any) => x.Name === 'Pump');
    assert.deepEqual(pump.Parameters, [{ Key: 'Device', Value: 'gen' }]);
    assert.deepEqual(pump.StaticAttributes, [{ Key: 'Vendor', Value: 'ACME' }]);
    assert.equal(pump.DynamicAttributes[0].Transformation, 'to-bar');
    // The twin's own placeholder is escaped: it is no template parameter, and applies as it was.
    assert.equal(pump.DynamicAttributes[0].Topic, 'devicehub.raw.\\{{Device}}.pressure');
    assert.deepEqual(
      pump.Hierarchy.map((n: any) => [n.Name, n.Children.map((c: any) => [c.AttributeKind, c.Attribute])]),
      [
        ['Nameplate', [['static', 'Vendor']]],
        ['Process', [['dynamic', 'Pressure']]],
      ],
    );
    assert.deepEqual(
      pump.Instances.map((i: any) => [i.Name, i.Topic]),
      [['pump1', 'plant.pump1']],
    );

    const wiped = await ok(upload(template({ twins: { transformations: [], models: [] } }), { mode: 'use' }));
    assert.deepEqual(wiped.result.sections.twins.removed.sort(), ['models.Pump', 'transformations.to-bar']);
    assert.deepEqual(await currentTwins(), { transformations: [], models: [] });
    assert.equal((await twins(TWINS.ListModels, {})).ListModels.Total, 0, 'the live service follows');
    // Time is the test: an instance that publishes no more (with the quiet window below).
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await messagesDuring('plant.pump1', 1000), 0, 'the instance no longer publishes');

    const applied = await ok(upload(template({ twins: exported })));
    assert.deepEqual(applied.result.sections.twins.added.sort(), ['models.Pump', 'transformations.to-bar']);
    assert.deepEqual(await currentTwins(), exported);
    const models = (await twins(TWINS.ListModels, {})).ListModels;
    assert.deepEqual(
      models.Items.map((x: any) => x.Name),
      ['Pump'],
    );
    const again = await nextMessage(nc, 'plant.pump1', pumpPayload, 10_000);
    assert.equal(again.model, 'Pump');
    assert.equal(again.data.Nameplate.Vendor, 'ACME');
    assert.equal(again.data.Process.Pressure.device, 'gen');
  });

  test('an apply failing in another section (failFast) leaves the twins unchanged', async () => {
    const changed = {
      transformations: exported.transformations,
      models: [
        ...exported.models.map((m: any) => ({ ...m, Assets: 'changed' })),
        { Name: 'Valve', Assets: 'valve', Instances: [{ Name: 'v1', Topic: 'plant.v1' }] },
      ],
    };
    // twins first: its writes are made in the transaction, then the datahub section fails.
    const r = await upload(
      template({
        twins: changed,
        datahub: {
          accessKeys: [{ id: 'no-secret-key', name: 'orphan', publish: null, subscribe: null }],
        },
      }),
      { mode: 'use', failFast: true },
    );
    assert.equal(r.status, 409, r.text);
    assert.match(r.body.message, /nothing was applied/);
    assert.deepEqual(await currentTwins(), exported);
    const models = (await twins(TWINS.ListModels, {})).ListModels;
    assert.deepEqual(
      models.Items.map((x: any) => [x.Name, x.Assets]),
      [['Pump', 'pump']],
    );
    assert.equal(await messagesDuring('plant.v1', 500), 0);
    await nextMessage(nc, 'plant.pump1', pumpPayload, 10_000);
  });
});
