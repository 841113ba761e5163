/**
 * The edge's upload session opened with its first chunk (`POST /config/session` with a raw
 * body), which makes a manager's template apply two round trips (upload, then `PUT
 * /config/template/{id}` with an Idempotency-Key): against the real edge over HTTPS.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { bootstrapAdmin, insecureAgent, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { templateOf } from '../helpers/config.js';

let t: TestEdge;
let auth: Record<string, string>;
before(async () => {
  t = await startTestEdge();
  auth = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
});
after(() => t.stop());

async function open(body: string, contentType: string) {
  const r = await request(`${t.url}/config/session`, {
    method: 'POST',
    headers: { ...auth, 'content-type': contentType },
    body,
    dispatcher: insecureAgent,
  });
  const text = await r.body.text();
  return { status: r.statusCode, body: text ? JSON.parse(text) : undefined };
}

test('a session opened with its first chunk is applied by one PUT; a repeat under the key is answered, not applied', async () => {
  const doc = JSON.stringify(
    templateOf({ devicehub: { devices: [{ Name: 'one-call', DriverID: 'Generator', Tags: [] }] } }),
  );
  const opened = await open(doc, 'application/octet-stream');
  assert.equal(opened.status, 201, JSON.stringify(opened.body));
  assert.equal(opened.body.size, Buffer.byteLength(doc));
  assert.ok(opened.body.maxBytes > 0);
  const headers = { ...auth, 'idempotency-key': 'one-call-1' };
  const applied = await t.call(`/config/template/${opened.body.id}`, { method: 'PUT', json: {}, headers });
  assert.equal(applied.status, 200, applied.text);
  assert.equal(applied.body.result.applied, true);
  assert.equal(applied.body.template, undefined, 'nothing saved without a name');
  const saved = await t.call('/config/templates', { headers: auth });
  assert.equal(saved.body.total, 0);

  // Sent again under the same key (a manager taking the subtask over): the recorded outcome.
  const again = await open(doc, 'application/octet-stream');
  const replay = await t.call(`/config/template/${again.body.id}`, { method: 'PUT', json: {}, headers });
  assert.equal(replay.status, 200, replay.text);
  assert.equal(replay.body.result.replayed, true);
  assert.equal(replay.body.result.snapshotId, applied.body.result.snapshotId);
  const snapshots = await t.call('/config/snapshots', { headers: auth });
  assert.equal(
    snapshots.body.items.filter((s: { reason: string }) => s.reason.startsWith('before apply')).length,
    1,
    'applied once',
  );
});

test('`{}` still opens an empty session; a text body is refused; a chunk that is not the whole document can follow by PATCH', async () => {
  const empty = await t.call('/config/session', { json: {}, headers: auth });
  assert.equal(empty.status, 201, empty.text);
  assert.equal(empty.body.size, undefined);
  const text = await open('{"format"', 'text/plain');
  assert.equal(text.status, 400, JSON.stringify(text.body));
  const doc = JSON.stringify(templateOf({ devicehub: { devices: [] } }));
  const first = await open(doc.slice(0, 10), 'application/octet-stream');
  assert.equal(first.status, 201);
  const rest = await request(`${t.url}/config/session/${first.body.id}?offset=10`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/octet-stream' },
    body: doc.slice(10),
    dispatcher: insecureAgent,
  });
  assert.equal(rest.statusCode, 200, await rest.body.text());
  const applied = await t.call(`/config/template/${first.body.id}`, {
    method: 'PUT',
    json: {},
    headers: auth,
  });
  assert.equal(applied.status, 200, applied.text);
});
