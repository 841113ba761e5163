/**
 * The OPC UA client driver trusts the edge's trust store: node-opcua servers started here with a
 * certificate signed by a private CA made by the test (openssl), one sending the certificate
 * alone, one with its chain. A device with `trustServerCertificate` `ca` and SignAndEncrypt is
 * refused (a device error naming the trust store, no crash) while the trust store lacks that CA,
 * also with another CA in it; it reads values once the CA is put in through the edge's trust
 * route; it is refused again at its next connection after the CA is taken out; and it reads again
 * after the edge manager's `CA_CERTIFICATES_SYNC` task brings the CA back. A device with the
 * default (`auto`) trusts the server that sends its chain on first use, as before.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DataType,
  MessageSecurityMode,
  OPCUACertificateManager,
  OPCUAServer,
  SecurityPolicy,
  Variant,
} from 'node-opcua';
import { makePki, signOpcuaServerCertificate, type TestPki } from '../helpers/integrations.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually, freePort } from '../helpers/util.js';
import { nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';

const SERVER_URI = 'urn:millwright-test:opcua-ca-server';

async function startServer(port: number, certificateFile: string, privateKeyFile: string, pkiDir: string) {
  const server = new OPCUAServer({
    port,
    hostname: '127.0.0.1',
    certificateFile,
    privateKeyFile,
    serverInfo: { applicationUri: SERVER_URI },
    securityModes: [MessageSecurityMode.SignAndEncrypt],
    securityPolicies: [SecurityPolicy.Basic256Sha256],
    allowAnonymous: true,
    // The server accepts the edge's client certificate: the test is about the other direction.
    serverCertificateManager: new OPCUACertificateManager({
      rootFolder: pkiDir,
      automaticallyAcceptUnknownCertificate: true,
    }),
  });
  await server.initialize();
  const addressSpace = server.engine.addressSpace!;
  const ns = addressSpace.getOwnNamespace();
  ns.addVariable({
    organizedBy: addressSpace.rootFolder.objects,
    browseName: 'Temperature',
    nodeId: 's=Temperature',
    dataType: 'Double',
    minimumSamplingInterval: 50,
    value: { get: () => new Variant({ dataType: DataType.Double, value: 21.5 }) },
  });
  await server.start();
  return server;
}

describe('acquisition: the OPC UA client trusts the edge trust store', () => {
  let pki: TestPki;
  let other: TestPki;
  let files: { cert: string; chain: string; key: string };
  let serverPki: string;
  /** Sends its certificate alone (the `ca` device's), and with its chain (the `auto` device's). */
  let server: OPCUAServer | undefined;
  let chained: OPCUAServer | undefined;
  let port: number;
  let chainedPort: number;
  let e: AcqEdge;
  let m: TestManager;
  let projectId: string;
  let strict: string;
  let auto: string;

  const status = () => e.t.edge.acquisition.deviceStatus(strict)!;
  const caFolder = (sub: string) => join(e.t.dataDir, 'acquisition', 'opcua-pki-ca', sub);
  const putTrust = async (pems: string[]) => {
    const r = await e.t.call('/dm/v2/ca-certificates', {
      method: 'PUT',
      headers: { authorization: e.auth },
      json: { certificates: pems.map((pem, i) => ({ id: `test-${i}`, pem })) },
    });
    assert.equal(r.status, 200, r.text);
    return Date.now();
  };
  /** The device's first connection attempt that ends after `since`. */
  const attemptAfter = async (since: number, ms = 20_000) => {
    await eventually(
      () => status().since > since && (status().state === 'failed' || status().state === 'connected'),
      ms,
      'a connection attempt',
    );
    return status();
  };
  const value = (device: string) =>
    nextMessage(e.nc, `devicehub.raw.${device}.temp`, (p) => p.success === true, 30_000);

  before(async () => {
    pki = makePki();
    other = makePki();
    files = signOpcuaServerCertificate(pki, SERVER_URI);
    serverPki = mkdtempSync(join(tmpdir(), 'mw-opcua-ca-server-'));
    port = await freePort();
    chainedPort = await freePort();
    [server, chained, e, m] = await Promise.all([
      startServer(port, files.cert, files.key, serverPki),
      startServer(chainedPort, files.chain, files.key, serverPki),
      startAcqEdge(),
      startTestManager(),
    ]);
    ({ projectId } = await makeProject(m));
    const h = { authorization: e.auth };
    const proposed = await e.t.call('/dm/cloud/url', { headers: h, json: { url: m.url } });
    assert.equal(proposed.status, 200, proposed.text);
    await e.t.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: h });
    const a = await e.t.call('/dm/cloud', { headers: h, json: { code: await activationCode(m, projectId) } });
    assert.equal(a.status, 200, a.text);
    const deviceId = a.body.deviceId;
    await eventually(
      async () => (await m.call(`/api/v1/device/${deviceId}`)).body.online === true,
      15_000,
      'online',
    );
  });
  after(async () => {
    await e?.stop();
    await m?.stop();
    await server?.shutdown();
    await chained?.shutdown();
    rmSync(serverPki, { recursive: true, force: true });
    pki?.dispose();
    other?.dispose();
  });

  test('refused before the CA is trusted (also with another CA), a device error that names the trust store', async () => {
    const secure = {
      securityMode: 'SignAndEncrypt',
      securityPolicy: 'Basic256Sha256',
      useSubscriptions: 'false',
    };
    const tag = { Name: 'Node', TagName: 'temp', ValueType: 'float64', IntervalMs: 200 };
    const props = { nodeId: 'ns=1;s=Temperature' };
    auto = await e.createDevice('ua-auto', 'OPC UA Client', {
      ...secure,
      endpointUrl: `opc.tcp://127.0.0.1:${chainedPort}`,
    });
    strict = await e.createDevice('ua-ca', 'OPC UA Client', {
      ...secure,
      endpointUrl: `opc.tcp://127.0.0.1:${port}`,
      trustServerCertificate: 'ca',
    });
    // `auto` against the server that sends its certificate alone: no chain to trust on first use.
    const leaf = await e.createDevice('ua-auto-leaf', 'OPC UA Client', {
      ...secure,
      endpointUrl: `opc.tcp://127.0.0.1:${port}`,
    });
    const autoValue = value('ua-auto');
    const [strictTag] = await e.createTags(strict, [{ ...tag, Properties: props }]);
    await e.createTags(auto, [{ ...tag, Properties: props }]);
    // Today's behaviour is the default: the server's certificate is trusted on first use.
    assert.equal((await autoValue).value, 21.5);

    const first = await attemptAfter(0);
    assert.equal(first.state, 'failed');
    assert.match(first.reason, /server's certificate is not trusted \(Bad\w+\)/);
    assert.match(first.reason, /trustServerCertificate "ca"/);
    assert.match(first.reason, /\/dm\/v2\/ca-certificates/);
    const [ts] = await e.tagStates([strictTag!]);
    assert.equal(ts!.State, 'Failed');
    assert.match(ts!.Reason, /not trusted/);
    assert.equal(status().connects, 0);
    await eventually(() => e.t.edge.acquisition.deviceStatus(leaf)!.state === 'failed', 20_000, 'refused');
    assert.match(
      e.t.edge.acquisition.deviceStatus(leaf)!.reason,
      /BadCertificateChainIncomplete.*did not send/,
    );
    await e.ok(`mutation($ids: [ID!]!) { DeleteDevices(IDs: $ids) }`, { ids: [leaf] });

    // Another CA in the trust store does not vouch for this server.
    const put = await putTrust([other.ca]);
    const again = await attemptAfter(put);
    assert.equal(again.state, 'failed', again.reason);
    assert.match(again.reason, /not trusted/);
    assert.equal(readdirSync(caFolder('issuers/certs')).length, 1);
    assert.equal(status().connects, 0);
  });

  test("values once the CA is in the edge's trust store (the edge's route); refused again after it is taken out", async () => {
    const got = value('ua-ca');
    const put = await putTrust([other.ca, pki.ca]);
    const now = await attemptAfter(put);
    assert.equal(now.state, 'connected', now.reason);
    assert.equal((await got).value, 21.5);
    assert.equal(readdirSync(caFolder('issuers/certs')).length, 2);

    // Out of the store: the session in progress stays, the next connection is refused.
    const removed = await putTrust([other.ca]);
    await server!.shutdown();
    server = undefined;
    server = await startServer(port, files.cert, files.key, serverPki);
    // Attempts while the server was away fail for that; the first one that reaches it is refused.
    await eventually(
      () => status().since > removed && /not trusted/.test(status().reason),
      30_000,
      'refused again',
    );
    assert.equal(status().state, 'failed');
    assert.equal(readdirSync(caFolder('issuers/certs')).length, 1);
    assert.ok(existsSync(join(caFolder(''), 'millwright-synced.json')));
  });

  test("values after the edge manager's CA_CERTIFICATES_SYNC brings the CA back", async () => {
    const up = await m.admin('/admin/v1/ca-certificates/upload', {
      headers: { 'content-type': 'application/x-pem-file' },
      body: pki.ca,
    });
    assert.equal(up.status, 201, up.text);
    const got = value('ua-ca');
    const sync = await m.call(`/api/v1/ca-certificates/${projectId}/sync`, { json: {} });
    assert.equal(sync.status, 202, sync.text);
    assert.equal(sync.body.type, 'CA_CERTIFICATES_SYNC');
    let task: any;
    await eventually(
      async () => {
        task = (await m.call(`/api/v1/async-task/${sync.body.taskId}`)).body;
        return task.status !== 'RUNNING';
      },
      30_000,
      'the task ends',
    );
    assert.equal(task.status, 'SUCCEEDED', JSON.stringify(task));
    assert.equal((await got).value, 21.5);
    assert.equal(status().state, 'connected');
    // The manager's set replaced the edge's: only its CA is left in the PKI's issuers.
    assert.equal(readdirSync(caFolder('issuers/certs')).length, 1);
  });
});
