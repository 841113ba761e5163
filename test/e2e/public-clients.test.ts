/**
 * The documents the product family's public clients send to `/devicehub/v2`, kept verbatim from
 * the wire notes ("GraphQL type names are part of the wire"), run unchanged against a real edge
 * with devices and registers created: a client's variables name the input types, so a schema that
 * names them otherwise fails with "Unknown type" before anything runs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { EdgeClient } from '../../src/client/index.js';
import { bootstrapAdmin, clientToken, startTestEdge, type TestEdge } from '../helpers/edge.js';

const PATH = '/devicehub/v2';

// --- verbatim from the wire notes ------------------------------------------------------------
const COUNT_REGISTERS = `query CountRegisters($input: ListRegistersRequest!) { ListRegisters(input: $input) { TotalCount } }`;
const COUNT_ALL_REGISTERS = `query CountAllRegisters($input: ListRegistersFromAllDevicesRequest!) { ListRegistersFromAllDevices(input: $input) { TotalCount } }`;
// The notes give the selection of ListAllRegisters; the operation around it is the clients'.
const LIST_ALL_REGISTERS = `query ListAllRegisters($input: ListRegistersFromAllDevicesRequest!) { ListRegistersFromAllDevices(input: $input) { TotalCount Registers { ID DeviceID Name TagName Description ValueType Properties { Name Value } } } }`;
const LIST_REGISTERS = `query ListRegisters($input: ListRegistersRequest!) { ListRegisters(input: $input) { TotalCount Registers { ID DeviceID Name TagName Description ValueType Properties { Name Value } } } }`;
// Device fields seen in clients (wire notes, "DeviceHub GraphQL").
const LIST_DEVICES = `query ListDevices($input: ListDevicesRequest) { ListDevices(input: $input) { Total Items { ID Name DriverID Description Properties{Key Value} MetaData DHParams{Name Value Description} WorkerParams{Name Value Description} AliasTopics Debug CreationTime } } }`;
const LIST_DRIVERS = `query ListDrivers($input: ListDriversRequest) { ListDrivers(input: $input) { Total Items { ID Name } } }`;

interface Reg {
  ID: string;
  DeviceID: string;
  Name: string;
  TagName: string;
  ValueType: string;
  Properties: { Name: string; Value: string }[];
}

/** How the clients read a register's address and data type out of `Properties`. */
const address = (r: Reg) => r.Properties.find((p) => p.Name === 'address' || p.Name === 'Address')?.Value;
const dataType = (r: Reg) => r.Properties.find((p) => p.Name === 'DataType')?.Value;

let t: TestEdge;
let edge: EdgeClient;
const devices: Record<string, { id: string; tags: number }> = {
  'press-1': { id: '', tags: 25 },
  'press-2': { id: '', tags: 7 },
  'oven-1': { id: '', tags: 0 },
};
const TOTAL = 32;

before(async () => {
  t = await startTestEdge({ logLevel: 'error' });
  const admin = await bootstrapAdmin(t);
  const { clientId, secret } = await clientToken(t, admin);
  edge = new EdgeClient({ url: t.url, credentials: { clientId, clientSecret: secret }, insecure: true });
  // As the clients create test devices: driver Generator, tags on register S, float64.
  for (const [name, d] of Object.entries(devices)) {
    d.id = (
      await edge.graphql(PATH, `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`, {
        in: { Name: name, DriverID: 'Generator' },
      })
    ).CreateDevice.ID;
    if (d.tags === 0) continue;
    await edge.graphql(
      PATH,
      `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`,
      {
        in: Array.from({ length: d.tags }, (_, i) => ({
          DeviceID: d.id,
          Name: 'S',
          TagName: `${name}_t${String(i).padStart(2, '0')}`,
          ValueType: 'float64',
          Properties: [{ Name: 'address', Value: String(100 + i) }],
        })),
      },
    );
  }
});
after(async () => {
  edge?.close();
  await t?.stop();
});

