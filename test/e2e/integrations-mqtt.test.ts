/**
 * The MQTT connector against private Mosquittos: both directions with MQTT 3.1.1 and 5 at QoS 0
 * and 1; TLS with caCert and client certificates; a bad certificate and a refused login as states
 * with a reason; malformed remote payloads counted, not forwarded; the AWS IoT Core style (mutual
 * TLS, client id = thing name) and the Azure IoT Hub style (SAS token, devices/<id>/messages/events/).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt, { type MqttClient } from 'mqtt';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';
import { AZURE_API_VERSION, azureSasToken } from '../../src/edge/integrations/connectors/mqtt.js';
import { makePki, startIntegEdge, type IntegEdge, type TestPki } from '../helpers/integrations.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { eventually, skipUnless } from '../helpers/util.js';

const skip = skipUnless('mosquitto') && skipUnless('/usr/sbin/mosquitto');
if (skip) console.log(`# integrations-mqtt skipped: ${skip}`);
const id = (name: string) => PROVIDERS.find((p) => p.name === name)!.id;

async function collect(client: MqttClient, filter: string): Promise<{ topic: string; payload: string }[]> {
  const got: { topic: string; payload: string }[] = [];
  client.on('message', (topic, payload) => got.push({ topic, payload: payload.toString() }));
  await client.subscribeAsync(filter, { qos: 1 });
  return got;
}

describe('integrations: MQTT connector', { skip }, () => {
  let e: IntegEdge;
  let pki: TestPki;
  const plain = new Mosquitto();
  let tlsBroker: Mosquitto;

  before(async () => {
    e = await startIntegEdge();
    pki = makePki();
    await plain.start();
    tlsBroker = new Mosquitto({
      tls: {
        ca: pki.files.ca,
        cert: pki.files.serverCert,
        key: pki.files.serverKey,
        requireCertificate: true,
      },
    });
    await tlsBroker.start();
  });
  after(async () => {
    await e?.stop();
    await plain.dispose();
    await tlsBroker?.dispose();
    pki?.dispose();
  });

  for (const [protocolVersion, qos] of [
    [4, 1],
    [5, 1],
    [4, 0],
    [5, 0],
  ] as const) {
    test(`MQTT ${protocolVersion === 4 ? '3.1.1' : '5'} QoS ${qos}: DataHub → broker and broker → DataHub`, async () => {
      const tag = `v${protocolVersion}q${qos}`;
      const inst = await e.createInstance(`mqtt-${tag}`, id('MQTT'), {
        host: '127.0.0.1',
        port: plain.port,
        protocolVersion,
        qos,
        reconnectInterval: 200,
      });
      await e.subscribe(inst, true, `devicehub.raw.${tag}.>`, `plant/{device}/{tag}`);
      await e.subscribe(inst, false, `remote.${tag}.{topic}`, `factory/${tag}/#`);
      await e.waitState(inst, 'Connected');
      const peer = await mqtt.connectAsync(`mqtt://127.0.0.1:${plain.port}`, { protocolVersion });
      const got = await collect(peer, `plant/${tag}/#`);
      for (let i = 0; i < 50; i++) {
        e.t.edge.datahub.hub.publish(`devicehub.raw.${tag}.temp`, {
          deviceName: tag,
          tagName: 'temp',
          value: i,
        });
      }
      await eventually(() => got.length >= 50, 10_000, 'values at the broker');
      assert.deepEqual(
        got.map((m) => JSON.parse(m.payload).value),
        Array.from({ length: 50 }, (_, i) => i),
      );
      assert.equal(got[0]!.topic, `plant/${tag}/temp`);

      const back: unknown[] = [];
      const sub = e.t.edge.datahub.hub.subscribe(`remote.${tag}.>`, (m) => back.push([m.subject, m.data]));
      await peer.publishAsync(`factory/${tag}/line 1/speed`, JSON.stringify({ value: 7 }), { qos: 1 });
      await peer.publishAsync(`factory/${tag}/line1/bad`, 'not json {', { qos: 1 });
      await eventually(
        async () => (await e.status(inst)).Counters.Malformed === 1,
        5000,
        'malformed counted',
      );
      await eventually(() => back.length === 1, 5000, 'value on the DataHub');
      assert.deepEqual(back[0], [`remote.${tag}.factory.${tag}.line_1.speed`, { value: 7 }]);
      sub.unsubscribe();
      const st = await e.status(inst);
      assert.equal(st.Counters.Sent, 50);
      assert.equal(st.Counters.Received, 1);
      assert.equal(st.Counters.Malformed, 1);
      assert.equal(st.Queue.Depth, 0);
      await peer.endAsync();
    });
  }

  test('TLS with caCert and a client certificate; a bad CA and a missing client certificate are states with a reason', async () => {
    const base = { host: 'localhost', port: tlsBroker.port, tls: true, reconnectInterval: 300 };
    const inst = await e.createInstance('mqtt-tls', id('MQTT'), {
      ...base,
      caCert: pki.ca,
      clientCert: pki.clientCert,
      clientKey: pki.clientKey,
    });
    await e.subscribe(inst, true, 'devicehub.raw.tls.>', 'secure/{subject}');
    await e.waitState(inst, 'Connected');
    const peer = await mqtt.connectAsync(`mqtts://localhost:${tlsBroker.port}`, {
      ca: pki.ca,
      cert: pki.clientCert,
      key: pki.clientKey,
    });
    const got = await collect(peer, 'secure/#');
    e.t.edge.datahub.hub.publish('devicehub.raw.tls.x', { value: 1 });
    await eventually(() => got.length === 1, 5000, 'TLS value');
    assert.equal(got[0]!.topic, 'secure/devicehub/raw/tls/x');
    await peer.endAsync();

    const other = makePki();
    try {
      const badCa = await e.createInstance('mqtt-bad-ca', id('MQTT'), {
        ...base,
        caCert: other.ca,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
      });
      const st = await e.waitState(badCa, 'Disconnected');
      assert.match(st.Reason, /certificate|self.signed|verify/i);
    } finally {
      other.dispose();
    }
    const noClient = await e.createInstance('mqtt-no-client-cert', id('MQTT'), { ...base, caCert: pki.ca });
    const st2 = await e.waitState(noClient, 'Disconnected');
    assert.ok(st2.Reason.length > 0);
  });

  test('a refused login is a state with a reason; the edge goes on', async () => {
    const locked = new Mosquitto({ passwords: { alice: 'secret' } });
    await locked.start();
    try {
      const bad = await e.createInstance('mqtt-bad-login', id('MQTT'), {
        host: '127.0.0.1',
        port: locked.port,
        username: 'alice',
        password: 'wrong',
        reconnectInterval: 300,
      });
      const st = await e.waitState(bad, 'Disconnected');
      assert.match(st.Reason, /Not authorized|Bad username or password/i);
      const good = await e.createInstance('mqtt-good-login', id('MQTT'), {
        host: '127.0.0.1',
        port: locked.port,
        username: 'alice',
        password: 'secret',
      });
      await e.waitState(good, 'Connected');
    } finally {
      await locked.dispose();
    }
  });

  test('AWS IoT Core style: mutual TLS, client id = thing name', async () => {
    const aws = new Mosquitto({
      tls: {
        ca: pki.files.ca,
        cert: pki.files.serverCert,
        key: pki.files.serverKey,
        requireCertificate: true,
        useIdentityAsUsername: true,
      },
    });
    await aws.start();
    try {
      const inst = await e.createInstance('aws', id('AWS IoT Core'), {
        host: 'localhost',
        port: aws.port,
        thingName: 'press-7',
        caCert: pki.ca,
        clientCert: pki.clientCert,
        clientKey: pki.clientKey,
      });
      await e.subscribe(inst, true, 'devicehub.raw.aws.>', 'dt/plant/press-7/{tag}');
      await e.waitState(inst, 'Connected');
      await eventually(
        () => /New client connected .* as press-7 .*u'millwright-test-client'/.test(aws.log),
        5000,
        'client id in the broker log',
      );
      const peer = await mqtt.connectAsync(`mqtts://localhost:${aws.port}`, {
        ca: pki.ca,
        cert: pki.clientCert,
        key: pki.clientKey,
      });
      const got = await collect(peer, 'dt/#');
      e.t.edge.datahub.hub.publish('devicehub.raw.aws.press.force', { tagName: 'force', value: 3 });
      await eventually(() => got.length === 1, 5000, 'AWS-style value');
      assert.equal(got[0]!.topic, 'dt/plant/press-7/force');
      await peer.endAsync();
    } finally {
      await aws.dispose();
    }
  });

  test('Azure IoT Hub style: SAS token as password, hub/device user name, devices/<id>/messages/events/', async () => {
    const key = Buffer.from('azure-device-key-for-tests').toString('base64');
    const user = `localhost/filler-3/?api-version=${AZURE_API_VERSION}`;
    const token = azureSasToken('localhost', 'filler-3', key, 3600);
    const azure = new Mosquitto({
      tls: { ca: pki.files.ca, cert: pki.files.serverCert, key: pki.files.serverKey },
      passwords: { [user]: token, reader: 'reader' },
    });
    await azure.start();
    try {
      const inst = await e.createInstance('azure', id('Azure IoT Hub'), {
        hostName: 'localhost',
        port: azure.port,
        deviceId: 'filler-3',
        sharedAccessKey: key,
        caCert: pki.ca,
      });
      await e.subscribe(inst, true, 'devicehub.raw.azure.>', 'devices/filler-3/messages/events/');
      await e.subscribe(inst, false, 'azure.c2d', 'devices/filler-3/messages/devicebound/#');
      await e.waitState(inst, 'Connected');
      const peer = await mqtt.connectAsync(`mqtts://localhost:${azure.port}`, {
        ca: pki.ca,
        username: 'reader',
        password: 'reader',
      });
      const got = await collect(peer, 'devices/filler-3/messages/events/#');
      e.t.edge.datahub.hub.publish('devicehub.raw.azure.level', { value: 42 });
      await eventually(() => got.length === 1, 5000, 'Azure-style value');
      assert.equal(got[0]!.topic, 'devices/filler-3/messages/events/');
      const back: unknown[] = [];
      const sub = e.t.edge.datahub.hub.subscribe('azure.c2d', (m) => back.push(m.data));
      await peer.publishAsync(
        'devices/filler-3/messages/devicebound/%24.to=x',
        JSON.stringify({ cmd: 'stop' }),
        { qos: 1 },
      );
      await eventually(() => back.length === 1, 5000, 'cloud-to-device message on the DataHub');
      assert.deepEqual(back[0], { cmd: 'stop' });
      sub.unsubscribe();
      await peer.endAsync();
      // A wrong key is refused by the broker: a state with a reason.
      const wrong = await e.createInstance('azure-wrong-key', id('Azure IoT Hub'), {
        hostName: 'localhost',
        port: azure.port,
        deviceId: 'filler-3',
        sharedAccessKey: Buffer.from('wrong').toString('base64'),
        caCert: pki.ca,
        reconnectInterval: 500,
      });
      const st = await e.waitState(wrong, 'Disconnected');
      assert.match(st.Reason, /Not authorized|Bad username or password/i);
    } finally {
      await azure.dispose();
    }
  });
});
