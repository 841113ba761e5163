/**
 * Every 4.4.x rule of contract part 2.4, end to end through `/devicehub/v2`: one table-driven
 * test per rule, reading the catalogue as clients do (`GetDriver`, `ListValues`) and showing that
 * devices and tags are accepted or refused accordingly, with messages that name the device or tag,
 * the property, the bad value and the allowed values.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { bootstrapAdmin, clientToken, graphql, startTestEdge, type TestEdge } from '../helpers/edge.js';

const PATH = '/devicehub/v2';
let t: TestEdge;
let auth: string;
let seq = 0;
/**
 * The devices made here are polled by the acquisition engine: they point at peers of this test
 * only, never at the host's own ports (127.0.0.1:502) or serial lines (/dev/ttyS0). A TCP peer
 * that closes every connection, and a serial path in the edge's data directory that does not exist.
 */
let peer: Server;
let peerPort = 0;
let peerConnections = 0;
const noSuchTty = () => join(t.dataDir, 'no-such-tty');

async function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  const r = await graphql(t, PATH, auth, query, variables);
  assert.equal(r.status, 200, r.text);
  return r.body;
}
async function ok(query: string, variables?: Record<string, unknown>): Promise<any> {
  const body = await gql(query, variables);
  assert.equal(body.errors, undefined, JSON.stringify(body.errors));
  return body.data;
}
async function refused(
  query: string,
  variables: Record<string, unknown>,
  ...patterns: RegExp[]
): Promise<string> {
  const body = await gql(query, variables);
  assert.ok(body.errors?.length, `expected an error, got ${JSON.stringify(body.data)}`);
  const message = body.errors[0].message as string;
  for (const p of patterns) assert.match(message, p);
  return message;
}

const DRIVER = `query($id: ID!) { GetDriver(ID: $id) {
  ID Name Pollable
  Properties { Name ValueType Required Default Min Max ListValues { Value Label } TableColumns { Name ReadOnly AllowEmpty } }
  Registers { Name AddressMin AddressMax ValueTypes Properties { Name ValueType Required Default Min Max ListValues { Value Label } TableColumns { Name ValueType ReadOnly AllowEmpty } } }
} }`;
const driverCache = new Map<string, any>();
async function driver(name: string): Promise<any> {
  if (!driverCache.has(name)) {
    const d = (await ok(DRIVER, { id: name })).GetDriver;
    assert.ok(d, `driver ${name} is in the catalogue`);
    driverCache.set(name, d);
  }
  return driverCache.get(name);
}
const devProp = async (drv: string, name: string) =>
  (await driver(drv)).Properties.find((p: any) => p.Name === name);
const reg = async (drv: string, name: string) =>
  (await driver(drv)).Registers.find((r: any) => r.Name === name);
const regProp = async (drv: string, r: string, name: string) =>
  (await reg(drv, r))?.Properties.find((p: any) => p.Name === name);

const CREATE_DEVICE = `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID Name Properties { Key Value } } }`;
const CREATE_REGISTER = `mutation($in: CreateRegisterRequest!) { CreateRegister(input: $in) { ID Name ValueType Properties { Name Value } Topics { Format Topic Direction } } }`;

/** Required device properties of a driver, filled with something valid. */
async function requiredProps(
  drv: string,
  except: string[] = [],
): Promise<Array<{ Key: string; Value: string }>> {
  const d = await driver(drv);
  return d.Properties.filter((p: any) => p.Required && p.Default === null && !except.includes(p.Name)).map(
    (p: any) => ({
      Key: p.Name,
      Value:
        p.Name === 'host'
          ? '127.0.0.1'
          : p.Name === 'serialPort'
            ? noSuchTty()
            : p.Name === 'endpointUrl'
              ? 'opc.tcp://localhost:4840'
              : 'x',
    }),
  );
}

