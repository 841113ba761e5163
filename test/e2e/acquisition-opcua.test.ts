/**
 * The OPC UA client driver end to end against a node-opcua server started here: browse, tags from
 * the browse result, values by monitored items (security None) and by polling with Read (security
 * SignAndEncrypt, Basic256Sha256), a write through Command read back at the server and by the other
 * device, the server shut down (Failed, reconnect attempts) and started again (OK).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DataType,
  MessageSecurityMode,
  OPCUACertificateManager,
  OPCUAServer,
  SecurityPolicy,
  StatusCodes,
  Variant,
} from 'node-opcua';
import { StringCodec } from 'nats';
import { browseAll, nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { eventually, freePort } from '../helpers/util.js';

const sc = StringCodec();
const pki = mkdtempSync(join(tmpdir(), 'mw-opcua-server-'));
const state = { temperature: 20.5, count: 7 };

async function startServer(port: number): Promise<OPCUAServer> {
  const server = new OPCUAServer({
    port,
    hostname: '127.0.0.1',
    securityModes: [MessageSecurityMode.None, MessageSecurityMode.SignAndEncrypt],
    securityPolicies: [SecurityPolicy.None, SecurityPolicy.Basic256Sha256],
    allowAnonymous: true,
    serverCertificateManager: new OPCUACertificateManager({
      rootFolder: pki,
      automaticallyAcceptUnknownCertificate: true,
    }),
  });
  await server.initialize();
  const addressSpace = server.engine.addressSpace!;
  const ns = addressSpace.getOwnNamespace();
  const plant = ns.addObject({ organizedBy: addressSpace.rootFolder.objects, browseName: 'Plant' });
  ns.addVariable({
    componentOf: plant,
    browseName: 'Temperature',
    nodeId: 's=Plant.Temperature',
    dataType: 'Double',
    minimumSamplingInterval: 50,
    value: {
      get: () => new Variant({ dataType: DataType.Double, value: state.temperature }),
      set: (v: Variant) => {
        state.temperature = v.value as number;
        return StatusCodes.Good;
      },
    },
  });
  ns.addVariable({
    componentOf: plant,
    browseName: 'Count',
    nodeId: 's=Plant.Count',
    dataType: 'Int32',
    minimumSamplingInterval: 50,
    accessLevel: 'CurrentRead',
    userAccessLevel: 'CurrentRead',
    value: { get: () => new Variant({ dataType: DataType.Int32, value: state.count }) },
  });
  await server.start();
  return server;
}

describe('acquisition: OPC UA client', () => {
  let e: AcqEdge;
  let server: OPCUAServer | undefined;
  let port: number;
  let endpoint: string;
  let none: string;
  let secure: string;
  const ids: string[] = [];

  before(async () => {
    port = await freePort();
    endpoint = `opc.tcp://127.0.0.1:${port}`;
    [e, server] = await Promise.all([startAcqEdge(), startServer(port)]);
    none = await e.createDevice('ua-none', 'OPC UA Client', { endpointUrl: endpoint });
    secure = await e.createDevice('ua-sec', 'OPC UA Client', {
      endpointUrl: endpoint,
      securityMode: 'SignAndEncrypt',
      securityPolicy: 'Basic256Sha256',
      useSubscriptions: 'false',
    });
  });
  after(async () => {
    await e.stop();
    await server?.shutdown();
    rmSync(pki, { recursive: true, force: true });
  });

  test('browsing lists the Objects folder with variables as leaves', async () => {
    const items = await browseAll(e, none, 30_000);
    const temp = items.get('Plant/Temperature');
    assert.ok(temp, [...items.keys()].join(', '));
    assert.equal(temp.RegisterName, 'Node');
    assert.equal(temp.ValueType, 'float64');
    assert.deepEqual(temp.Properties, [{ Name: 'nodeId', Value: 'ns=1;s=Plant.Temperature' }]);
    assert.equal(items.get('Plant/Count').ValueType, 'int32');
    assert.equal(items.get('Server'), undefined);
  });

  test('values by monitored items (None) and by Read (SignAndEncrypt) arrive on NATS', async () => {
    const a = nextMessage(e.nc, 'devicehub.raw.ua-none.temp', (p) => p.success, 20_000);
    const b = nextMessage(e.nc, 'devicehub.raw.ua-sec.temp', (p) => p.success, 20_000);
    const c = nextMessage(e.nc, 'devicehub.raw.ua-sec.count', (p) => p.success, 20_000);
    ids.push(
      ...(await e.createTags(none, [
        {
          Name: 'Node',
          TagName: 'temp',
          ValueType: 'float64',
          IntervalMs: 100,
          Properties: { nodeId: 'ns=1;s=Plant.Temperature' },
        },
      ])),
      ...(await e.createTags(secure, [
        {
          Name: 'Node',
          TagName: 'temp',
          ValueType: 'float64',
          IntervalMs: 100,
          Properties: { nodeId: 'ns=1;s=Plant.Temperature' },
        },
        {
          Name: 'Node',
          TagName: 'count',
          ValueType: 'int32',
          IntervalMs: 100,
          Properties: { nodeId: 'ns=1;s=Plant.Count' },
        },
      ])),
    );
    assert.equal((await a).value, 20.5);
    assert.equal((await b).value, 20.5);
    const count = await c;
    assert.equal(count.value, 7);
    assert.equal(count.datatype, 'int64');
    assert.equal(e.t.edge.acquisition.deviceStatus(secure)!.state, 'connected');
  });

  test('a write through Command (over SignAndEncrypt) reaches the server; the subscription sees it', async () => {
    const seen = nextMessage(e.nc, 'devicehub.raw.ua-none.temp', (p) => p.value === 42.25, 10_000);
    const r = await e.nc.request('devicehub.command.ua-sec.temp', sc.encode('42.25'), { timeout: 10_000 });
    assert.equal(r.json<{ success: boolean }>().success, true, r.string());
    assert.equal(state.temperature, 42.25);
    await seen;
    const ro = await e.nc.request('devicehub.command.ua-sec.count', sc.encode('1'), { timeout: 10_000 });
    const err = ro.json<{ success: boolean; error: string }>();
    assert.equal(err.success, false);
    assert.match(err.error, /BadNotWritable|Bad/);
  });

  test('shutting the server down fails the tags; starting it again brings them back', async () => {
    const failed = nextMessage(e.nc, 'devicehub.raw.ua-sec.temp', (p) => p.success === false, 15_000);
    await server!.shutdown();
    server = undefined;
    await failed;
    await eventually(
      async () => (await e.tagStates(ids)).every((s) => s.State === 'Failed'),
      15_000,
      'all Failed',
    );
    // Monitored items send a value once when created: listen before the server is back.
    const polled = nextMessage(e.nc, 'devicehub.raw.ua-sec.temp', (p) => p.success, 30_000);
    const monitored = nextMessage(e.nc, 'devicehub.raw.ua-none.temp', (p) => p.success, 30_000);
    server = await startServer(port);
    await polled;
    await monitored;
    await eventually(async () => (await e.tagStates(ids)).every((s) => s.State === 'OK'), 10_000, 'all OK');
  });
});
