/**
 * `/devicehub/v2` end to end: devices and tags CRUD, the list operations with paging and
 * filtering, topics, tag status, GraphQL validation errors, roles, and the replay of the public
 * Grafana data source client (legacy Basic API token).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import {
  basic,
  bootstrapAdmin,
  clientToken,
  graphql,
  insecureAgent,
  startTestEdge,
  type TestEdge,
} from '../helpers/edge.js';
import { ERRORS } from '../../src/kernel/errors.js';

const PATH = '/devicehub/v2';
let t: TestEdge;
let auth: string;
let adminBearer: string;

async function gql(query: string, variables?: Record<string, unknown>, authorization = auth): Promise<any> {
  const r = await graphql(t, PATH, authorization, query, variables);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
async function ok(query: string, variables?: Record<string, unknown>): Promise<any> {
  const body = await gql(query, variables);
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}
async function errorOf(
  query: string,
  variables?: Record<string, unknown>,
): Promise<{ message: string; code: string }> {
  const body = await gql(query, variables);
  assert.ok(body.errors?.length, `expected an error, got ${JSON.stringify(body.data)}`);
  return { message: body.errors[0].message, code: body.errors[0].extensions?.code };
}

const DEVICE_FIELDS = `ID Name DriverID DriverName Description Properties { Key Value } MetaData DHParams { Name Value Description } WorkerParams { Name Value Description } AliasTopics Debug CreationTime`;
const REGISTER_FIELDS = `ID DeviceID Name TagName Description ValueType PublishCoV TagFormula IntervalMs Properties { Name Value } MetaData Topics { Format Topic Direction IntervalMs Description }`;
const CREATE_DEVICE = `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ${DEVICE_FIELDS} } }`;
const CREATE_REGISTER = `mutation($in: CreateRegisterRequest!) { CreateRegister(input: $in) { ${REGISTER_FIELDS} } }`;
const CREATE_REGISTERS = `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID TagName } }`;
const LIST_ALL = `query($in: ListRegistersFromAllDevicesRequest) { ListRegistersFromAllDevices(input: $in) { TotalCount Last Registers { ID TagName DeviceID } } }`;

before(async () => {
  t = await startTestEdge();
  adminBearer = await bootstrapAdmin(t);
  auth = `Bearer ${(await clientToken(t, adminBearer)).token}`;
});
after(() => t.stop());

describe('devices', () => {
  test('create, get, update, delete by IDs; driver by name or ID; defaults filled', async () => {
    const drivers = (
      await ok(`{ ListDrivers(input: { Filter: { Name: { Eq: "Modbus TCP" } } }) { Items { ID Name } } }`)
    ).ListDrivers.Items;
    assert.equal(drivers.length, 1);
    const created = (
      await ok(CREATE_DEVICE, {
        in: {
          Name: 'press-1',
          DriverID: drivers[0].ID,
          Description: 'hydraulic press',
          Properties: [
            { Key: 'host', Value: '10.0.0.5' },
            { Key: 'unitId', Value: '7' },
          ],
          MetaData: { line: 'A', cell: 3 },
          DHParams: [{ Name: 'maxTagsPerRead', Value: '50', Description: 'tags per block' }],
          WorkerParams: [{ Name: 'priority', Value: 'high' }],
          AliasTopics: true,
          Debug: false,
        },
      })
    ).CreateDevice;
    assert.equal(created.Name, 'press-1');
    assert.equal(created.DriverID, drivers[0].ID);
    assert.equal(created.DriverName, 'Modbus TCP');
    assert.deepEqual(created.MetaData, { line: 'A', cell: 3 });
    assert.deepEqual(created.DHParams, [
      { Name: 'maxTagsPerRead', Value: '50', Description: 'tags per block' },
    ]);
    assert.deepEqual(created.WorkerParams, [{ Name: 'priority', Value: 'high', Description: '' }]);
    assert.equal(created.AliasTopics, true);
    assert.ok(!Number.isNaN(Date.parse(created.CreationTime)));
    const props = Object.fromEntries(created.Properties.map((p: any) => [p.Key, p.Value]));
    assert.deepEqual(props, {
      host: '10.0.0.5',
      port: '502',
      unitId: '7',
      requestTimeoutMs: '1500',
      retryRequestCount: '0',
      maxRegistersPerRequest: '100',
    });

    const got = (await ok(`query($id: ID!) { GetDevice(ID: $id) { ${DEVICE_FIELDS} } }`, { id: created.ID }))
      .GetDevice;
    assert.deepEqual(got, created);

    const updated = (
      await ok(`mutation($in: UpdateDeviceRequest!) { UpdateDevice(input: $in) { ${DEVICE_FIELDS} } }`, {
        in: {
          ID: created.ID,
          Description: 'press, line A',
          Properties: [
            { Key: 'port', Value: '5020' },
            { Key: 'unitId', Value: null },
          ],
          Debug: true,
        },
      })
    ).UpdateDevice;
    const after = Object.fromEntries(updated.Properties.map((p: any) => [p.Key, p.Value]));
    assert.equal(after.port, '5020');
    assert.equal(after.unitId, '1', 'a null Value puts the default back');
    assert.equal(after.host, '10.0.0.5', 'properties not given are kept');
    assert.equal(updated.Description, 'press, line A');
    assert.equal(updated.Debug, true);
    assert.equal(updated.Name, 'press-1');

    const byName = (await ok(CREATE_DEVICE, { in: { Name: 'gen-by-name', DriverID: 'Generator' } }))
      .CreateDevice;
    assert.equal(byName.DriverName, 'Generator');

    const deleted = await ok(`mutation($ids: [ID!]!) { DeleteDevices(IDs: $ids) }`, {
      ids: [created.ID, byName.ID, 'no-such-id'],
    });
    assert.equal(deleted.DeleteDevices, 2);
    assert.equal(
      (await ok(`query($id: ID!) { GetDevice(ID: $id) { ID } }`, { id: created.ID })).GetDevice,
      null,
    );
  });

  test('ListDrivers: Limit, Offset, Filter, Sort; GetDriver by ID or name', async () => {
    const all = (await ok(`{ ListDrivers { Total Items { ID Name Protocol } } }`)).ListDrivers;
    assert.equal(all.Total, all.Items.length);
    assert.ok(all.Total >= 40);
    const names = all.Items.map((d: any) => d.Name);
    assert.deepEqual(
      names,
      [...names].sort((a: string, b: string) => a.localeCompare(b)),
      'sorted by Name',
    );
    const page = (
      await ok(
        `{ ListDrivers(input: { Limit: 3, Offset: 2, Sort: [{ Field: "Name", Order: DESC }] }) { Total Items { Name } } }`,
      )
    ).ListDrivers;
    assert.equal(page.Total, all.Total);
    assert.deepEqual(
      page.Items.map((d: any) => d.Name),
      [...names].reverse().slice(2, 5),
    );
    const modbus = (
      await ok(
        `{ ListDrivers(input: { Filter: { Protocol: { Eq: "Modbus" }, Name: { Contains: "tcp" } } }) { Items { Name } } }`,
      )
    ).ListDrivers;
    assert.deepEqual(
      modbus.Items.map((d: any) => d.Name),
      ['Modbus Multi-Station RTU to TCP Converter', 'Modbus RTU over TCP', 'Modbus TCP'],
    );
    const byId = (await ok(`query($id: ID!) { GetDriver(ID: $id) { Name } }`, { id: all.Items[0].ID }))
      .GetDriver;
    assert.equal(byId.Name, all.Items[0].Name);
    assert.equal((await ok(`{ GetDriver(ID: "no such driver") { Name } }`)).GetDriver, null);
    const lv = await errorOf(`{ GetDriver(ID: "Modbus RTU") { ListValues(Property: "colour") { Value } } }`);
    assert.match(
      lv.message,
      /driver "Modbus RTU" has no property "colour"; properties: serialPort, baudRate/,
    );
  });

  test('refused devices name the device, the property, the bad value and the allowed values', async () => {
    const cases: Array<[Record<string, unknown>, RegExp[]]> = [
      [
        {
          Name: 'd-bad-port',
          DriverID: 'Modbus TCP',
          Properties: [
            { Key: 'host', Value: 'h' },
            { Key: 'port', Value: '70000' },
          ],
        },
        [/device "d-bad-port"/, /property "port"/, /"70000"/, /integers from 1 to 65535/],
      ],
      [
        {
          Name: 'd-bad-key',
          DriverID: 'Modbus TCP',
          Properties: [
            { Key: 'host', Value: 'h' },
            { Key: 'colour', Value: 'red' },
          ],
        },
        [/device "d-bad-key"/, /has no property "colour"/, /properties: host, port/],
      ],
      [{ Name: 'd-no-host', DriverID: 'Modbus TCP' }, [/device "d-no-host"/, /property "host" is required/]],
      [
        {
          Name: 'd-bad-baud',
          DriverID: 'Modbus RTU',
          Properties: [
            { Key: 'serialPort', Value: '/dev/ttyS0' },
            { Key: 'baudRate', Value: '1234' },
          ],
        },
        [/device "d-bad-baud"/, /property "baudRate"/, /"1234"/, /9600 \(9600\)/],
      ],
      [
        { Name: 'd-bad-bool', DriverID: 'Generator', Properties: [{ Key: 'seed', Value: 'abc' }] },
        [/property "seed"/, /"abc"/, /integers from 0/],
      ],
      [{ Name: 'd-no-driver', DriverID: 'Nope' }, [/device "d-no-driver"/, /DriverID "Nope"/]],
      [
        { Name: 'has space', DriverID: 'Generator' },
        [/device "has space"/, /Name "has space" is not allowed/, /letters, digits/],
      ],
      [
        { Name: 'd-meta', DriverID: 'Generator', MetaData: [1, 2] },
        [/device "d-meta"/, /MetaData/, /a JSON object/],
      ],
    ];
    for (const [input, patterns] of cases) {
      const e = await errorOf(CREATE_DEVICE, { in: input });
      assert.equal(e.code, ERRORS.badRequest.code, e.message);
      for (const p of patterns) assert.match(e.message, p);
    }
    await ok(CREATE_DEVICE, { in: { Name: 'dup', DriverID: 'Generator' } });
    const dup = await errorOf(CREATE_DEVICE, { in: { Name: 'dup', DriverID: 'Generator' } });
    assert.equal(dup.code, ERRORS.conflict.code);
    assert.match(dup.message, /device "dup": a device with this Name already exists/);
  });

  test('ListDevices: Limit, Offset, Filter, Sort, IDs; Items and Total', async () => {
    const ids: string[] = [];
    for (const [i, drv] of ['Generator', 'Generator', 'Generator', 'MQTT', 'MQTT'].entries()) {
      const props = drv === 'MQTT' ? [{ Key: 'host', Value: 'broker' }] : [];
      const d = (
        await ok(CREATE_DEVICE, {
          in: { Name: `lst-${i}`, DriverID: drv, Properties: props, Debug: i % 2 === 0 },
        })
      ).CreateDevice;
      ids.push(d.ID);
    }
    const list = async (input: unknown) =>
      (
        await ok(
          `query($in: ListDevicesRequest) { ListDevices(input: $in) { Total Items { ID Name Debug DriverName } } }`,
          { in: input },
        )
      ).ListDevices;
    const page1 = await list({
      Filter: { Name: { StartsWith: 'lst-' } },
      Limit: 2,
      Offset: 0,
      Sort: [{ Field: 'Name', Order: 'DESC' }],
    });
    assert.equal(page1.Total, 5);
    assert.deepEqual(
      page1.Items.map((d: any) => d.Name),
      ['lst-4', 'lst-3'],
    );
    const page3 = await list({
      Filter: { Name: { StartsWith: 'lst-' } },
      Limit: 2,
      Offset: 4,
      Sort: [{ Field: 'Name', Order: 'DESC' }],
    });
    assert.deepEqual(
      page3.Items.map((d: any) => d.Name),
      ['lst-0'],
    );
    const debug = await list({ Filter: { Name: { Contains: 'LST' }, Debug: { Eq: true } } });
    assert.deepEqual(
      debug.Items.map((d: any) => d.Name),
      ['lst-0', 'lst-2', 'lst-4'],
    );
    const onlyIds = await list({ IDs: [ids[1], ids[3]] });
    assert.equal(onlyIds.Total, 2);
    assert.deepEqual(
      onlyIds.Items.map((d: any) => d.Name),
      ['lst-1', 'lst-3'],
    );
    const mqtt = (await ok(`{ ListDrivers(input: { Filter: { Name: { Eq: "MQTT" } } }) { Items { ID } } }`))
      .ListDrivers.Items[0].ID;
    assert.equal((await list({ Filter: { DriverID: { Eq: mqtt } } })).Total, 2);

    const badSort = await errorOf(`{ ListDevices(input: { Sort: [{ Field: "Colour" }] }) { Total } }`);
    assert.match(badSort.message, /Sort field "Colour" is not sortable; sortable fields: ID, Name/);
    const badLimit = await errorOf(`{ ListDevices(input: { Limit: 5000 }) { Total } }`);
    assert.match(badLimit.message, /Limit must be an integer from 1 to 1000, got 5000/);
  });
});

describe('registers', () => {
  let gen: any;
  let mb: any;
  before(async () => {
    gen = (await ok(CREATE_DEVICE, { in: { Name: 'gen-a', DriverID: 'Generator' } })).CreateDevice;
    mb = (
      await ok(CREATE_DEVICE, {
        in: {
          Name: 'mb-a',
          DriverID: 'Modbus TCP',
          AliasTopics: true,
          Properties: [{ Key: 'host', Value: '127.0.0.1' }],
        },
      })
    ).CreateDevice;
  });

  test('create one, get, update, delete; topics from device and tag names', async () => {
    const r = (
      await ok(CREATE_REGISTER, {
        in: {
          DeviceID: gen.ID,
          Name: 'S',
          TagName: 'sine',
          ValueType: 'float64',
          Description: 'test sine',
          IntervalMs: 500,
          PublishCoV: true,
          TagFormula: 'x * 2',
          Properties: [
            { Name: 'address', Value: '3' },
            { Name: 'amplitude', Value: '10' },
          ],
          MetaData: { unit: 'bar' },
        },
      })
    ).CreateRegister;
    assert.equal(r.DeviceID, gen.ID);
    assert.equal(r.Name, 'S');
    assert.equal(r.TagName, 'sine');
    assert.equal(r.IntervalMs, 500);
    assert.equal(r.PublishCoV, true);
    assert.equal(r.TagFormula, 'x * 2');
    assert.deepEqual(r.MetaData, { unit: 'bar' });
    assert.deepEqual(r.Properties, [
      { Name: 'address', Value: '3' },
      { Name: 'amplitude', Value: '10' },
      { Name: 'offset', Value: '0' },
      { Name: 'periodMs', Value: '10000' },
      { Name: 'DataType', Value: r.ValueType },
    ]);
    assert.deepEqual(
      r.Topics.map((x: any) => [x.Format, x.Topic, x.Direction]),
      [
        ['Raw', 'devicehub.raw.gen-a.sine', 'Output'],
        ['Value', 'devicehub.value.gen-a.sine', 'Output'],
        ['Command', 'devicehub.command.gen-a.sine', 'Input'],
        ['WriteResponse', 'devicehub.writeresponse.gen-a.sine', 'Output'],
      ],
    );
    assert.ok(r.Topics.every((x: any) => x.Description.length > 0));
    assert.equal(r.Topics[0].IntervalMs, 500);

    const got = (await ok(`query($id: ID!) { GetRegister(ID: $id) { ${REGISTER_FIELDS} } }`, { id: r.ID }))
      .GetRegister;
    assert.deepEqual(got, r);

    const upd = (
      await ok(
        `mutation($in: UpdateRegisterRequest!) { UpdateRegister(input: $in) { ${REGISTER_FIELDS} } }`,
        {
          in: { ID: r.ID, TagName: 'sine2', Properties: [{ Name: 'offset', Value: '5' }] },
        },
      )
    ).UpdateRegister;
    assert.equal(upd.TagName, 'sine2');
    assert.equal(upd.Properties.find((p: any) => p.Name === 'offset').Value, '5');
    assert.equal(upd.Properties.find((p: any) => p.Name === 'amplitude').Value, '10', 'kept');
    assert.equal(upd.Topics[0].Topic, 'devicehub.raw.gen-a.sine2');

    // AliasTopics adds the alias subject; renaming the device renames the topics.
    const alias = (
      await ok(CREATE_REGISTER, {
        in: {
          DeviceID: mb.ID,
          Name: 'HR',
          TagName: 'speed',
          ValueType: 'uint16',
          Properties: [{ Name: 'address', Value: '100' }],
        },
      })
    ).CreateRegister;
    assert.deepEqual(
      alias.Topics.filter((x: any) => x.Format === 'Raw').map((x: any) => x.Topic),
      ['devicehub.raw.mb-a.speed', 'devicehub.alias.mb-a.speed'],
    );
    await ok(`mutation($in: UpdateDeviceRequest!) { UpdateDevice(input: $in) { ID } }`, {
      in: { ID: mb.ID, Name: 'mb-b' },
    });
    const renamed = (
      await ok(`query($id: ID!) { GetRegister(ID: $id) { Topics { Topic } } }`, { id: alias.ID })
    ).GetRegister;
    assert.equal(renamed.Topics[0].Topic, 'devicehub.raw.mb-b.speed');
    await ok(`mutation($in: UpdateDeviceRequest!) { UpdateDevice(input: $in) { ID } }`, {
      in: { ID: mb.ID, Name: 'mb-a' },
    });

    assert.equal(
      (await ok(`mutation($ids: [ID!]!) { DeleteRegisters(IDs: $ids) }`, { ids: [r.ID, alias.ID] }))
        .DeleteRegisters,
      2,
    );
    assert.equal(
      (await ok(`query($id: ID!) { GetRegister(ID: $id) { ID } }`, { id: r.ID })).GetRegister,
      null,
    );
  });

  test('create many is all or nothing; refused tags name the tag, property, value and allowed values', async () => {
    const good = (i: number) => ({
      DeviceID: gen.ID,
      Name: 'R',
      TagName: `ramp-${i}`,
      ValueType: 'float64',
      Properties: [{ Name: 'address', Value: String(i) }],
    });
    const made = (await ok(CREATE_REGISTERS, { in: [good(1), good(2), good(3)] })).CreateRegisters;
    assert.deepEqual(
      made.map((r: any) => r.TagName),
      ['ramp-1', 'ramp-2', 'ramp-3'],
    );

    const before = (await ok(LIST_ALL, { in: { TagPattern: 'ramp-', Limit: 1000 } }))
      .ListRegistersFromAllDevices.TotalCount;
    const bad = await errorOf(CREATE_REGISTERS, {
      in: [good(4), { ...good(5), Properties: [{ Name: 'address', Value: '70000' }] }],
    });
    assert.match(
      bad.message,
      /tag "ramp-5" of device "gen-a": property "address" does not allow "70000"; allowed values: integers from 0 to 65535/,
    );
    const after = (await ok(LIST_ALL, { in: { TagPattern: 'ramp-', Limit: 1000 } }))
      .ListRegistersFromAllDevices.TotalCount;
    assert.equal(after, before, 'ramp-4 was not stored either');

    const dupInCall = await errorOf(CREATE_REGISTERS, { in: [good(6), good(6)] });
    assert.match(dupInCall.message, /tag "ramp-6" of device "gen-a": TagName is given twice/);
    const dupExisting = await errorOf(CREATE_REGISTERS, { in: [good(1)] });
    assert.equal(dupExisting.code, ERRORS.conflict.code);
    assert.match(
      dupExisting.message,
      /tag "ramp-1" of device "gen-a": the device already has a tag with this TagName/,
    );

    const cases: Array<[Record<string, unknown>, RegExp[]]> = [
      [
        { DeviceID: gen.ID, Name: 'X', TagName: 'x1', ValueType: 'float64' },
        [
          /tag "x1" of device "gen-a"/,
          /register "X" is not a register of driver "Generator"/,
          /registers: S, Ssub, M/,
        ],
      ],
      [
        {
          DeviceID: gen.ID,
          Name: 'S',
          TagName: 'x2',
          ValueType: 'double',
          Properties: [{ Name: 'address', Value: '1' }],
        },
        [/tag "x2"/, /value type "double" is not allowed on register "S"/, /float64/],
      ],
      [
        { DeviceID: gen.ID, Name: 'S', TagName: 'x3', ValueType: 'float64' },
        [/tag "x3"/, /property "address" is required/, /from 0 to 65535/],
      ],
      [
        {
          DeviceID: gen.ID,
          Name: 'S',
          TagName: 'x4',
          ValueType: 'float64',
          Properties: [
            { Name: 'address', Value: '1' },
            { Name: 'amplitude', Value: 'loud' },
          ],
        },
        [/tag "x4"/, /property "amplitude"/, /"loud"/, /any number/],
      ],
      [
        {
          DeviceID: gen.ID,
          Name: 'S',
          TagName: 'x5',
          ValueType: 'float64',
          IntervalMs: 1,
          Properties: [{ Name: 'address', Value: '1' }],
        },
        [/tag "x5"/, /IntervalMs 1 is not allowed/, /from 10 to/],
      ],
      [
        {
          DeviceID: gen.ID,
          Name: 'S',
          TagName: 'a.b',
          ValueType: 'float64',
          Properties: [{ Name: 'address', Value: '1' }],
        },
        [/TagName "a.b" is not allowed/],
      ],
      [
        {
          DeviceID: mb.ID,
          Name: 'HR',
          TagName: 'x6',
          ValueType: 'int16',
          Properties: [
            { Name: 'address', Value: '1' },
            { Name: 'byteOrder', Value: 'XYZW' },
          ],
        },
        [/tag "x6" of device "mb-a"/, /property "byteOrder"/, /"XYZW"/, /ABCD \(big endian\)/],
      ],
      [
        { DeviceID: 'nope', Name: 'S', TagName: 'x7', ValueType: 'float64' },
        [/tag "x7": device "nope" not found/],
      ],
    ];
    for (const [input, patterns] of cases) {
      const e = await errorOf(CREATE_REGISTER, { in: input });
      for (const p of patterns) assert.match(e.message, p);
    }
  });

  test('ListRegisters and ListRegistersFromAllDevices: Limit clamped, SkipCount, ContinueFrom, TagPattern', async () => {
    const dev = (await ok(CREATE_DEVICE, { in: { Name: 'pg', DriverID: 'Generator' } })).CreateDevice;
    const other = (await ok(CREATE_DEVICE, { in: { Name: 'pg-other', DriverID: 'Generator' } })).CreateDevice;
    const mk = (d: any, name: string, i: number) => ({
      DeviceID: d.ID,
      Name: 'N',
      TagName: name,
      ValueType: 'float64',
      Properties: [{ Name: 'address', Value: String(i) }],
    });
    const tags = Array.from({ length: 25 }, (_, i) =>
      mk(dev, `${i % 2 ? 'Pressure' : 'temp'}_${String(i).padStart(2, '0')}`, i),
    );
    await ok(CREATE_REGISTERS, { in: tags });
    await ok(CREATE_REGISTERS, { in: [mk(other, 'temp_other', 1), mk(other, 'flow', 2)] });

    const one = `query($in: ListRegistersRequest!) { ListRegisters(input: $in) { TotalCount Last Registers { ID TagName DeviceID } } }`;
    const p1 = (await ok(one, { in: { DeviceID: dev.ID, Limit: 10 } })).ListRegisters;
    assert.equal(p1.TotalCount, 25);
    assert.equal(p1.Registers.length, 10);
    assert.equal(p1.Last, p1.Registers[9].ID);
    assert.ok(p1.Registers.every((r: any) => r.DeviceID === dev.ID));
    const skip = (await ok(one, { in: { DeviceID: dev.ID, Limit: 10, SkipCount: 20 } })).ListRegisters;
    assert.equal(skip.Registers.length, 5);
    // Walk with ContinueFrom: every tag once, in creation order.
    const walked: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page: any = (
        await ok(one, { in: { DeviceID: dev.ID, Limit: 7, ...(cursor ? { ContinueFrom: cursor } : {}) } })
      ).ListRegisters;
      walked.push(...page.Registers.map((r: any) => r.TagName));
      if (page.Registers.length < 7) break;
      cursor = page.Last;
    }
    assert.deepEqual(
      walked,
      tags.map((x) => x.TagName),
    );
    // Limit is clamped to 1..1000.
    assert.equal((await ok(one, { in: { DeviceID: dev.ID, Limit: 0 } })).ListRegisters.Registers.length, 1);
    assert.equal((await ok(one, { in: { DeviceID: dev.ID, Limit: -5 } })).ListRegisters.Registers.length, 1);
    assert.equal(
      (await ok(one, { in: { DeviceID: dev.ID, Limit: 100000 } })).ListRegisters.Registers.length,
      25,
    );

    const all = async (input: unknown) => (await ok(LIST_ALL, { in: input })).ListRegistersFromAllDevices;
    const contains = await all({ TagPattern: 'TEMP', TagPatternSearchOption: 'CONTAINS', Limit: 1000 });
    assert.equal(contains.TotalCount, 14, '13 temp_ on pg and temp_other, case ignored');
    assert.deepEqual(new Set(contains.Registers.map((r: any) => r.DeviceID)), new Set([dev.ID, other.ID]));
    assert.equal(
      (await all({ TagPattern: 'Pressure_', TagPatternSearchOption: 'STARTS_WITH' })).TotalCount,
      12,
    );
    assert.equal((await all({ TagPattern: '_other', TagPatternSearchOption: 'ENDS_WITH' })).TotalCount, 1);
    assert.equal((await all({ TagPattern: 'flow', TagPatternSearchOption: 'EXACT' })).TotalCount, 1);
    assert.equal(
      (await all({ TagPattern: '%', TagPatternSearchOption: 'CONTAINS' })).TotalCount,
      0,
      'LIKE wildcards match themselves',
    );
    const clamped = await all({ Limit: 5000 });
    assert.ok(clamped.Registers.length <= 1000);
    const afterLast = await all({ TagPattern: 'temp', ContinueFrom: contains.Last });
    assert.deepEqual(afterLast.Registers, []);
    assert.equal(afterLast.Last, null);
    assert.equal(afterLast.TotalCount, 14, 'TotalCount counts every page');

    const noDevice = await errorOf(one, { in: { DeviceID: 'nope' } });
    assert.match(noDevice.message, /device "nope" not found/);
    const negSkip = await errorOf(LIST_ALL, { in: { SkipCount: -1 } });
    assert.match(negSkip.message, /SkipCount must be an integer of 0 or more, got -1/);
  });

  test('tag status: Unknown until the acquisition engine reports OK or Failed (its state, read through TagStatusSource)', async () => {
    const status = `query($ids: [ID!]!) { GetTagStatus(IDs: $ids) { ID DeviceID TagName State Reason UpdateTime } }`;
    const stateOf = async (id: string) => (await ok(status, { ids: [id] })).GetTagStatus[0];
    const until = async (id: string, want: string) => {
      const deadline = Date.now() + 5000;
      let s = await stateOf(id);
      while (s.State !== want && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        s = await stateOf(id);
      }
      assert.equal(s.State, want, JSON.stringify(s));
      return s;
    };
    // A driver this build does not poll: its tags stay Unknown, saying why (since they were made).
    const fins = (
      await ok(CREATE_DEVICE, {
        in: {
          Name: 'fins-status',
          DriverID: 'FINS Ethernet',
          Properties: [{ Key: 'host', Value: '127.0.0.1' }],
        },
      })
    ).CreateDevice;
    const idle = (
      await ok(CREATE_REGISTER, {
        in: {
          DeviceID: fins.ID,
          Name: 'DM',
          TagName: 'dm0',
          ValueType: 'uint16',
          Properties: [{ Name: 'address', Value: '0' }],
        },
      })
    ).CreateRegister;
    // Time is the test: a tag of a device that is not polled stays Unknown.
    await new Promise((r) => setTimeout(r, 100));
    const u = await stateOf(idle.ID);
    assert.deepEqual([u.State, u.TagName, u.DeviceID], ['Unknown', 'dm0', fins.ID]);
    assert.match(
      u.Reason,
      /^driver "FINS Ethernet" does not acquire in this build .*drivers that acquire: .*Generator/,
    );
    assert.ok(!Number.isNaN(Date.parse(u.UpdateTime)), `UpdateTime ${u.UpdateTime}`);

    // The Generator is polled: OK after its first read; a bad TagFormula makes it Failed, with why.
    const r = (
      await ok(CREATE_REGISTER, {
        in: {
          DeviceID: gen.ID,
          Name: 'K',
          TagName: 'const',
          ValueType: 'float64',
          Properties: [{ Name: 'address', Value: '0' }],
        },
      })
    ).CreateRegister;
    let s = await until(r.ID, 'OK');
    assert.deepEqual([s.TagName, s.DeviceID, s.Reason], ['const', gen.ID, '']);
    assert.ok(Date.parse(s.UpdateTime) <= Date.now());
    const UPDATE = `mutation($in: UpdateRegisterRequest!) { UpdateRegister(input: $in) { ID } }`;
    await ok(UPDATE, { in: { ID: r.ID, TagFormula: 'x +' } });
    s = await until(r.ID, 'Failed');
    assert.match(s.Reason, /^TagFormula "x \+": /);
    await ok(UPDATE, { in: { ID: r.ID, TagFormula: '' } });
    await until(r.ID, 'OK');
    assert.match((await errorOf(status, { ids: ['nope'] })).message, /tag "nope" not found/);
    await ok(`mutation($ids: [ID!]!) { DeleteDevices(IDs: $ids) }`, { ids: [fins.ID] });
  });
});

describe('GraphQL validation, roles and authentication', () => {
  test('GraphQL validation errors are HTTP 400 GraphQL errors, before execution', async () => {
    const cases: Array<[string, RegExp]> = [
      [`{ ListDevices { Items { Colour } } }`, /Cannot query field "Colour" on type "Device"/],
      [
        `mutation { CreateDevice(input: { Name: "x" }) { ID } }`,
        /Field "CreateDeviceRequest.DriverID" of required type "ID!" was not provided/,
      ],
      [
        `{ ListRegistersFromAllDevices(input: { TagPatternSearchOption: SOMETIMES }) { TotalCount } }`,
        /Value "SOMETIMES" does not exist in "TagPatternSearchOption" enum/,
      ],
      [
        `{ ListRegistersFromAllDevices(input: { Limit: "ten" }) { TotalCount } }`,
        /Int cannot represent non-integer value: "ten"/,
      ],
      [`{ ListRegisters { TotalCount } }`, /argument "input" of type "ListRegistersRequest!" is required/],
    ];
    for (const [query, pattern] of cases) {
      const r = await graphql(t, PATH, auth, query);
      assert.equal(r.status, 400, query);
      assert.match(r.body.errors[0].message, pattern);
    }
    const vars = await graphql(
      t,
      PATH,
      auth,
      `
        mutation ($in: CreateDeviceRequest!) {
          CreateDevice(input: $in) {
            ID
          }
        }
      `,
      { in: { Name: 'x', DriverID: 'Generator', Bogus: 1 } },
    );
    assert.equal(vars.status, 400);
    assert.match(vars.body.errors[0].message, /Field "Bogus" is not defined by type "CreateDeviceRequest"/);
  });

  test('a viewer can read but not change; no credentials is 401', async () => {
    const viewer = `Bearer ${(await clientToken(t, adminBearer, 'viewer')).token}`;
    const read = await graphql(
      t,
      PATH,
      viewer,
      `
        {
          ListDevices {
            Total
          }
        }
      `,
    );
    assert.equal(read.status, 200);
    const write = await graphql(
      t,
      PATH,
      viewer,
      `
        mutation {
          CreateDevice(input: { Name: "v", DriverID: "Generator" }) {
            ID
          }
        }
      `,
    );
    assert.equal(write.status, 403);
    assert.equal(write.body.errors[0].message, 'viewer role cannot run mutations');
    const anon = await t.call(PATH, { json: { query: '{ ListDevices { Total } }' } });
    assert.equal(anon.status, 401);
  });

  test('Grafana data source replay: Basic base64(<api token>:), ListRegistersFromAllDevices with TagPattern CONTAINS, Limit 15, Raw topics; 401 with a bad token', async () => {
    const created = await t.call('/auth/v3/api-tokens', {
      headers: { authorization: `Bearer ${adminBearer}` },
      json: { name: 'grafana', role: 'viewer' },
    });
    assert.equal(created.status, 201, created.text);
    const token = created.body.token as string;
    const dev = (
      await ok(CREATE_DEVICE, { in: { Name: 'boiler', DriverID: 'Generator', AliasTopics: true } })
    ).CreateDevice;
    await ok(CREATE_REGISTERS, {
      in: ['Temperature_In', 'Temperature_Out', 'Level'].map((n, i) => ({
        DeviceID: dev.ID,
        Name: 'S',
        TagName: n,
        ValueType: 'float64',
        Properties: [{ Name: 'address', Value: String(i) }],
      })),
    });
    // The request as the data source sends it: its own operation name, variables, a Basic header
    // made of the API token and an empty password, JSON body, no cookies.
    const body = JSON.stringify({
      operationName: 'ListRegistersFromAllDevices',
      variables: { input: { TagPattern: 'temperature', TagPatternSearchOption: 'CONTAINS', Limit: 15 } },
      query:
        'query ListRegistersFromAllDevices($input: ListRegistersFromAllDevicesRequest) {\n' +
        '  ListRegistersFromAllDevices(input: $input) {\n    Registers {\n      Topics {\n        Format\n        Topic\n      }\n    }\n  }\n}\n',
    });
    const send = async (authorization: string) => {
      const res = await request(`${t.url}${PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', authorization },
        body,
        dispatcher: insecureAgent,
      });
      return { status: res.statusCode, body: (await res.body.json()) as any };
    };
    const res = await send(`Basic ${Buffer.from(`${token}:`).toString('base64')}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.errors, undefined);
    const raw = res.body.data.ListRegistersFromAllDevices.Registers.flatMap((r: any) =>
      r.Topics.filter((x: any) => x.Format === 'Raw').map((x: any) => x.Topic),
    );
    assert.deepEqual(raw.sort(), [
      'devicehub.alias.boiler.Temperature_In',
      'devicehub.alias.boiler.Temperature_Out',
      'devicehub.raw.boiler.Temperature_In',
      'devicehub.raw.boiler.Temperature_Out',
    ]);
    // The token in the password half works too (wire notes); a bad token is 401.
    assert.equal((await send(basic('', token))).status, 200);
    assert.equal((await send(basic('not-a-token'))).status, 401);
    assert.equal(
      (await send(`Basic ${Buffer.from(`${token.slice(0, -2)}xx:`).toString('base64')}`)).status,
      401,
    );
  });
});
