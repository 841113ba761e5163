/**
 * The MQTT driver end to end against Mosquitto (a broker of the test's own on a free port):
 * browse the topics, tags from the browse selection, values on NATS from JSON paths, a write
 * published back to the broker, the broker stopped (Failed, reconnect attempts) and restarted
 * (OK). Skipped with a reason when mosquitto is absent (and failing on CI).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import mqtt, { type MqttClient } from 'mqtt';
import { StringCodec } from 'nats';
import { browseAll, nextMessage, startAcqEdge, type AcqEdge } from '../edge/acquisition/support.js';
import { Mosquitto } from '../helpers/peers/mosquitto.js';
import { eventually, skipUnless } from '../helpers/util.js';

const sc = StringCodec();
const skip = existsSync('/usr/sbin/mosquitto') ? false : skipUnless('mosquitto');
if (skip) console.log(`# acquisition-mqtt skipped: ${skip}`);

describe('acquisition: MQTT', { skip }, () => {
  let e: AcqEdge;
  const broker = new Mosquitto();
  let client: MqttClient;
  let dev: string;
  let speedId: string;

  before(async () => {
    e = await startAcqEdge();
    await broker.start();
    client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { reconnectPeriod: 200 });
    client.on('error', () => undefined);
    await client.publishAsync('plant/line1/temp', JSON.stringify({ data: { temp: 21.5 }, ok: true }), {
      retain: true,
    });
    await client.publishAsync('plant/line1/state', 'running', { retain: true });
    dev = await e.createDevice('broker1', 'MQTT', { host: '127.0.0.1', port: String(broker.port) });
  });
  after(async () => {
    await client?.endAsync(true);
    await broker.stop();
    await e.stop();
  });

  test('browsing lists topics and the fields of JSON payloads; tags from the selection read them', async () => {
    const items = await browseAll(e, dev, 10_000);
    const temp = items.get('plant/line1/temp/data.temp');
    assert.ok(temp, [...items.keys()].join(', '));
    assert.equal(temp.RegisterName, 'Topic');
    assert.equal(temp.ValueType, 'float64');
    assert.deepEqual(temp.Properties, [
      { Name: 'topic', Value: 'plant/line1/temp' },
      { Name: 'jsonPath', Value: '$.data.temp' },
    ]);
    assert.ok(items.get('plant/line1/state'));
    // Retained values arrive once, right after the engine subscribes: listen first.
    const tempMsg = nextMessage(e.nc, 'devicehub.raw.broker1.data_temp', (x) => x.success);
    const stateMsg = nextMessage(e.nc, 'devicehub.raw.broker1.state', (x) => x.success);
    const created = await e.ok(
      `mutation($in: CreateRegistersByFoldersSelectionRequest!) { BrowseTask_CreateRegistersByFoldersSelection(input: $in) { Created } }`,
      { in: { TaskID: (items as any).taskId, Folders: ['plant'], Recursive: true } },
    );
    assert.ok(created.BrowseTask_CreateRegistersByFoldersSelection.Created >= 3);
    const p = await tempMsg;
    assert.equal(p.value, 21.5);
    assert.equal(p.datatype, 'float64');
    assert.equal((await stateMsg).value, 'running');
    const next = nextMessage(e.nc, 'devicehub.raw.broker1.data_temp', (x) => x.value === 22);
    await client.publishAsync('plant/line1/temp', JSON.stringify({ data: { temp: 22 } }));
    await next;
  });

  test('a tag of its own with a JSON path; a write through Command is published on the topic', async () => {
    const [id] = await e.createTags(dev, [
      {
        Name: 'Topic',
        TagName: 'speed',
        ValueType: 'int64',
        Properties: { topic: 'plant/line1/speed', jsonPath: '$.v' },
      },
    ]);
    const seen = new Promise<string>((resolve) => {
      client.on('message', (topic, payload) => {
        if (topic === 'plant/line1/speed') resolve(payload.toString());
      });
    });
    await client.subscribeAsync('plant/line1/speed');
    // Let the engine subscribe before writing.
    await eventually(() => e.t.edge.acquisition.deviceStatus(dev)?.tags === 4, 3000, 'tag picked up');
    // No event says that the engine has subscribed on the broker.
    await new Promise((r) => setTimeout(r, 200));
    const readBack = nextMessage(e.nc, 'devicehub.raw.broker1.speed', (x) => x.value === 1500);
    const r = await e.nc.request('devicehub.command.broker1.speed', sc.encode('1500'), { timeout: 3000 });
    assert.equal(r.json<{ success: boolean }>().success, true);
    assert.deepEqual(JSON.parse(await seen), { v: 1500 });
    const p = await readBack;
    assert.equal(p.registerId, id);
    speedId = id!;
    await eventually(async () => (await e.tagStates([id!]))[0]!.State === 'OK', 3000, 'OK');
  });

  test('stopping the broker fails the tags; restarting it reconnects and values flow again', async () => {
    const ids = (
      await e.ok(`query($in: ListRegistersRequest!) { ListRegisters(input: $in) { Registers { ID } } }`, {
        in: { DeviceID: dev },
      })
    ).ListRegisters.Registers.map((r: { ID: string }) => r.ID);
    const failed = nextMessage(e.nc, 'devicehub.raw.broker1.speed', (x) => x.success === false, 8000);
    await broker.stop();
    assert.match((await failed).error, /closed|not connected/);
    await eventually(async () => (await e.tagStates(ids)).every((s) => s.State === 'Failed'), 5000, 'Failed');
    assert.notEqual(e.t.edge.acquisition.deviceStatus(dev)!.state, 'connected');
    await broker.start();
    await eventually(
      () => e.t.edge.acquisition.deviceStatus(dev)!.state === 'connected',
      15_000,
      'reconnected',
    );
    await eventually(() => client.connected, 5000, 'test client back');
    const back = nextMessage(e.nc, 'devicehub.raw.broker1.speed', (x) => x.success && x.value === 7);
    // The engine subscribes right after it reconnects: publish until the value comes through.
    let got = false;
    void back.then(() => (got = true));
    while (!got) {
      await client.publishAsync('plant/line1/speed', '{"v": 7}').catch(() => undefined);
      await Promise.race([back, new Promise((r) => setTimeout(r, 200))]);
    }
    await back;
    await eventually(async () => (await e.tagStates([speedId]))[0]!.State === 'OK', 3000, 'OK again');
  });
});