describe('public clients: the wire notes documents, verbatim', () => {
  test('CountRegisters with { input: { DeviceID } } counts each device', async () => {
    for (const d of Object.values(devices)) {
      const data = await edge.graphql(PATH, COUNT_REGISTERS, { input: { DeviceID: d.id } });
      assert.deepEqual(data, { ListRegisters: { TotalCount: d.tags } });
    }
  });

  test('CountAllRegisters with { input: {} } counts every register', async () => {
    const data = await edge.graphql(PATH, COUNT_ALL_REGISTERS, { input: {} });
    assert.deepEqual(data, { ListRegistersFromAllDevices: { TotalCount: TOTAL } });
  });

  test('ListRegisters pages with { DeviceID, Limit, SkipCount }, SkipCount sent only above 0', async () => {
    const d = devices['press-1']!;
    const seen: Reg[] = [];
    const limit = 10;
    for (let offset = 0; ; offset += limit) {
      const input: Record<string, unknown> = { DeviceID: d.id, Limit: limit };
      if (offset > 0) input.SkipCount = offset;
      const page = (await edge.graphql(PATH, LIST_REGISTERS, { input })).ListRegisters;
      assert.equal(page.TotalCount, d.tags);
      seen.push(...page.Registers);
      if (page.Registers.length < limit) break;
    }
    assert.equal(seen.length, d.tags);
    assert.equal(new Set(seen.map((r) => r.ID)).size, d.tags, 'pages neither overlap nor skip');
    assert.ok(seen.every((r) => r.DeviceID === d.id && r.Name === 'S' && r.ValueType === 'float64'));
    assert.deepEqual(
      seen.map(address).sort(),
      Array.from({ length: d.tags }, (_, i) => String(100 + i)).sort(),
    );
  });

  test('ListAllRegisters pages with { Limit, SkipCount }; address looked up in Properties', async () => {
    const seen: Reg[] = [];
    const limit = 10;
    for (let offset = 0; ; offset += limit) {
      const input: Record<string, unknown> = { Limit: limit };
      if (offset > 0) input.SkipCount = offset;
      const page = (await edge.graphql(PATH, LIST_ALL_REGISTERS, { input })).ListRegistersFromAllDevices;
      assert.equal(page.TotalCount, TOTAL);
      seen.push(...page.Registers);
      if (page.Registers.length < limit) break;
    }
    assert.equal(new Set(seen.map((r) => r.ID)).size, TOTAL);
    const byTag = new Map(seen.map((r) => [r.TagName, r]));
    assert.equal(address(byTag.get('press-1_t00')!), '100');
    assert.equal(address(byTag.get('press-1_t24')!), '124');
    assert.equal(address(byTag.get('press-2_t06')!), '106');
    assert.equal(byTag.get('press-2_t06')!.DeviceID, devices['press-2']!.id);
  });

  test('the data type looked up in Properties by DataType; the properties read can be sent back', async () => {
    const page = (await edge.graphql(PATH, LIST_ALL_REGISTERS, { input: { Limit: 1 } }))
      .ListRegistersFromAllDevices;
    const reg = page.Registers[0]!;
    assert.equal(dataType(reg), 'float64');
    assert.equal(dataType(reg), reg.ValueType);
    // A client that sends back the properties it read (DataType included) changes nothing else.
    const update = `mutation($input: UpdateRegisterRequest!) { UpdateRegister(input: $input) { ID Properties { Name Value } } }`;
    const back = reg.Properties.map((p: { Name: string; Value: string }) => ({
      Name: p.Name,
      Value: p.Value,
    }));
    const updated = (await edge.graphql(PATH, update, { input: { ID: reg.ID, Properties: back } }))
      .UpdateRegister;
    assert.deepEqual(updated.Properties, reg.Properties);
    // A DataType that is not the ValueType is refused, and says where the type lives.
    const refused = await edge.graphqlRaw(PATH, update, {
      input: { ID: reg.ID, Properties: [{ Name: 'DataType', Value: 'int16' }] },
    });
    assert.match(refused.text, /DataType \\"int16\\" differs from ValueType \\"float64\\"/);
  });

  test('ListDevices with ListDevicesRequest answers the device fields clients read', async () => {
    const all = (await edge.graphql(PATH, LIST_DEVICES, { input: { Limit: 2 } })).ListDevices;
    assert.equal(all.Total, 3);
    assert.equal(all.Items.length, 2);
    const one = (await edge.graphql(PATH, LIST_DEVICES, { input: { Filter: { Name: { Eq: 'press-2' } } } }))
      .ListDevices;
    assert.equal(one.Total, 1);
    assert.equal(one.Items[0].ID, devices['press-2']!.id);
    assert.equal(one.Items[0].AliasTopics, false);
    assert.match(one.Items[0].CreationTime, /^\d{4}-\d\d-\d\dT/);
  });

  test('ListDrivers with ListDriversRequest finds the Generator', async () => {
    const data = await edge.graphql(PATH, LIST_DRIVERS, { input: { Filter: { Name: { Eq: 'Generator' } } } });
    assert.equal(data.ListDrivers.Total, 1);
    assert.equal(data.ListDrivers.Items[0].Name, 'Generator');
  });

  test('every input object of an operation is named <...>Request (the rule of docs/api-conventions.md)', async () => {
    const data = await edge.graphql(
      PATH,
      `{ __schema { queryType { fields { name args { name type { ...T } } } }
         mutationType { fields { name args { name type { ...T } } } } } }
       fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`,
    );
    type T = { kind: string; name: string | null; ofType: T | null };
    const named = (x: T): T => (x.ofType ? named(x.ofType) : x);
    const offenders: string[] = [];
    for (const root of [data.__schema.queryType, data.__schema.mutationType]) {
      for (const f of root.fields as { name: string; args: { name: string; type: T }[] }[]) {
        for (const a of f.args) {
          const n = named(a.type);
          if (n.kind === 'INPUT_OBJECT' && !n.name!.endsWith('Request'))
            offenders.push(`${f.name}(${a.name}: ${n.name})`);
        }
      }
    }
    assert.deepEqual(offenders, []);
    // The names clients send, operation by operation.
    const argType = (op: string) =>
      named(
        (data.__schema.queryType.fields as { name: string; args: { type: T }[] }[]).find(
          (f) => f.name === op,
        )!.args[0]!.type,
      ).name;
    assert.equal(argType('ListRegisters'), 'ListRegistersRequest');
    assert.equal(argType('ListRegistersFromAllDevices'), 'ListRegistersFromAllDevicesRequest');
    assert.equal(argType('ListDevices'), 'ListDevicesRequest');
    assert.equal(argType('ListDrivers'), 'ListDriversRequest');
  });

  test('an old name is refused as the clients would see it: Unknown type, HTTP 400', async () => {
    const res = await edge.graphqlRaw(
      PATH,
      `query($input: ListRegistersFromAllDevicesInput) { ListRegistersFromAllDevices(input: $input) { TotalCount } }`,
    );
    assert.equal(res.status, 400);
    assert.match(res.body.errors[0].message, /Unknown type "ListRegistersFromAllDevicesInput"/);
  });
});
