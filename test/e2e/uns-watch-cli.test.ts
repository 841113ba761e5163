/** Issue 11: `millwright uns watch TOPIC` prints the UNS's MQTT messages without writing code. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { runCli, startCli, tempDirs } from '../helpers/cli.js';

const dirs = tempDirs('mw-uns-watch-');
after(() => dirs.removeAll());

test('`uns watch` prints retained and live messages as JSON lines, with an MQTT account', async () => {
  const dir = dirs.make();
  const made = await runCli([
    'uns',
    'account',
    'create',
    '--data-dir',
    dir,
    '--username',
    'dev1',
    '--password',
    'dev1-password',
    '--rule',
    'plant/#:PubSub',
  ]);
  assert.equal(made.code, 0, made.stderr);
  const uns = await startCli([
    'uns',
    '--port',
    '0',
    '--mqtt-port',
    '0',
    '--mqtts-port',
    '0',
    '--host',
    '127.0.0.1',
    '--data-dir',
    dir,
  ]);
  try {
    const mqttUrl = uns.ready.services.uns!.mqttUrl!;
    const pub = await mqtt.connectAsync(mqttUrl, { username: 'dev1', password: 'dev1-password' });
    await pub.publishAsync('plant/line1/temp', JSON.stringify({ v: 21.5 }), { retain: true, qos: 1 });
    await pub.publishAsync('plant/line1/state', 'running', { retain: true, qos: 1 });
    await pub.endAsync();
    const r = await runCli([
      'uns',
      'watch',
      'plant/#',
      '--mqtt-url',
      mqttUrl,
      '--username',
      'dev1',
      '--password',
      'dev1-password',
      '--json',
      '--count',
      '2',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { topic: string; payload: unknown; retain: boolean });
    const byTopic = new Map(lines.map((l) => [l.topic, l]));
    assert.deepEqual(byTopic.get('plant/line1/temp')!.payload, { v: 21.5 });
    assert.equal(byTopic.get('plant/line1/state')!.payload, 'running');
    assert.equal(byTopic.get('plant/line1/state')!.retain, true);

    const refused = await runCli(['uns', 'watch', 'plant/#', '--mqtt-url', mqttUrl]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--username and --password/);
  } finally {
    await uns.stop();
  }
});
