/**
 * The integrations' section of configuration templates, on two real edges: an instance and its
 * subscription exported from one edge (its secret sealed under the encryption key, never in clear
 * text), applied to another, where the integration runs and sends with the secret; a template
 * without the key keeps the secret of an instance that exists; bad input is refused with an issue
 * naming the item, and nothing is applied.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PROVIDERS } from '../../src/edge/integrations/catalogue.js';
import { applyTemplate, templateOf } from '../helpers/config.js';
import { startIntegEdge, type IntegEdge } from '../helpers/integrations.js';
import { eventually } from '../helpers/util.js';

const TOKEN = 'ingest-token-7f3a9c-never-in-clear';
const KEY = 'a-long-encryption-key-for-integrations';
const providerId = (name: string) => PROVIDERS.find((p) => p.name === name)!.id;

let a: IntegEdge;
let b: IntegEdge;
let server: Server;
let url = '';
const received: Array<{ headers: IncomingHttpHeaders; body: any[] }> = [];

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method === 'POST') received.push({ headers: req.headers, body: JSON.parse(body) });
      res.writeHead(req.method === 'POST' ? 204 : 200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ingest`;
  [a, b] = await Promise.all([startIntegEdge(), startIntegEdge()]);
});
after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  server?.close();
});

const admin = (e: IntegEdge) => ({ authorization: e.auth });

/** The edge's configuration as it leaves the edge (through a saved template's download). */
async function download(e: IntegEdge, encryptionKey?: string): Promise<{ text: string; doc: any }> {
  const saved = await e.t.call('/config/templates', { json: { name: 'export' }, headers: admin(e) });
  assert.equal(saved.status, 201, saved.text);
  const doc = await e.t.call(`/config/templates/${saved.body.id}/download`, {
    ...(encryptionKey ? { json: { encryptionKey } } : {}),
    headers: admin(e),
  });
  assert.equal(doc.status, 200, doc.text);
  await e.t.call(`/config/templates/${saved.body.id}`, { method: 'DELETE', headers: admin(e) });
  return { text: doc.text, doc: doc.body };
}

const INSTANCES = `query { ListInstances(input: {}) { Items { ID Name ProviderName Enabled Config } Total } }`;
const SUBSCRIPTIONS = `query($in: ListSubscriptionsRequest!) {
  ListSubscriptions(input: $in) { Items { IsLocalToRemote LocalName RemoteName Enabled } Total } }`;

test('an instance exported from one edge runs on another, its secret sealed on the way', async () => {
  const id = await a.createInstance('ingest', providerId('Data Ingest'), {
    url,
    token: TOKEN,
    batchSize: 1,
    reconnectInterval: 200,
  });
  await a.subscribe(id, true, 'cfgtest.>', 'values');

  // Sealed under the key: the token is nowhere in the text, the rest is.
  const sealed = await download(a, KEY);
  assert.ok(!sealed.text.includes(TOKEN), 'the secret is not in clear text in the export');
  const exported = sealed.doc.sections.integrations.instances;
  assert.equal(exported.length, 1);
  assert.equal(exported[0].Name, 'ingest');
  assert.equal(exported[0].Config.url, url);
  assert.equal(typeof exported[0].Config.token.$encrypted, 'string');
  assert.deepEqual(
    exported[0].Subscriptions.map((s: any) => [s.IsLocalToRemote, s.LocalName, s.RemoteName]),
    [[true, 'cfgtest.>', 'values']],
  );
  // Without a key, the secret is left out.
  const plain = await download(a);
  assert.ok(!plain.text.includes(TOKEN));
  assert.equal(plain.doc.sections.integrations.instances[0].Config.token, undefined);

  // Edge B has no instance: the sealed template, applied with the key, makes it.
  const doc = { ...sealed.doc, sections: { integrations: sealed.doc.sections.integrations } };
  const applied = await applyTemplate(b.t, admin(b), doc, { encryptionKey: KEY, mode: 'use' });
  assert.equal(applied.status, 200, applied.text);
  assert.deepEqual(applied.body.result.sections.integrations.added, ['ingest']);
  assert.deepEqual(applied.body.result.restarts, []);
  const list = (await b.ok(INSTANCES)).ListInstances;
  assert.equal(list.Total, 1);
  const onB = list.Items[0];
  assert.equal(onB.Name, 'ingest');
  assert.equal(onB.ProviderName, 'Data Ingest');
  assert.notEqual(onB.ID, id, 'the instance ID is the edge its own');
  assert.equal(onB.Config.token, '********');
  const subs = (await b.ok(SUBSCRIPTIONS, { in: { InstanceID: onB.ID } })).ListSubscriptions;
  assert.deepEqual(subs.Items, [
    { IsLocalToRemote: true, LocalName: 'cfgtest.>', RemoteName: 'values', Enabled: true },
  ]);

  // It runs on B: a value published on B's DataHub reaches the endpoint, with the token.
  await b.waitState(onB.ID, 'Connected');
  b.t.edge.datahub.hub.publish('cfgtest.line.level', { value: 42 });
  await eventually(
    () => received.some((r) => r.body[0]?.subject === 'cfgtest.line.level'),
    10_000,
    'B sends',
  );
  const got = received.find((r) => r.body[0]?.subject === 'cfgtest.line.level')!;
  assert.equal(got.headers.authorization, `Bearer ${TOKEN}`);
  assert.equal(got.body[0].payload.value, 42);

  // The same template again changes nothing; so does the key-less one (the secret stays B's).
  for (const [what, d, body] of [
    ['sealed', doc, { encryptionKey: KEY }],
    ['plain', { ...plain.doc, sections: { integrations: plain.doc.sections.integrations } }, {}],
  ] as const) {
    const saved = await applyTemplate(b.t, admin(b), d, { ...body, saveOnly: true, name: `again-${what}` });
    assert.equal(saved.status, 200, saved.text);
    for (const mode of ['legacy', 'use', 'merge-apply']) {
      const p = await b.t.call(`/config/templates/${saved.body.template.id}/preview`, {
        json: { ...body, mode },
        headers: admin(b),
      });
      assert.equal(p.status, 200, p.text);
      const s = p.body.sections.integrations;
      assert.deepEqual([s.added, s.changed, s.removed], [[], [], []], `${what}, ${mode}`);
      assert.deepEqual(p.body.restarts, []);
    }
  }
  const plainDoc = { ...plain.doc, sections: { integrations: plain.doc.sections.integrations } };
  const again = await applyTemplate(b.t, admin(b), plainDoc, { mode: 'use' });
  assert.equal(again.status, 200, again.text);
  received.length = 0;
  b.t.edge.datahub.hub.publish('cfgtest.line.level', { value: 43 });
  await eventually(() => received.some((r) => r.body[0]?.payload.value === 43), 10_000, 'B sends again');
  assert.equal(
    received.find((r) => r.body[0]?.payload.value === 43)!.headers.authorization,
    `Bearer ${TOKEN}`,
  );
});

