/**
 * Form labels made from property names (src/kernel/labels.ts), and every label of the two
 * catalogues that describe forms: the driver catalogue (device, tag and table-column properties)
 * and the integrations' provider catalogue. A label is sentence case, writes the protocol's
 * acronyms as they are written, and never shows a split acronym ("Qo S") or a bare "Id"/"Url".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nameWords, propertyLabel } from '../../src/kernel/labels.js';
import { DRIVERS } from '../../src/edge/devicehub/catalogue/index.js';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';

test('names become labels: acronyms, expansions, units', () => {
  const cases: [string, string, string][] = [
    ['willQoS', '', 'Will QoS'],
    ['qos', '', 'QoS'],
    ['caCert', '', 'CA certificate'],
    ['clientCert', '', 'Client certificate'],
    ['clientId', '', 'Client ID'],
    ['endpointUrl', '', 'Endpoint URL'],
    ['maxOidsPerRequest', '', 'Max OIDs per request'],
    ['PLCProgramChangeAction', '', 'PLC program change action'],
    ['DefaultInputArgumentsOPCUAMethod', '', 'Default input arguments OPC UA method'],
    ['sasTokenTtl', 'lifetime of a generated SAS token, seconds', 'SAS token TTL (s)'],
    ['requestTimeoutMs', 'time to wait for an answer', 'Request timeout (ms)'],
    ['reconnectInterval', 'wait before a new connection attempt, ms', 'Reconnect interval (ms)'],
    ['readTimeout', 'time to wait, in milliseconds', 'Read timeout (ms)'],
    ['KeepAlive', 'seconds between keep-alive probes', 'Keep-alive (s)'],
    ['keepalive', 'keepalive, seconds', 'Keep-alive (s)'],
    ['keepAliveSeconds', 'MQTT keep-alive interval', 'Keep-alive (s)'],
    ['queueMaxBytes', 'largest size of the queue, bytes', 'Queue max bytes'],
    ['host', '', 'Host'],
    ['tls', '', 'TLS'],
    ['jetstream', '', 'JetStream'],
  ];
  for (const [name, description, label] of cases) assert.equal(propertyLabel(name, description), label, name);
  assert.deepEqual(nameWords('willQoS'), ['will', 'Qos']);
  assert.deepEqual(nameWords('OPCUAMethod'), ['OPCUA', 'Method']);
});

/** Every label shown in a form of the console, with where it comes from. */
function catalogueLabels(): { where: string; name: string; label: string }[] {
  const out: { where: string; name: string; label: string }[] = [];
  for (const d of DRIVERS) {
    for (const p of d.properties) {
      out.push({ where: `driver ${d.name}`, name: p.name, label: p.label });
      for (const c of p.columns ?? [])
        out.push({ where: `driver ${d.name} ${p.name}`, name: c.name, label: c.label });
    }
    for (const r of d.registers)
      for (const p of r.properties)
        out.push({ where: `driver ${d.name} ${r.name}`, name: p.name, label: p.label });
  }
  for (const pr of PROVIDERS)
    for (const p of pr.properties) out.push({ where: `provider ${pr.name}`, name: p.name, label: p.label });
  return out;
}

test('every label of the driver and provider catalogues reads as a label', () => {
  const labels = catalogueLabels();
  assert.ok(labels.length > 500, `${labels.length} labels`);
  const bad = labels.filter(({ label }) => {
    const words = label.split(/[\s()]+/).filter(Boolean);
    return (
      // a split acronym or a lone capital letter ("Qo S", "Ca Cert" reads "Ca"), a bare Id/Url/Ms
      /\bQo S\b|\b[A-Z]\b(?! \()/.test(label) ||
      words.some((w) =>
        ['Id', 'Url', 'Ms', 'Ca', 'Tls', 'Qos', 'Oid', 'Cov', 'Ttl', 'Sas', 'Json'].includes(w),
      ) ||
      // sentence case: after the first word, a capital only in an acronym (two capitals or more)
      words.slice(1).some((w) => /^[A-Z][a-z]+$/.test(w) && !['JetStream'].includes(w)) ||
      !/^[A-Z0-9]/.test(label)
    );
  });
  assert.deepEqual(bad, [], 'labels that do not read as labels');
  // The ones the issue named, where they are shown.
  const mqtt = PROVIDERS.find((p) => p.key === 'mqtt')!;
  const byName = new Map(mqtt.properties.map((p) => [p.name, p.label]));
  assert.equal(byName.get('willQoS'), 'Will QoS');
  assert.equal(byName.get('caCert'), 'CA certificate');
  assert.equal(byName.get('clientId'), 'Client ID');
});
