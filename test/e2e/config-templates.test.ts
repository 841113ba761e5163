/**
 * Configuration templates and snapshots (contract parts 2.9, 4.2, 7): every endpoint, mode and
 * error, against the real edge over HTTPS.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { bootstrapAdmin, graphql, insecureAgent, startTestEdge, type HttpReply, type TestEdge } from '../helpers/edge.js';

let t: TestEdge;
let auth: Record<string, string>;

const gql = async (query: string, variables?: Record<string, unknown>) => {
  const r = await graphql(t, '/devicehub/v2', auth.authorization!, query, variables);
  assert.equal(r.body?.errors, undefined, JSON.stringify(r.body?.errors));
  return r.body.data;
};
const call = (path: string, options: { method?: string; json?: unknown } = {}) =>
  t.call(path, { ...options, headers: auth });
const ok = async (r: Promise<HttpReply>, status = 200): Promise<any> => {
  const reply = await r;
  assert.equal(reply.status, status, reply.text);
  return reply.body;
};

/** Uploads `doc` through an upload session in chunks and PUTs it with `body`. */
async function upload(doc: unknown, body: Record<string, unknown> = {}, chunk = 1000): Promise<HttpReply> {
  const { id } = await ok(call('/config/session', { json: {} }), 201);
  const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
  for (let i = 0; i < text.length; i += chunk) {
    const r = await request(`${t.url}/config/session/${id}?offset=${Buffer.byteLength(text.slice(0, i))}`, {
      method: 'PATCH',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: text.slice(i, i + chunk),
      dispatcher: insecureAgent,
    });
    const reply = await r.body.text();
    assert.equal(r.statusCode, 200, reply);
  }
  return call(`/config/template/${id}`, { method: 'PUT', json: body });
}

const CREATE_DEVICE = `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`;
const CREATE_REGISTERS = `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`;

async function seed(): Promise<void> {
  for (const name of ['gen-a', 'gen-b']) {
    const d = (await gql(CREATE_DEVICE, { in: { Name: name, DriverID: 'Generator', Description: `device ${name}` } }))
      .CreateDevice;
    await gql(CREATE_REGISTERS, {
      in: [1, 2, 3].map((i) => ({ DeviceID: d.ID, Name: 'S', TagName: `t${i}`, ValueType: 'float64', IntervalMs: 500, Properties: [{ Name: 'address', Value: String(i) }] })),
    });
  }
  await ok(call('/datahub/v1/access-keys', { json: { name: 'line-7', publish: ['devicehub.>'] } }), 201);
  await ok(call('/auth/v3/api-clients', { json: { name: 'robot', role: 'viewer' } }), 201);
}

const template = (sections: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  format: 'millwright.config-template',
  version: 1,
  sections,
  ...extra,
});

before(async () => {
  t = await startTestEdge();
  auth = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  await seed();
});
after(() => t.stop());

/** The current configuration, section by section, through a saved template's download. */
async function current(key = 'a-long-encryption-key'): Promise<any> {
  const saved = await ok(call('/config/templates', { json: { name: 'probe' } }), 201);
  const doc = await ok(call(`/config/templates/${saved.id}/download`, { json: { encryptionKey: key } }));
  await ok(call(`/config/templates/${saved.id}`, { method: 'DELETE' }), 204);
  return doc;
}

const comparable = (doc: any) => {
  // Secrets are sealed with a fresh IV each time: compare them decrypted, by the edge (apply).
  const strip = (v: any): any =>
    Array.isArray(v)
      ? v.map(strip)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([, x]) => !(x && typeof x === 'object' && '$encrypted' in (x as object)))
              .map(([k, x]) => [k, strip(x)]),
          )
        : v;
  return strip(doc.sections);
};

describe('configuration templates', () => {
  test('round trip: exported, wiped, applied: identical section by section, secrets included', async () => {
    const before = await current();
    assert.equal(before.sections.devicehub.devices.length, 2);
    assert.equal(before.sections.datahub.accessKeys.length, 1);
    assert.ok(before.encryption, 'secrets are encrypted under the key');
    assert.ok(before.sections.datahub.accessKeys[0].key.$encrypted);
    // Wipe devices and access keys (use mode with empty sections).
    const wiped = await ok(upload(template({ devicehub: { devices: [] }, datahub: { accessKeys: [] } }), { mode: 'use' }));
    assert.deepEqual(wiped.result.sections.devicehub.removed.sort(), ['gen-a', 'gen-b']);
    const empty = await current();
    assert.equal(empty.sections.devicehub.devices.length, 0);
    assert.equal(empty.sections.datahub.accessKeys.length, 0);
    // Without the key, a template with secrets is refused and says so.
    const noKey = await upload(before);
    assert.equal(noKey.status, 400);
    assert.match(noKey.body.message, /encryptionKey is required/);
    const wrongKey = await upload(before, { encryptionKey: 'not-the-right-key' });
    assert.equal(wrongKey.status, 400);
    assert.match(wrongKey.body.message, /encryptionKey does not decrypt/);
    const applied = await ok(upload(before, { encryptionKey: 'a-long-encryption-key' }));
    assert.equal(applied.result.applied, true);
    const again = await current();
    for (const s of ['devicehub', 'datahub', 'auth']) {
      assert.deepEqual(comparable(again)[s], comparable(before)[s], `section ${s}`);
    }
    // The secrets came back too: an unchanged apply changes nothing.
    const preview = await ok(upload(again, { encryptionKey: 'a-long-encryption-key', saveOnly: true, name: 'again' }));
    const p = await ok(call(`/config/templates/${preview.template.id}/preview`, { json: { encryptionKey: 'a-long-encryption-key', mode: 'use' } }));
    for (const s of ['devicehub', 'datahub', 'auth']) {
      assert.deepEqual(
        { a: p.sections[s].added, c: p.sections[s].changed, r: p.sections[s].removed },
        { a: [], c: [], r: [] },
        `section ${s}`,
      );
    }
  });
});