/** The TCP port of this test's peer, for drivers with a `port` the caller did not give. */
async function peerPortProp(drv: string, given: Set<string>): Promise<Array<{ Key: string; Value: string }>> {
  return !given.has('port') && (await devProp(drv, 'port')) ? [{ Key: 'port', Value: String(peerPort) }] : [];
}

async function device(drv: string, props: Array<{ Key: string; Value: string }> = []): Promise<any> {
  const name = `dev-${++seq}`;
  const given = new Set(props.map((p) => p.Key));
  const all = [
    ...(await requiredProps(drv)).filter((p) => !given.has(p.Key)),
    ...(await peerPortProp(drv, given)),
    ...props,
  ];
  return (await ok(CREATE_DEVICE, { in: { Name: name, DriverID: drv, Properties: all } })).CreateDevice;
}
async function deviceRefused(
  drv: string,
  props: Array<{ Key: string; Value: string }>,
  ...patterns: RegExp[]
) {
  const name = `dev-${++seq}`;
  const given = new Set(props.map((p) => p.Key));
  const all = [
    ...(await requiredProps(drv)).filter((p) => !given.has(p.Key)),
    ...(await peerPortProp(drv, given)),
    ...props,
  ];
  return refused(
    CREATE_DEVICE,
    { in: { Name: name, DriverID: drv, Properties: all } },
    new RegExp(`device "${name}"`),
    ...patterns,
  );
}

/** Required tag properties of a register, filled with something valid. */
async function tagProps(drv: string, r: string, given: Array<{ Name: string; Value: string }>) {
  const names = new Set(given.map((p) => p.Name));
  const def = await reg(drv, r);
  const fill = def.Properties.filter((p: any) => p.Required && p.Default === null && !names.has(p.Name)).map(
    (p: any) => ({
      Name: p.Name,
      Value: p.Min !== null ? String(p.Min) : 'x',
    }),
  );
  return [...fill, ...given];
}
async function tag(
  dev: any,
  drv: string,
  r: string,
  valueType: string,
  props: Array<{ Name: string; Value: string }> = [],
) {
  return (
    await ok(CREATE_REGISTER, {
      in: {
        DeviceID: dev.ID,
        Name: r,
        TagName: `tag-${++seq}`,
        ValueType: valueType,
        Properties: await tagProps(drv, r, props),
      },
    })
  ).CreateRegister;
}
async function tagRefused(
  dev: any,
  drv: string,
  r: string,
  valueType: string,
  props: Array<{ Name: string; Value: string }>,
  ...patterns: RegExp[]
) {
  const tagName = `tag-${++seq}`;
  return refused(
    CREATE_REGISTER,
    {
      in: {
        DeviceID: dev.ID,
        Name: r,
        TagName: tagName,
        ValueType: valueType,
        Properties: await tagProps(drv, r, props),
      },
    },
    new RegExp(`tag "${tagName}" of device "${dev.Name}"`),
    ...patterns,
  );
}
const valueOf = (props: Array<{ Key?: string; Name?: string; Value: string }>, name: string) =>
  props.find((p) => (p.Key ?? p.Name) === name)?.Value;

before(async () => {
  peer = createServer((socket) => {
    peerConnections++;
    socket.destroy();
  });
  await new Promise<void>((r) => peer.listen(0, '127.0.0.1', r));
  peerPort = (peer.address() as { port: number }).port;
  t = await startTestEdge();
  const admin = await bootstrapAdmin(t);
  auth = `Bearer ${(await clientToken(t, admin)).token}`;
});
after(async () => {
  await t.stop();
  await new Promise((r) => peer.close(r));
});