test('a changed subscription restarts the runner; mode use removes what the template does not have', async () => {
  const before = (await b.ok(INSTANCES)).ListInstances.Items[0];
  const tpl = templateOf({
    integrations: {
      instances: [
        {
          Name: 'ingest',
          ProviderID: 'Data Ingest',
          Config: { url, batchSize: 1, reconnectInterval: 200 },
          Subscriptions: [{ IsLocalToRemote: true, LocalName: 'moved.>', RemoteName: 'values' }],
        },
      ],
    },
  });
  const r = await applyTemplate(b.t, admin(b), tpl, { mode: 'use' });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.body.result.sections.integrations.changed, ['ingest']);
  const subs = (await b.ok(SUBSCRIPTIONS, { in: { InstanceID: before.ID } })).ListSubscriptions;
  assert.deepEqual(
    subs.Items.map((s: any) => s.LocalName),
    ['moved.>'],
  );
  await b.waitState(before.ID, 'Connected');
  received.length = 0;
  b.t.edge.datahub.hub.publish('moved.x', { value: 7 });
  await eventually(
    () => received.some((x) => x.body[0]?.subject === 'moved.x'),
    10_000,
    'the new subscription',
  );
  assert.equal(received[0]!.headers.authorization, `Bearer ${TOKEN}`, 'the token left out stays');

  const wiped = await applyTemplate(b.t, admin(b), templateOf({ integrations: { instances: [] } }), {
    mode: 'use',
  });
  assert.equal(wiped.status, 200, wiped.text);
  assert.deepEqual(wiped.body.result.sections.integrations.removed, ['ingest']);
  assert.equal((await b.ok(INSTANCES)).ListInstances.Total, 0);
});

test('bad input: a clear issue naming the item, and nothing applied', async () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ instances: {} }, /section integrations: instances: must be an array/],
    [
      { instances: [{ Name: 'x', ProviderID: 'No Such Provider' }] },
      /instances\[0\]\.ProviderID: "No Such Provider" is not a provider/,
    ],
    [
      { instances: [{ Name: 'x', ProviderID: 'Data Ingest', Config: { url, token: 'clear' } }] },
      /instances\[0\]\.Config\.token: "token" is a secret of provider "Data Ingest": give it as \{"\$secret": "\.\.\."\}, never in clear text/,
    ],
    [
      { instances: [{ Name: 'x', ProviderID: 'Data Ingest', Config: { batchSize: 0 } }] },
      /instances\[0\]\.Config: config property "batchSize": must be at least 1/,
    ],
    [
      { instances: [{ Name: 'pg', ProviderID: 'PostgreSQL' }] },
      /instances\[0\]\.Config: config property "url" is required: the secret "url" is not in the template/,
    ],
    [
      {
        instances: [
          {
            Name: 'x',
            ProviderID: 'Data Ingest',
            Config: { url },
            Subscriptions: [{ IsLocalToRemote: false, LocalName: 'a.b', RemoteName: 'r' }],
          },
        ],
      },
      /instances\[0\]\.Subscriptions\[0\]: provider "Data Ingest" only sends data/,
    ],
    [
      {
        instances: [
          { Name: 'x', ProviderID: 'Data Ingest', Config: { url } },
          { Name: 'x', ProviderID: 'Data Ingest', Config: { url } },
        ],
      },
      /instances\[1\]\.Name: instance "x" is given twice/,
    ],
  ];
  for (const [section, pattern] of cases) {
    const r = await applyTemplate(b.t, admin(b), templateOf({ integrations: section }));
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.message, pattern);
  }
  assert.equal((await b.ok(INSTANCES)).ListInstances.Total, 0, 'nothing applied');
});
