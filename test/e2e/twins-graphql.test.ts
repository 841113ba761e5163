/**
 * `/digital-twins` end to end over HTTPS: every rule of contract part 2.5, the validation errors
 * of part 7 (required inputs fail before execution), the hierarchy round trip in the wire notes'
 * shape, asset placements, paging, the version query and the client documents of src/client/twins.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSchema, parse, validate } from 'graphql';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { TWINS, TWINS_PATH } from '../../src/client/index.js';
import { twinsSchema } from '../../src/edge/twins/index.js';
import { ERRORS } from '../../src/kernel/errors.js';

let t: TestEdge;
let auth: string;

async function raw(query: string, variables?: Record<string, unknown>) {
  return graphql(t, TWINS_PATH, auth, query, variables);
}
async function ok(query: string, variables?: Record<string, unknown>): Promise<any> {
  const r = await raw(query, variables);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
  return r.body.data;
}
async function fails(
  query: string,
  variables?: Record<string, unknown>,
): Promise<{ status: number; message: string; code?: string }> {
  const r = await raw(query, variables);
  assert.ok(r.body?.errors?.length, `expected an error, got ${r.text}`);
  return { status: r.status, message: r.body.errors[0].message, code: r.body.errors[0].extensions?.code };
}

before(async () => {
  t = await startTestEdge();
  const admin = await bootstrapAdmin(t);
  auth = `Bearer ${(await clientToken(t, admin)).token}`;
});
after(() => t.stop());

test('every client document validates against the schema with its <Operation>Request types', () => {
  const schema = buildSchema(twinsSchema());
  for (const [name, doc] of Object.entries(TWINS)) {
    const errors = validate(schema, parse(doc));
    assert.deepEqual(
      errors.map((e) => e.message),
      [],
      name,
    );
  }
  // The contract's names are the wire's.
  for (const type of [
    'CreateModelRequest',
    'CreateDynamicAttributeRequest',
    'ListStaticAttributeRequest',
    'SetInstanceAssetHierarchyRequest',
    'DataAccessRequest',
  ])
    assert.ok(schema.getType(type), type);
});

test('Version answers { Git Version }', async () => {
  const d = await ok(TWINS.Version);
  assert.equal(d.Version.Version, '4.4.0');
  assert.match(d.Version.Git, /^v\d+\.\d+/);
});

describe('required inputs fail GraphQL validation before execution (part 7, part 9)', () => {
  const cases: [string, string][] = [
    ['CreateModel without Name', 'mutation { CreateModel(input: { Assets: "pump" }) { ID } }'],
    ['CreateModel without Assets', 'mutation { CreateModel(input: { Name: "x" }) { ID } }'],
    ['UpdateModel without ID', 'mutation { UpdateModel(input: { Name: "x" }) { ID } }'],
    ['DeleteModel without ID', 'mutation { DeleteModel(input: {}) }'],
    ['UpdateInstance without ID', 'mutation { UpdateInstance(input: { Name: "x" }) { ID } }'],
    ['DeleteInstance without ID', 'mutation { DeleteInstance(input: {}) }'],
    ['UpdateStaticAttribute without ID', 'mutation { UpdateStaticAttribute(input: { Value: "1" }) { ID } }'],
    ['DeleteStaticAttribute without ID', 'mutation { DeleteStaticAttribute(input: {}) }'],
    ['UpdateDynamicAttribute without ID', 'mutation { UpdateDynamicAttribute(input: { Name: "x" }) { ID } }'],
    ['DeleteDynamicAttribute without ID', 'mutation { DeleteDynamicAttribute(input: {}) }'],
    ['UpdateTransformation without ID', 'mutation { UpdateTransformation(input: { Name: "x" }) { ID } }'],
    ['DeleteTransformation without ID', 'mutation { DeleteTransformation(input: {}) }'],
    ['UpdateHierarchyNode without ID', 'mutation { UpdateHierarchyNode(input: { Name: "x" }) { ID } }'],
    ['DeleteHierarchyNode without ID', 'mutation { DeleteHierarchyNode(input: {}) }'],
  ];
  for (const [name, doc] of cases) {
    test(name, async () => {
      const e = await fails(doc);
      assert.equal(e.status, 400, e.message);
      assert.match(e.message, /required|was not provided/);
    });
  }
  test('the same through variables, and an ID that is not a UUID', async () => {
    const e = await fails(TWINS.CreateModel, { input: { Name: 'x' } });
    assert.match(e.message, /Assets.*required|Field "Assets"/);
    const bad = await fails(TWINS.DeleteModel, { input: { ID: 'pump-1' } });
    assert.match(bad.message, /UUID cannot represent/);
    const noInput = await fails('subscription { DataAccess { Payload } }');
    assert.match(noInput.message, /argument "input".*required/);
  });
});

describe('models, instances and attributes', () => {
  let model: any;
  let inst: any;

  test('CreateModel with Name and Assets; counts start at zero; names are unique', async () => {
    model = (await ok(TWINS.CreateModel, { input: { Name: 'Pump', Assets: 'pump', PublishIntervalMs: 0 } }))
      .CreateModel;
    assert.equal(model.Name, 'Pump');
    assert.equal(model.Assets, 'pump');
    for (const c of ['InstanceCount', 'StaticAttributeCount', 'DynamicAttributeCount', 'ParameterCount'])
      assert.equal(model[c], 0);
    const dup = await fails(TWINS.CreateModel, { input: { Name: 'Pump', Assets: 'pump' } });
    assert.equal(dup.code, ERRORS.conflict.code);
    const interval = await fails(TWINS.CreateModel, {
      input: { Name: 'P2', Assets: 'pump', PublishIntervalMs: 5 },
    });
    assert.match(interval.message, /PublishIntervalMs must be 0 \(off\) or at least 100/);
  });

  test('instances: Source local or external, default Topic, wildcard topics refused, no server-side source filter', async () => {
    inst = (await ok(TWINS.CreateInstance, { input: { ModelID: model.ID, Name: 'pump 1' } })).CreateInstance;
    assert.equal(inst.Source, 'local');
    assert.equal(inst.Topic, 'twins.Pump.pump_1');
    const ext = (
      await ok(TWINS.CreateInstance, {
        input: { ModelID: model.ID, Name: 'p2', Source: 'external', Topic: 'plant.p2' },
      })
    ).CreateInstance;
    assert.equal(ext.Source, 'external');
    for (const topic of ['plant.*', 'plant.>', 'plant..x', 'has space']) {
      const e = await fails(TWINS.CreateInstance, { input: { ModelID: model.ID, Name: 'w', Topic: topic } });
      assert.match(e.message, /must be a single DataHub subject/, topic);
    }
    const reserved = await fails(TWINS.UpdateInstance, { input: { ID: ext.ID, Topic: 'devicehub.raw.x' } });
    assert.match(reserved.message, /reserved/);
    const badSource = await fails(TWINS.CreateInstance, {
      input: { ModelID: model.ID, Name: 'z', Source: 'remote' },
    });
    assert.equal(badSource.status, 400);
    const filter = await fails('{ ListInstances(input: { Filter: { Source: { Eq: "local" } } }) { Total } }');
    assert.match(filter.message, /Source/);
    const list = (await ok(TWINS.ListInstances, { input: { ModelID: model.ID } })).ListInstances;
    assert.equal(list.Total, 2);
    const m = (await ok(TWINS.GetModel, { ID: model.ID })).GetModel;
    assert.equal(m.InstanceCount, 2);
    assert.deepEqual(m.Instances.map((i: any) => i.Name).sort(), ['p2', 'pump 1']);
    await ok(TWINS.DeleteInstance, { input: { ID: ext.ID } });
  });

  test('static attributes: model-level and instance-level, ListStaticAttributes with paging', async () => {
    const a = (
      await ok(TWINS.CreateStaticAttribute, { input: { ModelID: model.ID, Key: 'Vendor', Value: 'ACME' } })
    ).CreateStaticAttribute;
    assert.equal(a.InstanceID, null);
    await ok(TWINS.CreateStaticAttribute, { input: { ModelID: model.ID, Key: 'RatedKW', Value: '7.5' } });
    const own = (
      await ok(TWINS.CreateStaticAttribute, {
        input: { ModelID: model.ID, InstanceID: inst.ID, Key: 'Serial', Value: 'SN-1' },
      })
    ).CreateStaticAttribute;
    assert.equal(own.InstanceID, inst.ID);
    const dup = await fails(TWINS.CreateStaticAttribute, {
      input: { ModelID: model.ID, Key: 'Vendor', Value: 'x' },
    });
    assert.equal(dup.code, ERRORS.conflict.code);
    const page = (
      await ok(TWINS.ListStaticAttributes, {
        input: { ModelID: model.ID, InstanceID: inst.ID, Limit: 2, Offset: 0 },
      })
    ).ListStaticAttributes;
    assert.equal(page.Total, 3);
    assert.equal(page.Items.length, 2);
    for (const k of ['ID', 'ModelID', 'InstanceID', 'Key', 'Value', 'CreatedAt', 'UpdatedAt'])
      assert.ok(k in page.Items[0], k);
    const next = (
      await ok(TWINS.ListStaticAttributes, {
        input: { ModelID: model.ID, InstanceID: inst.ID, Limit: 2, Offset: 2 },
      })
    ).ListStaticAttributes;
    assert.equal(next.Items.length, 1);
    const modelOnly = (await ok(TWINS.ListStaticAttributes, { input: { ModelID: model.ID } }))
      .ListStaticAttributes;
    assert.equal(modelOnly.Total, 2);
    const upd = (await ok(TWINS.UpdateStaticAttribute, { input: { ID: a.ID, Value: 'ACME Corp' } }))
      .UpdateStaticAttribute;
    assert.equal(upd.Value, 'ACME Corp');
    const proto = await fails(TWINS.CreateStaticAttribute, {
      input: { ModelID: model.ID, Key: '__proto__', Value: 'x' },
    });
    assert.match(proto.message, /must not be __proto__/);
    const badLimit = await fails(TWINS.ListStaticAttributes, { input: { Limit: 5000 } });
    assert.match(badLimit.message, /Limit must be from 1 to 1000/);
    const i = (await ok(TWINS.ListInstances, { input: { ModelID: model.ID } })).ListInstances.Items[0];
    assert.equal(i.StaticAttributeCount, 3);
    assert.equal((await ok(TWINS.GetModel, { ID: model.ID })).GetModel.StaticAttributeCount, 2);
  });

  test('dynamic attributes: types, NestedModelID/NestedInstanceID set one, topics, transformations, paging', async () => {
    const tr = (
      await ok(TWINS.CreateTransformation, { input: { Name: 'bar', Expression: 'value / 100000' } })
    ).CreateTransformation;
    const d = (
      await ok(TWINS.CreateDynamicAttribute, {
        input: {
          ModelID: model.ID,
          Name: 'Pressure',
          Topic: 'devicehub.raw.{{Device}}.pressure',
          TransformationID: tr.ID,
        },
      })
    ).CreateDynamicAttribute;
    assert.equal(d.Type, 'topic');
    assert.equal(d.AttributeType, 'Regular');
    assert.equal(d.Transformation.Expression, 'value / 100000');
    const uns = (
      await ok(TWINS.CreateDynamicAttribute, {
        input: { ModelID: model.ID, Name: 'Setpoint', AttributeType: 'UNS', Topic: 'plant/line1/setpoint' },
      })
    ).CreateDynamicAttribute;
    assert.equal(uns.AttributeType, 'UNS');
    const place = (
      await ok(TWINS.CreateDynamicAttribute, {
        input: { ModelID: model.ID, Name: 'Location', AttributeType: 'AssetHierarchy' },
      })
    ).CreateDynamicAttribute;
    assert.equal(place.AttributeType, 'AssetHierarchy');
    const other = (await ok(TWINS.CreateModel, { input: { Name: 'Motor', Assets: 'motor' } })).CreateModel;
    const motor = (await ok(TWINS.CreateInstance, { input: { ModelID: other.ID, Name: 'm1' } }))
      .CreateInstance;
    const both = await fails(TWINS.CreateDynamicAttribute, {
      input: {
        ModelID: model.ID,
        Name: 'Motor',
        Type: 'nestedModel',
        NestedModelID: other.ID,
        NestedInstanceID: motor.ID,
      },
    });
    assert.match(both.message, /set one, leave the other null/);
    const none = await fails(TWINS.CreateDynamicAttribute, {
      input: { ModelID: model.ID, Name: 'Motor', Type: 'nestedModel' },
    });
    assert.match(none.message, /NestedModelID or NestedInstanceID/);
    const nested = (
      await ok(TWINS.CreateDynamicAttribute, {
        input: { ModelID: model.ID, Name: 'Motor', Type: 'nestedModel', NestedInstanceID: motor.ID },
      })
    ).CreateDynamicAttribute;
    assert.equal(nested.NestedModelID, null);
    assert.equal(nested.NestedInstanceID, motor.ID);
    // Switching to the model clears the instance.
    const switched = (
      await ok(TWINS.UpdateDynamicAttribute, { input: { ID: nested.ID, NestedModelID: other.ID } })
    ).UpdateDynamicAttribute;
    assert.equal(switched.NestedModelID, other.ID);
    assert.equal(switched.NestedInstanceID, null);
    // A nesting cycle is not rejected on save (Motor nests Pump, Pump nests Motor).
    await ok(TWINS.CreateDynamicAttribute, {
      input: { ModelID: other.ID, Name: 'Pump', Type: 'nestedModel', NestedModelID: model.ID },
    });
    for (const topic of ['devicehub.raw.>', 'devicehub.*.x']) {
      const e = await fails(TWINS.CreateDynamicAttribute, {
        input: { ModelID: model.ID, Name: 'W', Topic: topic },
      });
      assert.match(e.message, /single DataHub subject/);
    }
    const mqttWild = await fails(TWINS.CreateDynamicAttribute, {
      input: { ModelID: model.ID, Name: 'W', AttributeType: 'UNS', Topic: 'plant/+/x' },
    });
    assert.match(mqttWild.message, /single MQTT topic/);
    const noTopic = await fails(TWINS.CreateDynamicAttribute, { input: { ModelID: model.ID, Name: 'W' } });
    assert.match(noTopic.message, /needs a Topic/);
    const page = (
      await ok(TWINS.ListDynamicAttributes, { input: { ModelID: model.ID, Limit: 2, Offset: 2 } })
    ).ListDynamicAttributes;
    assert.equal(page.Total, 4);
    assert.equal(page.Items.length, 2);
    const inUse = await fails(TWINS.DeleteTransformation, { input: { ID: tr.ID } });
    assert.equal(inUse.code, ERRORS.conflict.code);
    assert.equal((await ok(TWINS.GetModel, { ID: model.ID })).GetModel.DynamicAttributeCount, 4);
  });

  test('a transformation that does not parse is refused with the position of the error', async () => {
    const e = await fails(TWINS.CreateTransformation, {
      input: { Name: 'bad', Expression: 'value * (2 + ' },
    });
    assert.equal(e.code, ERRORS.badRequest.code);
    assert.match(e.message, /does not parse at position \d+/);
  });

  test('parameters, and the instance counts', async () => {
    await ok(TWINS.CreateParameter, { input: { ModelID: model.ID, Key: 'Device', Value: 'gen' } });
    await ok(TWINS.CreateParameter, {
      input: { ModelID: model.ID, InstanceID: inst.ID, Key: 'Device', Value: 'gen1' },
    });
    const list = (await ok(TWINS.ListParameters, { input: { InstanceID: inst.ID } })).ListParameters;
    assert.equal(list.Total, 2);
    const i = (await ok(TWINS.ListInstances, { input: { ModelID: model.ID } })).ListInstances.Items[0];
    assert.equal(i.ParameterCount, 1, 'the instance value replaces the model value of the same key');
    assert.equal(i.DynamicAttributeCount, 4);
    assert.equal((await ok(TWINS.GetModel, { ID: model.ID })).GetModel.ParameterCount, 1);
  });

  test('SaveAllHierarchy round trip as { Name Node Attr Childs }; node update and delete', async () => {
    const statics = (await ok(TWINS.ListStaticAttributes, { input: { ModelID: model.ID } }))
      .ListStaticAttributes.Items;
    const dyn = (await ok(TWINS.ListDynamicAttributes, { input: { ModelID: model.ID } }))
      .ListDynamicAttributes.Items;
    const vendor = statics.find((s: any) => s.Key === 'Vendor');
    const pressure = dyn.find((d: any) => d.Name === 'Pressure');
    const input = [
      {
        Node: { Position: 0, Name: 'Nameplate', IsFolder: true, NodeType: 'folder' },
        Childs: [
          {
            Node: {
              Position: 0,
              Name: 'Vendor',
              IsFolder: false,
              AttributeID: vendor.ID,
              AttributeType: 'static',
              NodeType: 'attribute',
            },
          },
        ],
      },
      {
        Node: { Position: 1, Name: 'Process', IsFolder: true },
        Childs: [
          { Node: { Name: 'PressureBar', AttributeID: pressure.ID, AttributeType: 'dynamic' }, Childs: [] },
        ],
      },
    ];
    const saved = (await ok(TWINS.SaveAllHierarchy, { modelId: model.ID, input })).SaveAllHierarchy;
    const read = (await ok(TWINS.GetHierarchy, { modelId: model.ID })).GetHierarchy;
    assert.deepEqual(read, saved);
    assert.deepEqual(
      read.map((n: any) => [
        n.Name,
        n.Node.IsFolder,
        n.Attr,
        n.Childs.map((c: any) => [c.Name, c.Node.AttributeType, c.Attr.Kind]),
      ]),
      [
        ['Nameplate', true, null, [['Vendor', 'static', 'static']]],
        ['Process', true, null, [['PressureBar', 'dynamic', 'dynamic']]],
      ],
    );
    assert.equal(read[0].Childs[0].Attr.Value, 'ACME Corp');
    assert.equal(read[1].Childs[0].Node.AttributeID, pressure.ID);
    const wrongKind = await fails(TWINS.SaveAllHierarchy, {
      modelId: model.ID,
      input: [{ Node: { Name: 'X', AttributeID: vendor.ID, AttributeType: 'dynamic' } }],
    });
    assert.match(wrongKind.message, /is a static attribute/);
    const renamed = (await ok(TWINS.UpdateHierarchyNode, { input: { ID: read[1].Node.ID, Name: 'Live' } }))
      .UpdateHierarchyNode;
    assert.equal(renamed.Name, 'Live');
    await ok(TWINS.DeleteHierarchyNode, { input: { ID: read[0].Node.ID } });
    const after = (await ok(TWINS.GetHierarchy, { modelId: model.ID })).GetHierarchy;
    assert.deepEqual(
      after.map((n: any) => n.Name),
      ['Live'],
    );
  });

  test('SetInstanceAssetHierarchy: Items, placements with optional metadata', async () => {
    const placed = (
      await ok(TWINS.SetInstanceAssetHierarchy, {
        input: {
          Items: [
            { InstanceID: inst.ID, Path: 'site-1/line-2/pumps', Metadata: { bay: 4 } },
            { InstanceID: inst.ID, Path: '/spares/' },
          ],
        },
      })
    ).SetInstanceAssetHierarchy;
    assert.deepEqual(placed, [
      { InstanceID: inst.ID, Path: 'site-1/line-2/pumps', Metadata: { bay: 4 } },
      { InstanceID: inst.ID, Path: 'spares', Metadata: null },
    ]);
    const bad = await fails(TWINS.SetInstanceAssetHierarchy, {
      input: { Items: [{ InstanceID: inst.ID, Path: 'a//b' }] },
    });
    assert.match(bad.message, /non-empty segments/);
    const missing = await fails('mutation { SetInstanceAssetHierarchy(input: {}) { Path } }');
    assert.equal(missing.status, 400);
  });

  test('a viewer cannot mutate; DeleteModel removes the instances and attributes', async () => {
    const other = (await ok(TWINS.ListModels, { input: { Filter: { Name: { Eq: 'Motor' } } } })).ListModels
      .Items[0];
    assert.equal(other.InstanceCount, 1);
    assert.equal(await ok(TWINS.DeleteModel, { input: { ID: other.ID } }).then((d) => d.DeleteModel), true);
    const gone = (await ok(TWINS.ListModels, { input: { Filter: { Name: { Eq: 'Motor' } } } })).ListModels;
    assert.equal(gone.Total, 0);
    const nf = await fails(TWINS.DeleteModel, { input: { ID: other.ID } });
    assert.equal(nf.code, ERRORS.notFound.code);
  });
});
