/**
 * CA certificates of the manager, synchronised to an edge: a Mosquitto of the test's own with a
 * server certificate signed by a private CA made by the test (openssl); the edge's MQTT
 * integration (TLS, no CA of its own) fails to connect before the sync and delivers after it.
 * Also the admin routes (upload as raw PEM and as JSON, a chain, preview, list, download, delete,
 * a bad PEM is a 400), the instance routes and the task that the sync answers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';
import { makePki, startIntegEdge, type IntegEdge, type TestPki } from '../helpers/integrations.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { eventually, skipUnless } from '../helpers/util.js';

const skip = skipUnless('mosquitto') && skipUnless('/usr/sbin/mosquitto');
if (skip) console.log(`# manager-ca-certificates skipped: ${skip}`);
// The generic MQTT provider requires its own caCert with TLS (contract 2.3); Gen 1 does not.
const MQTT = PROVIDERS.find((p) => p.name === 'MQTT (Gen 1)')!.id;

let m: TestManager;
let e: IntegEdge;
let pki: TestPki;
let other: TestPki;
let broker: Mosquitto;
let projectId: string;
let deviceId: string;

async function waitTask(taskId: string) {
  let last: any;
  await eventually(
    async () => {
      last = (await m.call(`/api/v1/async-task/${taskId}`)).body;
      return last.status !== 'RUNNING';
    },
    30_000,
    'the task ends',
  );
  return last;
}

describe('CA certificates', { skip }, () => {
  before(async () => {
    pki = makePki();
    other = makePki();
    broker = new Mosquitto({
      tls: { ca: pki.files.ca, cert: pki.files.serverCert, key: pki.files.serverKey },
    });
    await broker.start();
    m = await startTestManager();
    ({ projectId } = await makeProject(m));
    e = await startIntegEdge();
    const h = { authorization: e.auth };
    const proposed = await e.t.call('/dm/cloud/url', { headers: h, json: { url: m.url } });
    assert.equal(proposed.status, 200, proposed.text);
    await e.t.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: h });
    const a = await e.t.call('/dm/cloud', { headers: h, json: { code: await activationCode(m, projectId) } });
    assert.equal(a.status, 200, a.text);
    deviceId = a.body.deviceId;
    await eventually(
      async () => (await m.call(`/api/v1/device/${deviceId}`)).body.online === true,
      15_000,
      'online',
    );
  });
  after(async () => {
    await e?.stop();
    await m?.stop();
    await broker?.dispose();
    pki?.dispose();
    other?.dispose();
  });

  test('admin routes: preview, upload (raw PEM and JSON, a chain), list, download, delete; a bad PEM is a 400', async () => {
    const pem = { 'content-type': 'application/x-pem-file' };
    const preview = await m.admin('/admin/v1/ca-certificates/preview', { headers: pem, body: pki.ca });
    assert.equal(preview.status, 200, preview.text);
    assert.equal(preview.body.total, 1);
    assert.match(preview.body.items[0].subject, /CN=Millwright Test CA/);
    assert.equal(preview.body.items[0].ca, true);
    assert.equal(preview.body.items[0].selfSigned, true);
    assert.match(preview.body.items[0].fingerprint, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    assert.equal((await m.admin('/admin/v1/ca-certificates')).body.total, 0, 'a preview saves nothing');

    for (const bad of ['not a pem', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----']) {
      const r = await m.admin('/admin/v1/ca-certificates/upload', { json: { pem: bad } });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.code, 'bad_request');
    }

    // A chain: the server certificate and its CA; each is kept on its own.
    const chain = await m.admin('/admin/v1/ca-certificates/upload', {
      json: { name: 'other chain', pem: other.serverCert + other.ca },
    });
    assert.equal(chain.status, 201, chain.text);
    assert.equal(chain.body.total, 2);
    const up = await m.admin('/admin/v1/ca-certificates/upload', { headers: pem, body: pki.ca });
    assert.equal(up.status, 201, up.text);
    assert.equal(up.body.total, 1);
    const again = await m.admin('/admin/v1/ca-certificates/upload', { headers: pem, body: pki.ca });
    assert.equal(again.body.total, 0);
    assert.deepEqual(again.body.alreadyStored, [up.body.items[0].fingerprint]);

    const list = await m.admin('/admin/v1/ca-certificates');
    assert.equal(list.body.total, 3);
    const id = up.body.items[0].id;
    const dl = await m.admin(`/admin/v1/ca-certificates/${id}/download`);
    assert.equal(dl.status, 200);
    assert.match(String(dl.headers['content-type']), /application\/x-pem-file/);
    assert.equal(dl.text.trim(), pki.ca.trim());
    const inst = await m.call('/api/v1/ca-certificates/instance');
    assert.equal(inst.body.total, 3);
    assert.equal(
      (await m.call(`/api/v1/ca-certificates/instance/${id}/download`)).text.trim(),
      pki.ca.trim(),
    );

    for (const c of chain.body.items) {
      assert.equal((await m.admin(`/admin/v1/ca-certificates/${c.id}`, { method: 'DELETE' })).status, 204);
    }
    assert.equal(
      (await m.admin(`/admin/v1/ca-certificates/${chain.body.items[0].id}`, { method: 'DELETE' })).status,
      404,
    );
    assert.equal((await m.admin('/admin/v1/ca-certificates')).body.total, 1);
  });

  test('an MQTT integration to a broker signed by a private CA fails before the sync and delivers after it', async () => {
    const inst = await e.createInstance('mqtt-private-ca', MQTT, {
      host: 'localhost',
      port: broker.port,
      tls: true,
      reconnectInterval: 300,
    });
    await e.subscribe(inst, true, 'devicehub.raw.ca.>', 'ca/{subject}');
    const before = await e.waitState(inst, 'Disconnected');
    assert.match(before.Reason, /certificate|self.signed|verify/i);
    // Still not connected a while later: the failure is not a moment's.
    await new Promise((r) => setTimeout(r, 1000));
    assert.notEqual((await e.status(inst)).InstanceState, 'Connected');

    const sync = await m.call(`/api/v1/ca-certificates/${projectId}/sync`, { json: {} });
    assert.equal(sync.status, 202, sync.text);
    assert.equal(sync.body.type, 'CA_CERTIFICATES_SYNC');
    const done = await waitTask(sync.body.taskId);
    assert.equal(done.status, 'SUCCEEDED', JSON.stringify(done));
    const onEdge = await m.call(`/api/v1/edge/${projectId}/${deviceId}/dm/v2/ca-certificates`);
    assert.equal(onEdge.status, 200, onEdge.text);
    assert.equal(onEdge.body.total, 1);
    assert.match(onEdge.body.certificates[0].subject, /Millwright Test CA/);

    await e.waitState(inst, 'Connected', 20_000);
    const peer = await mqtt.connectAsync(`mqtts://localhost:${broker.port}`, { ca: pki.ca });
    const got: string[] = [];
    peer.on('message', (topic) => got.push(topic));
    await peer.subscribeAsync('ca/#', { qos: 1 });
    e.t.edge.datahub.hub.publish('devicehub.raw.ca.x', { value: 1 });
    await eventually(() => got.length === 1, 10_000, 'the value at the broker');
    assert.equal(got[0], 'ca/devicehub/raw/ca/x');
    await peer.endAsync();
  });

  test('sync: a project the caller cannot see is a 404; an unknown body field a 400', async () => {
    const r = await m.call('/api/v1/ca-certificates/no-such-project/sync', { json: {} });
    assert.equal(r.status, 404, r.text);
    const b = await m.call(`/api/v1/ca-certificates/${projectId}/sync`, { json: { nope: 1 } });
    assert.equal(b.status, 400, b.text);
  });
});
