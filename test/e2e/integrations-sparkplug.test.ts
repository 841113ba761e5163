/**
 * Sparkplug B against a private Mosquitto, watched by an ordinary MQTT client that decodes the
 * protobuf payloads: NBIRTH (seq 0, bdSeq, Node Control/Rebirth), DBIRTH before a device's first
 * DDATA and again when a new metric appears, seq 0..255 without gaps, a rebirth on an NCMD, NDEATH
 * with the same bdSeq, and DCMD messages decoded onto the DataHub.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt, { type MqttClient } from 'mqtt';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';
import { DataType, decodePayload, encodePayload } from '../../src/edge/integrations/connectors/sparkplug.js';
import { startIntegEdge, type IntegEdge } from '../helpers/integrations.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { eventually, skipUnless } from '../helpers/util.js';

const skip = skipUnless('mosquitto') && skipUnless('/usr/sbin/mosquitto');
const SPARKPLUG = PROVIDERS.find((p) => p.name === 'Sparkplug B')!.id;

describe('integrations: Sparkplug B', { skip }, () => {
  let e: IntegEdge;
  const broker = new Mosquitto();
  let observer: MqttClient;
  const seen: { topic: string; type: string; device?: string; seq?: number; metrics: any[] }[] = [];

  before(async () => {
    e = await startIntegEdge();
    await broker.start();
    observer = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`);
    observer.on('message', (topic, payload) => {
      const [, , type, , device] = topic.split('/');
      if (topic.includes('/NCMD/') || topic.includes('/DCMD/')) return; // the observer's own commands
      const p = decodePayload(payload);
      seen.push({
        topic,
        type: type!,
        ...(device ? { device } : {}),
        ...(p.seq === undefined ? {} : { seq: p.seq }),
        metrics: p.metrics,
      });
    });
    await observer.subscribeAsync('spBv1.0/#', { qos: 1 });
  });
  after(async () => {
    await observer?.endAsync(true);
    await e?.stop();
    await broker.dispose();
  });

  test('births, data, sequence numbers, rebirth on request, death, commands', async () => {
    const inst = await e.createInstance('sparkplug', SPARKPLUG, {
      host: '127.0.0.1',
      port: broker.port,
      groupId: 'plant',
      edgeNodeId: 'edge1',
      reconnectInterval: 200,
    });
    await e.subscribe(inst, true, 'devicehub.raw.>', '{device}');
    await e.subscribe(inst, false, 'sp.cmd.{topic}', 'spBv1.0/plant/DCMD/edge1/#');
    await e.waitState(inst, 'Connected');
    // Each subscription change restarted the instance (NDEATH, then NBIRTH with the next bdSeq):
    // the session that counts is the last one.
    await eventually(() => seen.some((m) => m.type === 'NBIRTH'), 5000, 'NBIRTH');
    // Time is the test: the restarts settle; the last session counts.
    await new Promise((r) => setTimeout(r, 300));
    const bdSeqs = seen
      .filter((m) => m.type === 'NBIRTH')
      .map((m) => m.metrics.find((x) => x.name === 'bdSeq').value);
    assert.deepEqual(
      bdSeqs,
      [...bdSeqs].sort((a, b) => a - b),
      'bdSeq grows with each session',
    );
    const nbirth = seen.filter((m) => m.type === 'NBIRTH').at(-1)!;
    assert.equal(nbirth.topic, 'spBv1.0/plant/NBIRTH/edge1');
    assert.equal(nbirth.seq, 0);
    const bdSeq = nbirth.metrics.find((m) => m.name === 'bdSeq');
    assert.equal(bdSeq.datatype, DataType.UInt64);
    assert.deepEqual(
      nbirth.metrics.find((m) => m.name === 'Node Control/Rebirth'),
      {
        name: 'Node Control/Rebirth',
        datatype: DataType.Boolean,
        value: false,
        timestamp: nbirth.metrics[1].timestamp,
      },
    );

    const hub = e.t.edge.datahub.hub;
    const v = (device: string, tag: string, value: unknown, datatype: string) =>
      hub.publish(`devicehub.raw.${device}.${tag}`, {
        deviceName: device,
        tagName: tag,
        value,
        datatype,
        timestamp: Date.now(),
        success: true,
      });
    v('Press1', 'force', 1.5, 'float64');
    v('Press1', 'force', 2.5, 'float64');
    v('Press1', 'count', 7, 'int64');
    v('Pump2', 'running', true, 'bool');
    v('Press1', 'force', 3.5, 'float64');
    await eventually(
      () => seen.filter((m) => m.type === 'DDATA' || m.type === 'DBIRTH').length >= 5,
      5000,
      'device messages',
    );
    const device = seen.filter((m) => m.type === 'DDATA' || m.type === 'DBIRTH');
    assert.deepEqual(
      device.map((m) => `${m.type} ${m.device} ${m.metrics.map((x) => `${x.name}=${x.value}`).join(',')}`),
      [
        'DBIRTH Press1 force=1.5',
        'DDATA Press1 force=2.5',
        'DBIRTH Press1 force=2.5,count=7',
        'DBIRTH Pump2 running=true',
        'DDATA Press1 force=3.5',
      ],
    );
    assert.deepEqual(
      device.map((m) => m.seq),
      [1, 2, 3, 4, 5],
    );
    assert.equal(device[2]!.metrics.find((m) => m.name === 'count').datatype, DataType.Int64);

    // Rebirth on request: NBIRTH with seq 0 again, then every device's DBIRTH with all its metrics.
    const before = seen.length;
    await observer.publishAsync(
      'spBv1.0/plant/NCMD/edge1',
      encodePayload([{ name: 'Node Control/Rebirth', datatype: DataType.Boolean, value: true }], undefined),
    );
    await eventually(
      () => seen.slice(before).filter((m) => m.type === 'DBIRTH').length === 2,
      5000,
      'rebirth',
    );
    const reborn = seen.slice(before);
    assert.equal(reborn[0]!.type, 'NBIRTH');
    assert.equal(reborn[0]!.seq, 0);
    assert.deepEqual(
      reborn
        .filter((m) => m.type === 'DBIRTH')
        .map((m) => [m.device, m.seq, m.metrics.map((x) => x.name).sort()]),
      [
        ['Press1', 1, ['count', 'force']],
        ['Pump2', 2, ['running']],
      ],
    );
    v('Pump2', 'running', false, 'bool');
    await eventually(() => seen.at(-1)!.type === 'DDATA', 5000, 'data after rebirth');
    assert.equal(seen.at(-1)!.seq, 3);

    // A device command decoded onto the DataHub; a payload that is not Sparkplug is counted.
    const got: any[] = [];
    const sub = hub.subscribe('sp.cmd.>', (m) => got.push([m.subject, m.data]));
    await observer.publishAsync(
      'spBv1.0/plant/DCMD/edge1/Press1',
      encodePayload([{ name: 'setpoint', datatype: DataType.Double, value: 5 }], undefined),
    );
    await observer.publishAsync('spBv1.0/plant/DCMD/edge1/Press1', Buffer.from([0xff, 0xff, 0xff]));
    await eventually(() => got.length === 1, 5000, 'DCMD on the DataHub');
    assert.equal(got[0][0], 'sp.cmd.spBv1.0.plant.DCMD.edge1.Press1');
    assert.deepEqual(
      got[0][1].metrics.map((m: any) => [m.name, m.datatype, m.value]),
      [['setpoint', DataType.Double, 5]],
    );
    await eventually(async () => (await e.status(inst)).Counters.Malformed === 1, 5000, 'malformed counted');
    sub.unsubscribe();

    // Death: NDEATH carries the bdSeq of the NBIRTH.
    await e.ok(`mutation($input: UpdateInstanceRequest!) { UpdateInstance(input: $input) { Enabled } }`, {
      input: { InstanceID: inst, Enabled: false },
    });
    await eventually(
      () => seen.some((m) => m.type === 'NDEATH' && m.metrics[0].value === bdSeq.value),
      5000,
      'NDEATH of the last session',
    );
    const death = seen.filter((m) => m.type === 'NDEATH').at(-1)!;
    assert.equal(death.metrics.find((m) => m.name === 'bdSeq').value, bdSeq.value);
  });

  test('the MQTT will is the NDEATH: a broken connection publishes it', async () => {
    const inst = await e.createInstance('sparkplug-will', SPARKPLUG, {
      host: '127.0.0.1',
      port: broker.port,
      groupId: 'plant',
      edgeNodeId: 'edge2',
      keepalive: 1,
      reconnectInterval: 60_000,
    });
    await e.waitState(inst, 'Connected');
    const births = seen.filter((m) => m.topic === 'spBv1.0/plant/NBIRTH/edge2');
    assert.equal(births.length, 1);
    // Kick the node off the broker with a second client of the same id: the broker publishes its will.
    const thief = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, {
      clientId: 'millwright-sp-plant-edge2',
    });
    await eventually(() => seen.some((m) => m.topic === 'spBv1.0/plant/NDEATH/edge2'), 5000, 'will NDEATH');
    const death = seen.find((m) => m.topic === 'spBv1.0/plant/NDEATH/edge2')!;
    assert.equal(
      death.metrics.find((m) => m.name === 'bdSeq').value,
      births[0]!.metrics.find((m) => m.name === 'bdSeq').value,
    );
    await thief.endAsync(true);
    await e.waitState(inst, 'Disconnected');
  });
});
