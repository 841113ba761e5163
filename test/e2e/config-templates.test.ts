/**
 * Configuration templates and snapshots (contract parts 2.9, 4.2, 7): every endpoint, mode and
 * error, against the real edge over HTTPS.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import {
  bootstrapAdmin,
  graphql,
  insecureAgent,
  startTestEdge,
  type HttpReply,
  type TestEdge,
} from '../helpers/edge.js';
import { applyTemplate } from '../helpers/config.js';
import { ERRORS } from '../../src/kernel/errors.js';

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
    const d = (
      await gql(CREATE_DEVICE, { in: { Name: name, DriverID: 'Generator', Description: `device ${name}` } })
    ).CreateDevice;
    await gql(CREATE_REGISTERS, {
      in: [1, 2, 3].map((i) => ({
        DeviceID: d.ID,
        Name: 'S',
        TagName: `t${i}`,
        ValueType: 'float64',
        IntervalMs: 500,
        Properties: [{ Name: 'address', Value: String(i) }],
      })),
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
    const wiped = await ok(
      upload(template({ devicehub: { devices: [] }, datahub: { accessKeys: [] } }), { mode: 'use' }),
    );
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
    const preview = await ok(
      upload(again, { encryptionKey: 'a-long-encryption-key', saveOnly: true, name: 'again' }),
    );
    const p = await ok(
      call(`/config/templates/${preview.template.id}/preview`, {
        json: { encryptionKey: 'a-long-encryption-key', mode: 'use' },
      }),
    );
    for (const s of ['devicehub', 'datahub', 'auth']) {
      assert.deepEqual(
        { a: p.sections[s].added, c: p.sections[s].changed, r: p.sections[s].removed },
        { a: [], c: [], r: [] },
        `section ${s}`,
      );
    }
  });
});

describe('saved templates, modes and snapshots', () => {
  test('saved templates: create, list (REST list), read, update, download GET/POST, delete, bulk delete', async () => {
    const a = await ok(call('/config/templates', { json: { name: 'a', description: 'first' } }), 201);
    const b = await ok(call('/config/templates', { json: { name: 'b' } }), 201);
    assert.deepEqual(
      a.sections,
      [
        'analytics',
        'auth',
        'datahub',
        'devicehub',
        'history',
        'integrations',
        'logForwarding',
        'opcua',
        'twins',
      ]
        .filter((s) => a.sections.includes(s))
        .sort((x: string, y: string) => a.sections.indexOf(x) - a.sections.indexOf(y)),
    );
    assert.ok(a.sections.includes('opcua'), 'the OPC UA server has a section');
    assert.ok(a.sections.includes('integrations'), 'the integrations have a section');
    const list = await ok(call('/config/templates?limit=1&sort=name:desc'));
    assert.equal(list.limit, 1);
    assert.equal(list.offset, 0);
    assert.ok(list.total >= 2);
    assert.equal(list.items.length, 1);
    assert.equal((await ok(call(`/config/templates/${a.id}`))).description, 'first');
    const renamed = await ok(
      call(`/config/templates/${a.id}`, { method: 'PUT', json: { name: 'a2', description: 'renamed' } }),
    );
    assert.equal(renamed.name, 'a2');
    const plain = await ok(call(`/config/templates/${a.id}/download`));
    assert.equal(plain.format, 'millwright.config-template');
    assert.equal(plain.encryption, undefined);
    assert.equal(plain.sections.datahub.accessKeys[0].key, undefined, 'no secrets without a key');
    assert.ok(!JSON.stringify(plain).includes('$secret'));
    const sealed = await ok(
      call(`/config/templates/${a.id}/download`, { json: { encryptionKey: 'another-long-key' } }),
    );
    assert.equal(sealed.encryption.kdf, 'scrypt');
    assert.ok(!JSON.stringify(sealed).includes('$secret'));
    const bulk = await ok(call('/config/templates/delete', { json: { ids: [a.id, b.id, 'nope'] } }));
    assert.deepEqual(bulk.deleted.sort(), [a.id, b.id].sort());
    assert.deepEqual(bulk.notFound, ['nope']);
    assert.equal((await call(`/config/templates/${a.id}`)).status, 404);
    const c = await ok(call('/config/templates', { json: { name: 'c' } }), 201);
    await ok(call(`/config/templates/${c.id}`, { method: 'DELETE' }), 204);
    assert.equal((await call(`/config/templates/${c.id}`, { method: 'DELETE' })).status, 404);
  });

  test('preview and apply by mode; saveOnly; parameters keyed by section', async () => {
    const tpl = template(
      {
        devicehub: {
          devices: [
            {
              Name: 'gen-a',
              DriverID: 'Generator',
              Description: '{{desc}}',
              Tags: [{ TagName: 't9', Name: 'S', ValueType: 'float64', Properties: { address: '9' } }],
            },
            { Name: 'gen-new', DriverID: 'Generator' },
          ],
        },
      },
      { parameters: { devicehub: { desc: 'from the template' } } },
    );
    const saved = await ok(upload(tpl, { name: 'modes', saveOnly: true }));
    assert.equal(saved.result, undefined, 'saveOnly does not apply');
    const id = saved.template.id;
    const legacy = await ok(call(`/config/templates/${id}/preview`, { json: {} }));
    assert.equal(legacy.mode, 'legacy');
    assert.deepEqual(legacy.sections.devicehub.added.sort(), ['gen-a/t9', 'gen-new']);
    assert.deepEqual(legacy.sections.devicehub.changed, ['gen-a']);
    assert.deepEqual(legacy.sections.devicehub.removed, []);
    const use = await ok(call(`/config/templates/${id}/preview`, { json: { mode: 'use' } }));
    assert.deepEqual(use.sections.devicehub.removed.sort(), ['gen-a/t1', 'gen-a/t2', 'gen-a/t3', 'gen-b']);
    const merge = await ok(call(`/config/templates/${id}/preview`, { json: { mode: 'merge-apply' } }));
    assert.deepEqual(merge.restarts, ['acquisition']);
    assert.deepEqual(merge.sections.devicehub.removed, []);
    // Nothing changed by previews.
    assert.equal((await current()).sections.devicehub.devices.length, 2);

    const applied = await ok(
      call(`/config/templates/${id}/apply`, {
        json: { mode: 'merge-apply', parameters: { devicehub: { desc: 'given' } } },
      }),
    );
    assert.deepEqual(applied.restarted, ['acquisition']);
    const after1 = await current();
    const genA = after1.sections.devicehub.devices.find((d: any) => d.Name === 'gen-a');
    assert.equal(genA.Description, 'given');
    assert.deepEqual(genA.Tags.map((x: any) => x.TagName).sort(), ['t1', 't2', 't3', 't9']);
    // use: each section in the template becomes exactly the template; other sections untouched.
    const keysBefore = after1.sections.datahub.accessKeys.length;
    await ok(call(`/config/templates/${id}/apply`, { json: { mode: 'use' } }));
    const after2 = await current();
    assert.deepEqual(after2.sections.devicehub.devices.map((d: any) => d.Name).sort(), ['gen-a', 'gen-new']);
    assert.deepEqual(
      after2.sections.devicehub.devices.find((d: any) => d.Name === 'gen-a').Tags.map((x: any) => x.TagName),
      ['t9'],
    );
    assert.equal(
      after2.sections.devicehub.devices.find((d: any) => d.Name === 'gen-a').Description,
      'from the template',
    );
    assert.equal(after2.sections.datahub.accessKeys.length, keysBefore);

    // Rolling back: the snapshot taken before the last apply, applied with no mode.
    const snaps = await ok(call('/config/snapshots'));
    assert.equal(snaps.items[0].id, (await ok(call('/config/snapshots'))).items[0].id);
    await ok(call(`/config/templates/${snaps.items[0].id}/apply`, { json: {} }));
    const back = await current();
    assert.deepEqual(
      back.sections.devicehub.devices
        .find((d: any) => d.Name === 'gen-a')
        .Tags.map((x: any) => x.TagName)
        .sort(),
      ['t1', 't2', 't3', 't9'],
    );
    assert.deepEqual(back.sections.devicehub.devices.map((d: any) => d.Name).sort(), [
      'gen-a',
      'gen-b',
      'gen-new',
    ]);
  });

  test('a merge-apply preview of the edge configuration itself changes nothing and restarts nothing', async () => {
    const own = await current();
    const saved = await ok(
      upload(own, { encryptionKey: 'a-long-encryption-key', saveOnly: true, name: 'own' }),
    );
    for (const mode of ['merge-apply', 'legacy', 'use']) {
      const p = await ok(
        call(`/config/templates/${saved.template.id}/preview`, {
          json: { encryptionKey: 'a-long-encryption-key', mode },
        }),
      );
      assert.deepEqual(p.restarts, [], `restarts of ${mode}`);
      for (const [name, s] of Object.entries<any>(p.sections))
        assert.deepEqual(
          { a: s.added, c: s.changed, r: s.removed, restarts: s.restarts },
          { a: [], c: [], r: [], restarts: [] },
          `${mode}: section ${name}`,
        );
    }
    // Applied, it restarts nothing either.
    const applied = await ok(
      call(`/config/templates/${saved.template.id}/apply`, {
        json: { encryptionKey: 'a-long-encryption-key', mode: 'merge-apply' },
      }),
    );
    assert.deepEqual(applied.restarted, []);
    await ok(call(`/config/templates/${saved.template.id}`, { method: 'DELETE' }), 204);
    // An access key changed alone: its connections restart, the acquisition engine does not.
    const key = { ...own.sections.datahub.accessKeys[0], name: 'renamed-by-merge' };
    const renamed = await ok(
      upload(
        { ...own, sections: { datahub: { accessKeys: [key] } } },
        { encryptionKey: 'a-long-encryption-key', mode: 'merge-apply' },
      ),
    );
    assert.deepEqual(renamed.result.sections.datahub.changed, [key.id]);
    assert.deepEqual(renamed.result.restarts, [
      'datahub: NATS connections of changed or removed access keys',
    ]);
    assert.deepEqual(renamed.result.restarted, []);
  });

  test('failFast false reports the items that failed and applies the rest; failFast true applies nothing', async () => {
    const tpl = template({
      datahub: { accessKeys: [{ id: 'no-secret-key', name: 'orphan', publish: null, subscribe: null }] },
      devicehub: { devices: [{ Name: 'gen-ff', DriverID: 'Generator' }] },
    });
    const all = await upload(tpl, {});
    assert.equal(all.status, 409, all.text);
    assert.match(all.body.message, /accessKeys\[0\].*no key in the template/);
    assert.match(all.body.message, /nothing was applied/);
    assert.ok(!(await current()).sections.devicehub.devices.some((d: any) => d.Name === 'gen-ff'));
    const some = await ok(upload(tpl, { failFast: false }));
    assert.equal(some.result.failed.length, 1);
    assert.match(some.result.failed[0].item, /datahub: accessKeys\[0\]/);
    assert.ok((await current()).sections.devicehub.devices.some((d: any) => d.Name === 'gen-ff'));
  });

  test('merge: the union saved as a new template; overwriting needs confirm_overwrite (409 confirm_required)', async () => {
    const tpl = template({
      devicehub: {
        devices: [
          { Name: 'gen-b', DriverID: 'Generator', Description: 'changed' },
          { Name: 'gen-m', DriverID: 'Generator' },
        ],
      },
    });
    const saved = await ok(upload(tpl, { name: 'to-merge', saveOnly: true }));
    const refused = await call(`/config/templates/${saved.template.id}/merge`, { json: {} });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.code, ERRORS.confirmRequired.code);
    assert.deepEqual(refused.body.details.overwrites.devicehub, ['gen-b']);
    const merged = await ok(
      call(`/config/templates/${saved.template.id}/merge`, {
        json: { confirm_overwrite: true, name: 'merged' },
      }),
      201,
    );
    assert.equal(merged.name, 'merged');
    const doc = await ok(call(`/config/templates/${merged.id}/download`));
    const names = doc.sections.devicehub.devices.map((d: any) => d.Name).sort();
    assert.ok(names.includes('gen-m') && names.includes('gen-a') && names.includes('gen-b'));
    assert.equal(doc.sections.devicehub.devices.find((d: any) => d.Name === 'gen-b').Description, 'changed');
    // A template that adds only: no confirmation needed.
    const adds = await ok(
      upload(template({ devicehub: { devices: [{ Name: 'gen-only-new', DriverID: 'Generator' }] } }), {
        name: 'adds',
        saveOnly: true,
      }),
    );
    await ok(call(`/config/templates/${adds.template.id}/merge`, { json: {} }), 201);
  });

  test('snapshots: capture, list, prune bounded per call with truncated, the most recent is kept', async () => {
    for (let i = 0; i < 8; i++) await ok(call('/config/snapshots', { json: { reason: `s${i}` } }), 201);
    const list = await ok(call('/config/snapshots'));
    assert.ok(list.total >= 9);
    const latest = list.items[0];
    assert.equal(latest.reason, 's7');
    const refused = await call('/config/snapshots', { method: 'DELETE', json: { ids: [latest.id] } });
    assert.equal(refused.status, 409);
    assert.match(refused.body.message, /most recent snapshot/);
    let rounds = 0;
    for (;;) {
      const r = await ok(call('/config/snapshots', { method: 'DELETE', json: {} }));
      rounds++;
      assert.ok(r.deleted.length <= 5);
      if (!r.truncated) break;
    }
    assert.ok(rounds >= 2);
    const left = await ok(call('/config/snapshots'));
    assert.equal(left.total, 1);
    assert.equal(left.items[0].id, latest.id);
  });
});

describe('errors of part 7', () => {
  test('unknown body fields: the contract text, marketplaceV2 included; marketplace accepted', async () => {
    const saved = await ok(call('/config/templates', { json: { name: 'errs' } }), 201);
    const cases: Array<[string, string, unknown]> = [
      ['POST', `/config/templates/${saved.id}/apply`, { marketplaceV2: true }],
      ['POST', `/config/templates/${saved.id}/preview`, { bogus: 1 }],
      ['POST', '/config/templates', { name: 'x', bogus: 1 }],
      ['PUT', `/config/templates/${saved.id}`, { bogus: 1 }],
      ['POST', '/config/templates/delete', { ids: ['x'], bogus: 1 }],
      ['POST', `/config/templates/${saved.id}/merge`, { confirmOverwrite: true }],
      ['POST', `/config/templates/${saved.id}/download`, { bogus: 1 }],
      ['POST', '/config/session', { bogus: 1 }],
      ['POST', '/config/snapshots', { bogus: 1 }],
      ['DELETE', '/config/snapshots', { bogus: 1 }],
    ];
    for (const [method, path, json] of cases) {
      const r = await call(path, { method, json });
      const field = Object.keys(json as object).find((k) => k !== 'name' && k !== 'ids')!;
      assert.equal(r.status, 400, `${method} ${path}`);
      assert.equal(
        r.body.message,
        `failed to decode request body: json: unknown field "${field}"`,
        `${method} ${path}`,
      );
    }
    const { id } = await ok(call('/config/session', { json: {} }), 201);
    const put = await call(`/config/template/${id}`, { method: 'PUT', json: { marketplaceV2: true } });
    assert.equal(put.body.message, 'failed to decode request body: json: unknown field "marketplaceV2"');
    await ok(call(`/config/templates/${saved.id}/preview`, { json: { marketplace: true } }));
  });

  test('a mode other than legacy, use, merge-apply is a 400', async () => {
    const saved = await ok(call('/config/templates', { json: { name: 'mode' } }), 201);
    for (const path of ['apply', 'preview']) {
      const r = await call(`/config/templates/${saved.id}/${path}`, { json: { mode: 'replace' } });
      assert.equal(r.status, 400);
      assert.match(r.body.message, /mode/);
    }
  });

  test('a malformed template is a 400 naming the section and the item, and nothing is applied', async () => {
    const before = await current();
    const cases: Array<[unknown, RegExp]> = [
      ['{ not json', /not JSON/],
      [template({ devicehub: { devices: {} } }), /section devicehub: devices: must be an array/],
      [
        template({
          devicehub: {
            devices: [
              {
                Name: 'x',
                DriverID: 'Generator',
                Tags: [{ TagName: 'a', Name: 'S', ValueType: 'float64', Properties: { address: '1' } }],
              },
              {
                Name: 'y',
                DriverID: 'NoSuchDriver',
                Tags: [{ TagName: 'b', Name: 'S', ValueType: 'float64' }],
              },
            ],
          },
        }),
        /section devicehub: devices\[1\]: .*DriverID "NoSuchDriver"/,
      ],
      [
        template({
          devicehub: {
            devices: [
              {
                Name: 'x',
                DriverID: 'Generator',
                Tags: [{ TagName: 'a', Name: 'S', ValueType: 'float64', Properties: { address: 'nope' } }],
              },
            ],
          },
        }),
        /section devicehub: devices\[0\]\.Tags\[0\]: .*address/,
      ],
      [
        template({ devicehub: { devices: [{ Name: 'x', DriverID: 'Generator', Extra: 1 }] } }),
        /devices\[0\]\.Extra: unknown field "Extra"/,
      ],
      [
        template({ datahub: { accessKeys: [{ id: 'k', name: 'k', publish: ['a..b'], subscribe: null }] } }),
        /section datahub: accessKeys\[0\]\.publish/,
      ],
      [template({ marketplaceV2: {} }), /section marketplaceV2: unknown section/],
      [
        template({ devicehub: { devices: [{ Name: '{{missing}}', DriverID: 'Generator' }] } }),
        /parameter "missing" has no value/,
      ],
      [{ ...template({}), version: 2 }, /version 2 is not supported/],
      [
        template({ devicehub: { devices: [] } }, { parameters: [] }),
        /parameters must be an object keyed by section/,
      ],
    ];
    for (const [doc, pattern] of cases) {
      const r = await upload(doc);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.message, pattern);
    }
    assert.deepEqual(comparable(await current()), comparable(before));
  });

  test('upload session: an out-of-order chunk is a 409, an unknown session a 404', async () => {
    const { id } = await ok(call('/config/session', { json: {} }), 201);
    const r = await request(`${t.url}/config/session/${id}?offset=5`, {
      method: 'PATCH',
      headers: { ...auth, 'content-type': 'application/octet-stream' },
      body: 'abc',
      dispatcher: insecureAgent,
    });
    assert.equal(r.statusCode, 409);
    await r.body.text();
    assert.equal((await call('/config/template/nope', { method: 'PUT', json: {} })).status, 404);
  });
  test('Idempotency-Key: the same apply sent twice is applied once; the second answers its outcome', async () => {
    const put = (key: string, name: string) =>
      applyTemplate(
        t,
        auth,
        template({ devicehub: { devices: [{ Name: name, DriverID: 'Generator', Description: 'idem' }] } }),
        { name: `saved-${key}` },
        { 'idempotency-key': key },
      );
    const snapshots = async () => (await ok(call('/config/snapshots'))).items.length as number;
    const key = `task-${Date.now()}`;
    const first = await put(key, 'gen-idem');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.result.replayed, undefined);
    const snapsAfterFirst = await snapshots();
    // Sent again (even with another document): nothing saved or applied, the first outcome answered.
    const again = await put(key, 'gen-idem-other');
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.result.replayed, true);
    assert.equal(again.body.result.snapshotId, first.body.result.snapshotId);
    assert.equal(again.body.template, undefined, 'not saved again');
    assert.equal(await snapshots(), snapsAfterFirst, 'no second apply (no snapshot)');
    const names = (await current()).sections.devicehub.devices.map((d: { Name: string }) => d.Name);
    assert.ok(names.includes('gen-idem') && !names.includes('gen-idem-other'), names.join(','));
    // Another key applies.
    const other = await put(`${key}-b`, 'gen-idem-b');
    assert.equal(other.status, 200, other.text);
    assert.equal(other.body.result.replayed, undefined);
    // A key that is not 1 to 200 visible characters is refused.
    const bad = await put('bad key with spaces', 'gen-bad');
    assert.equal(bad.status, 400);
    assert.match(bad.body.message, /Idempotency-Key must have 1 to 200 visible ASCII characters/);
  });
});