describe('DeviceHub 4.4.x rules (contract part 2.4)', () => {
  const FOURTEEN = [
    'DF1 Serial',
    'Logix Serial',
    'Modbus Energy Meter RTU',
    'Generic Device',
    'Bit-Addressed PLC Serial',
    'Industrial Indicator',
    'Series-A PLC Serial',
    'Modbus Multi-Station RTU to TCP Converter',
    'FINS Ethernet',
    'FINS Serial',
    'Host Link',
    'Scale',
    'S7-200 Serial',
    'CMP-Link Serial',
  ];
  test('parity on the fourteen drivers: 0 None, 1 Odd, 2 Even kept; 3 Mark and 4 Space refused', async () => {
    assert.equal(new Set(FOURTEEN).size, 14);
    for (const drv of FOURTEEN) {
      const parity = await devProp(drv, 'parity');
      assert.ok(parity, `${drv} has parity`);
      assert.deepEqual(
        parity.ListValues,
        [
          { Value: '0', Label: 'None' },
          { Value: '1', Label: 'Odd' },
          { Value: '2', Label: 'Even' },
        ],
        drv,
      );
      const lv = await ok(
        `query($id: ID!) { GetDriver(ID: $id) { ListValues(Property: "parity") { Value Label } } }`,
        { id: drv },
      );
      assert.deepEqual(lv.GetDriver.ListValues, parity.ListValues, `${drv}: ListValues(Property) agrees`);
      for (const good of ['0', '1', '2']) {
        const d = await device(drv, [{ Key: 'parity', Value: good }]);
        assert.equal(valueOf(d.Properties, 'parity'), good);
      }
      for (const bad of ['3', '4']) {
        await deviceRefused(
          drv,
          [{ Key: 'parity', Value: bad }],
          /property "parity"/,
          new RegExp(`"${bad}"`),
          /0 \(None\), 1 \(Odd\), 2 \(Even\)/,
        );
      }
    }
    // Register-level parity too on the generic device, the indicator and the scale.
    for (const [drv, r] of [
      ['Generic Device', 'REQ'],
      ['Industrial Indicator', 'PV'],
      ['Scale', 'GROSS'],
    ] as const) {
      const p = await regProp(drv, r, 'parity');
      assert.deepEqual(
        p.ListValues.map((v: any) => `${v.Value}=${v.Label}`),
        ['0=None', '1=Odd', '2=Even'],
        drv,
      );
      const dev = await device(drv);
      const vt = (await reg(drv, r)).ValueTypes[0];
      const created = await tag(dev, drv, r, vt, [{ Name: 'parity', Value: '2' }]);
      assert.equal(valueOf(created.Properties, 'parity'), '2');
      await tagRefused(
        dev,
        drv,
        r,
        vt,
        [{ Name: 'parity', Value: '3' }],
        /property "parity"/,
        /"3"/,
        /allowed values: 0 \(None\)/,
      );
      await tagRefused(dev, drv, r, vt, [{ Name: 'parity', Value: '4' }], /property "parity"/, /"4"/);
    }
  });

  test('parity on the five Modbus-family drivers: SignedInteger, None/Even/Odd, 1 = Even, 2 = Odd', async () => {
    for (const drv of [
      'ELC Serial',
      'Modbus ASCII',
      'Modbus ASCII Advanced',
      'Modbus RTU',
      'Modbus RTU Advanced',
    ]) {
      const parity = await devProp(drv, 'parity');
      assert.equal(parity.ValueType, 'SignedInteger', drv);
      assert.deepEqual(
        parity.ListValues,
        [
          { Value: '0', Label: 'None' },
          { Value: '1', Label: 'Even' },
          { Value: '2', Label: 'Odd' },
        ],
        drv,
      );
      for (const good of ['0', '1', '2']) {
        assert.equal(
          valueOf((await device(drv, [{ Key: 'parity', Value: good }])).Properties, 'parity'),
          good,
        );
      }
      await deviceRefused(
        drv,
        [{ Key: 'parity', Value: '3' }],
        /property "parity"/,
        /"3"/,
        /0 \(None\), 1 \(Even\), 2 \(Odd\)/,
      );
      await deviceRefused(
        drv,
        [{ Key: 'parity', Value: 'Even' }],
        /property "parity"/,
        /"Even"/,
        /1 \(Even\)/,
      );
    }
  });

  test('changed default values of 4.4.x', async () => {
    const table: Array<[string, string, string, string | null]> = [
      // [driver, property, 4.4.x default, register (null: device level)]
      ...[
        'ELC Ethernet',
        'ELC Serial',
        'Modbus ASCII',
        'Modbus ASCII Advanced',
        'Modbus RTU',
        'Modbus RTU Advanced',
        'Modbus RTU over TCP',
        'Modbus TCP',
        'Modbus UDP',
      ].map((d) => [d, 'requestTimeoutMs', '1500', null] as [string, string, string, null]),
      ...[
        'Generic Device',
        'Industrial Indicator',
        'Keyence-Class Nano',
        'Opto-Class CONT Ethernet',
        'Scale',
        'CMP-Link Ethernet',
        'DX Ethernet',
      ].map((d) => [d, 'KeepAlive', '5', null] as [string, string, string, null]),
      ['Generic Device', 'KeepAlive', '5', 'REQ'],
      ['Industrial Indicator', 'KeepAlive', '5', 'PV'],
      ['Scale', 'KeepAlive', '5', 'NET'],
      ['Logix Ethernet Advanced', 'accessMode', '1', null],
      ['Logix Ethernet', 'accessMode', '1', null],
      ['EtherNet/IP Ethernet', 'DefaultDataFile', '1', 'N'],
      ['Modbus Multi-Station RTU to TCP Converter', 'responseTimeout', '1500', null],
      ['Modbus Multi-Station RTU to TCP Converter', 'retryRequestCount', '2', null],
      ['Modbus RTU over TCP', 'retryRequestCount', '2', null],
    ];
    for (const [drv, name, dflt, r] of table) {
      const def = r ? await regProp(drv, r, name) : await devProp(drv, name);
      assert.ok(def, `${drv} ${r ?? ''} has ${name}`);
      assert.equal(def.Default, dflt, `${drv} ${name} default`);
      // A device or tag that does not give the property gets the new default.
      const dev = await device(drv);
      if (r) {
        const created = await tag(dev, drv, r, (await reg(drv, r)).ValueTypes[0]);
        assert.equal(valueOf(created.Properties, name), dflt, `${drv} tag ${name}`);
      } else {
        assert.equal(valueOf(dev.Properties, name), dflt, `${drv} ${name}`);
      }
    }
  });

  test('bit-addressed serial PLC: bit registers I_bit..T_bit, narrowed ranges', async () => {
    const drv = 'Bit-Addressed PLC Serial';
    const dev = await device(drv);
    const ranges: Array<[string, number, number]> = [
      ['I', 0, 20],
      ['Q', 0, 20],
      ['M', 0, 300],
      ['R', 0, 48],
    ];
    for (const [area, min, max] of ranges) {
      for (const name of [area, `${area}_bit`]) {
        const r = await reg(drv, name);
        assert.equal(r.AddressMin, min, name);
        assert.equal(r.AddressMax, max, name);
        const vt = name.endsWith('_bit') ? 'bit' : 'int16';
        await tag(dev, drv, name, vt, [{ Name: 'address', Value: String(max) }]);
        await tagRefused(
          dev,
          drv,
          name,
          vt,
          [{ Name: 'address', Value: String(max + 1) }],
          /property "address"/,
          new RegExp(`"${max + 1}"`),
          new RegExp(`from ${min} to ${max}`),
        );
      }
    }
    for (const area of ['I', 'Q', 'M', 'R', 'C', 'T']) {
      assert.ok(!(await reg(drv, area)).ValueTypes.includes('bit'), `${area} has no bit value type`);
      assert.deepEqual((await reg(drv, `${area}_bit`)).ValueTypes, ['bit']);
      await tagRefused(
        dev,
        drv,
        area,
        'bit',
        [],
        /value type "bit" is not allowed on register/,
        /allowed values: int16/,
      );
    }
  });

  test('CMP-link serial: accessType removed from all 28 registers', async () => {
    const serial = await driver('CMP-Link Serial');
    assert.equal(serial.Registers.length, 28);
    for (const r of serial.Registers) {
      assert.ok(!r.Properties.some((p: any) => p.Name === 'accessType'), `${r.Name} has no accessType`);
    }
    const dev = await device('CMP-Link Serial');
    await tagRefused(
      dev,
      'CMP-Link Serial',
      'D',
      'int16',
      [{ Name: 'accessType', Value: 'RW' }],
      /has no property "accessType"/,
      /properties: address/,
    );
    // The Ethernet sibling keeps it.
    assert.ok((await regProp('CMP-Link Ethernet', 'D', 'accessType')) !== undefined);
  });

  test('Logix changes: PLCProgramChangeAction replaces pollPLCProgramChecksum; register R value types; fwVersion', async () => {
    const adv = 'Logix Ethernet Advanced';
    assert.equal(await devProp(adv, 'pollPLCProgramChecksum'), undefined);
    assert.ok((await devProp(adv, 'PLCProgramChangeAction')).ListValues.length > 0);
    await deviceRefused(
      adv,
      [{ Key: 'pollPLCProgramChecksum', Value: 'true' }],
      /has no property "pollPLCProgramChecksum"/,
      /PLCProgramChangeAction/,
    );
    await deviceRefused(
      adv,
      [{ Key: 'PLCProgramChangeAction', Value: 'Explode' }],
      /property "PLCProgramChangeAction"/,
      /"Explode"/,
      /allowed values: None/,
    );

    const plain = 'Logix Ethernet';
    for (const p of ['fwVersion', 'PLCProgramChangeAction'])
      assert.ok(await devProp(plain, p), `${plain} has ${p}`);
    const r = await reg(plain, 'R');
    for (const gone of ['byte', 'dword']) assert.ok(!r.ValueTypes.includes(gone), `R lost ${gone}`);
    for (const added of ['usint', 'uint', 'udint', 'ulint', 'dint_array', 'real_array'])
      assert.ok(r.ValueTypes.includes(added), `R has ${added}`);
    const dev = await device(plain);
    await tag(dev, plain, 'R', 'udint', [{ Name: 'tagName', Value: 'Counter' }]);
    await tagRefused(
      dev,
      plain,
      'R',
      'dword',
      [{ Name: 'tagName', Value: 'Counter' }],
      /value type "dword" is not allowed on register "R"/,
      /udint/,
    );
  });

  test('CIP classId: unsigned, 0-65535; serviceType, data, respDataOffset, respDataEndianness added', async () => {
    const drv = 'CIP Ethernet';
    const classId = await regProp(drv, 'ATTR', 'classId');
    assert.equal(classId.ValueType, 'UnsignedInteger');
    assert.equal(classId.Min, 0);
    assert.equal(classId.Max, 65535);
    for (const p of ['serviceType', 'data', 'respDataOffset', 'respDataEndianness'])
      assert.ok(await regProp(drv, 'ATTR', p), p);
    const dev = await device(drv);
    for (const good of ['0', '65535'])
      await tag(dev, drv, 'ATTR', 'uint16', [{ Name: 'classId', Value: good }]);
    for (const bad of ['-1', '65536', '1.5']) {
      await tagRefused(
        dev,
        drv,
        'ATTR',
        'uint16',
        [{ Name: 'classId', Value: bad }],
        /property "classId"/,
        new RegExp(`"${bad.replace('.', '\\.')}"`),
        /integers from 0 to 65535/,
      );
    }
  });

  test('publish/subscribe payload client: Namespace required, with a default', async () => {
    const drv = 'Sparkplug Payload Client';
    const ns = await devProp(drv, 'Namespace');
    assert.equal(ns.Required, true);
    assert.equal(ns.Default, 'spBv1.0');
    assert.equal(valueOf((await device(drv)).Properties, 'Namespace'), 'spBv1.0');
    assert.equal(
      valueOf((await device(drv, [{ Key: 'Namespace', Value: 'plant' }])).Properties, 'Namespace'),
      'plant',
    );
    await deviceRefused(drv, [{ Key: 'Namespace', Value: '' }], /property "Namespace" is required/);
  });

  test('Generator: registers M, S, Ssub take addresses 0-65535', async () => {
    const dev = await device('Generator');
    for (const r of ['M', 'S', 'Ssub']) {
      const def = await reg('Generator', r);
      assert.equal(def.AddressMin, 0);
      assert.equal(def.AddressMax, 65535);
      for (const good of ['0', '65535'])
        await tag(dev, 'Generator', r, 'float64', [{ Name: 'address', Value: good }]);
      for (const bad of ['-1', '65536']) {
        await tagRefused(
          dev,
          'Generator',
          r,
          'float64',
          [{ Name: 'address', Value: bad }],
          /property "address"/,
          new RegExp(`"${bad}"`),
          /from 0 to 65535/,
        );
      }
    }
  });

  test('additions of 4.4.x on named drivers', async () => {
    // Message-protocol driver: 50 register types more, and useGenericSubscribe.
    const msg = await driver('Message Protocol Client');
    assert.equal(msg.Registers.filter((r: any) => /^MSG_\d\d$/.test(r.Name)).length, 50);
    assert.ok(await devProp('Message Protocol Client', 'useGenericSubscribe'));
    // OPC UA client (advanced): value type Method with DefaultInputArgumentsOPCUAMethod.
    const node = await reg('OPC UA Client (Advanced)', 'Node');
    assert.ok(node.ValueTypes.includes('Method'));
    const args = await regProp('OPC UA Client (Advanced)', 'Node', 'DefaultInputArgumentsOPCUAMethod');
    assert.equal(args.ValueType, 'RowFixedTable');
    assert.deepEqual(
      args.TableColumns.map((c: any) => [c.Name, c.ReadOnly, c.AllowEmpty]),
      [
        ['Name', true, false],
        ['DataType', true, false],
        ['Value', false, true],
      ],
    );
    const dev = await device('OPC UA Client (Advanced)');
    const method = await tag(dev, 'OPC UA Client (Advanced)', 'Node', 'Method', [
      { Name: 'nodeId', Value: 'ns=2;s=Reset' },
      {
        Name: 'DefaultInputArgumentsOPCUAMethod',
        Value: JSON.stringify([{ Name: 'arg0', DataType: 'string', Value: 'now' }]),
      },
    ]);
    assert.deepEqual(
      method.Topics.filter((x: any) => x.Format.startsWith('Call')).map((x: any) => [x.Format, x.Direction]),
      [
        ['Call', 'Input'],
        ['CallResponse', 'Output'],
      ],
    );
    await tagRefused(
      dev,
      'OPC UA Client (Advanced)',
      'Node',
      'Method',
      [
        { Name: 'nodeId', Value: 'ns=2;s=Reset' },
        {
          Name: 'DefaultInputArgumentsOPCUAMethod',
          Value: JSON.stringify([{ Name: 'renamed', DataType: 'string', Value: '' }]),
        },
      ],
      /property "DefaultInputArgumentsOPCUAMethod"/,
      /read-only/,
    );
    // S5 Ethernet: sint. CNC: cnc_rdprgnum. S7: ReconnectInterval. Logix serial: readTimeout. Gateway: publishStat.
    assert.ok((await reg('S5 Ethernet', 'DB')).ValueTypes.includes('sint'));
    assert.ok(await reg('CNC', 'cnc_rdprgnum'));
    assert.ok(await devProp('S7', 'ReconnectInterval'));
    assert.ok(await devProp('Logix Serial', 'readTimeout'));
    assert.equal((await devProp('Gateway Module', 'publishStat')).ValueType, 'Boolean');
    await deviceRefused(
      'Gateway Module',
      [{ Key: 'publishStat', Value: 'maybe' }],
      /property "publishStat"/,
      /"maybe"/,
      /allowed values: true, false/,
    );
  });

  test('GraphQL schema additions: BrowseTaskItem.DeviceID, Topic.Description, TableColumn.ReadOnly/AllowEmpty, FormatEnum Call/CallResponse, ValueTypeEnum RowFixedTable, UploadStatus.Stats/FailDetails, Warnings deprecated', async () => {
    const typeQ = `query($n: String!) { __type(name: $n) { kind fields(includeDeprecated: true) { name isDeprecated type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } enumValues { name } } }`;
    const type = async (n: string) => (await ok(typeQ, { n })).__type;
    const field = async (ty: string, f: string) => (await type(ty)).fields.find((x: any) => x.name === f);
    assert.ok(await field('BrowseTaskItem', 'DeviceID'));
    assert.ok(await field('Topic', 'Description'));
    assert.ok(await field('TableColumn', 'ReadOnly'));
    assert.ok(await field('TableColumn', 'AllowEmpty'));
    const formats = (await type('FormatEnum')).enumValues.map((v: any) => v.name);
    for (const f of ['Raw', 'Value', 'WriteResponse', 'Command', 'Call', 'CallResponse'])
      assert.ok(formats.includes(f), f);
    assert.ok((await type('ValueTypeEnum')).enumValues.some((v: any) => v.name === 'RowFixedTable'));
    const stats = await field('UploadStatus', 'Stats');
    assert.deepEqual([stats.type.kind, stats.type.ofType.name], ['NON_NULL', 'UploadStats']);
    assert.ok(await field('UploadStats', 'Failed'));
    const fails = await field('UploadStatus', 'FailDetails');
    assert.equal(fails.type.ofType.ofType.ofType.name, 'UploadLineDetail');
    assert.equal((await field('UploadStatus', 'Warnings')).isDeprecated, true);
    const input = (
      await ok(`{ __type(name: "CreateRegistersByFoldersSelectionRequest") { inputFields { name } } }`)
    ).__type;
    assert.ok(input.inputFields.length > 0);
    const mutations = (
      await ok(`{ __schema { mutationType { fields { name args { type { ofType { name } } } } } } }`)
    ).__schema.mutationType.fields;
    for (const op of ['BrowseTask_CreateRegistersByFoldersSelection', 'Cart_AddItemsByFoldersSelection']) {
      const m = mutations.find((f: any) => f.name === op);
      assert.equal(m.args[0].type.ofType.name, 'CreateRegistersByFoldersSelectionRequest', op);
    }
  });

  test('every driver the acquisition issue polls is in the catalogue and says it is pollable', async () => {
    const all = (await ok(`{ ListDrivers { Total Items { Name Pollable } } }`)).ListDrivers;
    const pollable = all.Items.filter((d: any) => d.Pollable)
      .map((d: any) => d.Name)
      .sort();
    assert.deepEqual(
      pollable,
      [
        'BACnet/IP',
        'Generator',
        'Logix Ethernet',
        'Logix Ethernet Advanced',
        'Modbus ASCII',
        'Modbus RTU',
        'Modbus RTU over TCP',
        'Modbus TCP',
        'Modbus UDP',
        'MQTT',
        'OPC UA Client',
        'S7',
        'SNMP',
      ].sort(),
    );
    const filtered = (await ok(`{ ListDrivers(input: { Filter: { Pollable: { Eq: true } } }) { Total } }`))
      .ListDrivers;
    assert.equal(filtered.Total, pollable.length);
  });
});

test('the devices made here are polled at the peer of this test, not at ports of the host', async () => {
  const deadline = Date.now() + 15_000;
  while (peerConnections === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  assert.ok(peerConnections > 0, 'the acquisition engine connected to the test peer');
});
