/** `GET /logs/query` on the running edge: its own log entries, paged backwards and tailed. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';

let t: TestEdge;
let h: Record<string, string>;
before(async () => {
  t = await startTestEdge({ logLevel: 'info' });
  h = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
});
after(() => t.stop());

async function makeClients(n: number, prefix: string) {
  for (let i = 0; i < n; i++) {
    const res = await t.call('/auth/v3/api-clients', { headers: h, json: { name: `${prefix}-${i}` } });
    assert.equal(res.status, 201);
  }
  await t.edge.logStore.flush();
}

test('paging backwards with cursor, tailing with start', async () => {
  await makeClients(7, 'first');
  const q = (params: string) =>
    t.call(`/logs/query?component=edge.auth&search=api%20client%20created&${params}`, { headers: h });

  const newest = await q('limit=3');
  assert.equal(newest.status, 200);
  assert.equal(newest.body.count, 3);
  assert.equal(newest.body.entries.length, 3);
  const e0 = newest.body.entries[0];
  assert.deepEqual(Object.keys(e0).sort(), ['component', 'fields', 'level', 'message', 'timestamp']);
  assert.equal(e0.component, 'edge.auth');
  assert.equal(e0.level, 'info');
  assert.ok(!Number.isNaN(Date.parse(e0.timestamp)));
  assert.equal(
    newest.body.cursor,
    newest.body.entries[2].timestamp,
    'cursor is the newest entry of the page',
  );

  // Walk backwards with the returned cursor: no overlap, no gap, all 7 entries.
  const seen: string[] = newest.body.entries.map((e: any) => e.timestamp);
  let cursor = newest.body.cursor as string;
  for (;;) {
    const page = await q(`limit=3&cursor=${encodeURIComponent(cursor)}`);
    assert.equal(page.status, 200);
    if (page.body.count === 0) break;
    seen.unshift(...page.body.entries.map((e: any) => e.timestamp));
    cursor = page.body.cursor;
  }
  assert.equal(seen.length, 7);
  assert.equal(new Set(seen).size, 7);
  assert.deepEqual([...seen].sort(), seen, 'chronological');

  // Tail forward from the newest cursor: only what comes after.
  const tail0 = await q(`start=${encodeURIComponent(newest.body.cursor)}`);
  assert.equal(tail0.body.count, 0);
  await makeClients(2, 'second');
  const tail1 = await q(`start=${encodeURIComponent(newest.body.cursor)}`);
  assert.equal(tail1.body.count, 2);
  assert.deepEqual(
    tail1.body.entries.map((e: any) => e.fields.name),
    ['second-0', 'second-1'],
  );
});

test('cursor=0 is a 400; start=0 and unknown parameters are ignored', async () => {
  const zero = await t.call('/logs/query?cursor=0', { headers: h });
  assert.equal(zero.status, 400);
  assert.match(zero.body.message, /cursor/);
  const ignored = await t.call('/logs/query?start=0&frobnicate=1&limit=5', { headers: h });
  assert.equal(ignored.status, 200);
  assert.ok(ignored.body.count <= 5);
  const bad = await t.call('/logs/query?level=loud', { headers: h });
  assert.equal(bad.status, 400);
});

test('no secret reaches the log store', async () => {
  const created = await t.call('/auth/v3/api-clients', { headers: h, json: { name: 'secretive' } });
  await t.call('/auth/v3/oauth/token', {
    form: {
      grant_type: 'client_credentials',
      client_id: created.body.client_id,
      client_secret: 'mws_wrong_secret_value',
    },
  });
  await t.call(`/devicehub/version?access_token=leaky-token-value`, { headers: h });
  await t.edge.logStore.flush();
  const all = await t.call('/logs/query?limit=1000&level=trace', { headers: h });
  const text = JSON.stringify(all.body);
  assert.ok(!text.includes(created.body.client_secret), 'client secret not logged');
  assert.ok(!text.includes('mws_wrong_secret_value'));
  assert.ok(!text.includes('leaky-token-value'));
  assert.ok(!text.includes(h.authorization!.slice(7)), 'bearer token not logged');
  assert.ok(!text.includes('first-run-password'));
});
