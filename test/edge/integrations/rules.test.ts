/** The instance state machine, remote and local names, and the provider config rules as units. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canMove, INSTANCE_STATES, StateMachine } from '../../../src/edge/integrations/state.js';
import { localSubject, remoteTopic } from '../../../src/edge/integrations/runner.js';
import { mqttMatch } from '../../../src/edge/integrations/connectors/mqtt.js';
import { DataHub } from '../../../src/edge/datahub/index.js';
import { PROVIDERS, uuidv5 } from '../../../src/edge/integrations/catalogue.js';
import { validateConfig } from '../../../src/edge/integrations/validation.js';

test('state machine: the documented moves and no others', () => {
  const allowed = new Set([
    'Configured>Connecting',
    'Configured>Disabled',
    'Connecting>Connected',
    'Connecting>Disconnected',
    'Connecting>Disabled',
    'Connected>Disconnected',
    'Connected>Disabled',
    'Disconnected>Connecting',
    'Disconnected>Disabled',
    'Disabled>Configured',
  ]);
  for (const from of INSTANCE_STATES) {
    for (const to of INSTANCE_STATES)
      assert.equal(canMove(from, to), allowed.has(`${from}>${to}`), `${from} → ${to}`);
  }
  const m = new StateMachine();
  m.move('Connecting');
  m.move('Disconnected', 'ECONNREFUSED');
  assert.equal(m.reason, 'ECONNREFUSED');
  assert.throws(() => m.move('Connected'), /cannot move from Disconnected to Connected/);
});

test('remote topics from templates; local subjects from remote topics; MQTT filters', () => {
  const hub = new DataHub();
  let msg: any;
  hub.subscribe('>', (m) => (msg = m));
  hub.publish('devicehub.raw.press1.force', { deviceName: 'Press 1', tagName: 'force', value: 1 });
  assert.equal(remoteTopic('plant/{device}/{tag}', msg, '/'), 'plant/Press 1/force');
  assert.equal(remoteTopic('x/{subject}', msg, '/'), 'x/devicehub/raw/press1/force');
  assert.equal(remoteTopic('x.{subject}', msg, '.'), 'x.devicehub.raw.press1.force');
  assert.equal(remoteTopic('{3}-{4}', msg, '/'), 'press1-force');
  assert.equal(remoteTopic('fixed', msg, '/'), 'fixed');
  assert.equal(localSubject('r.{topic}', 'a/b c/+/d.e'), 'r.a.b_c.+.d.e');
  assert.equal(localSubject('fixed.subject', 'a/b'), 'fixed.subject');
  assert.ok(mqttMatch('a/+/c', 'a/b/c'));
  assert.ok(mqttMatch('a/#', 'a/b/c'));
  assert.ok(mqttMatch('a/#', 'a'));
  assert.ok(!mqttMatch('a/+', 'a/b/c'));
  assert.ok(!mqttMatch('#', '$SYS/x'));
});

test('provider IDs: version-5 UUIDs, unique, the same for the same name', () => {
  const ids = PROVIDERS.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length);
  assert.equal(uuidv5('x'), uuidv5('x'));
  // RFC 4122 test vector: uuid5(DNS namespace, "www.example.com").
  assert.equal(
    uuidv5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'),
    '2ed6657d-e927-568b-95e1-2665a8aea6a2',
  );
  for (const p of PROVIDERS) {
    assert.equal(p.name.endsWith('(Gen 1)'), p.flavour === 'gen1', p.name);
  }
});

test('config rules: defaults applied, enumerations, conditional requirements', () => {
  const mqtt = PROVIDERS.find((p) => p.key === 'mqtt')!;
  const c = validateConfig(mqtt, { host: 'h', port: '1884', tls: 'false' });
  assert.equal(c.port, 1884);
  assert.equal(c.tls, false);
  assert.equal(c.qos, 1);
  assert.equal(c.queueFullPolicy, 'drop-oldest');
  assert.throws(
    () => validateConfig(mqtt, { host: 'h', tls: true }),
    /"caCert" is required when tls is true/,
  );
  const cms = PROVIDERS.find((p) => p.key === 'cloud-message-service')!;
  assert.throws(() => validateConfig(cms, { host: 'h', qos: 2 }), /"qos": must be one of 0, 1, got 2/);
  assert.throws(() => validateConfig(cms, { host: 'h', willQoS: '2' }), /"willQoS": must be one of 0, 1/);
});
