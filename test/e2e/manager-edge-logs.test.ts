/**
 * Edge logs across the fleet, with three real edges enrolled into a real manager (every call over
 * HTTPS and the links), one of them offline: the query merges the two others' entries by time,
 * pages with a cursor without repeating or skipping one, filters by level, component and text,
 * and names the offline edge in every answer; hits and statistics add up the edges' counts. A
 * device's log forwarding status, start and stop through the link.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';

let m: TestManager;
const edges: TestEdge[] = [];
const ids: string[] = [];
let projectId: string;
let offlineDir: string;
const N = 250;
// In the near future: the store keeps times increasing, so entries cannot be written in the past.
const base = Date.now() + 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function enrol(e: TestEdge, code: string): Promise<string> {
  const c = { cookie: `jwtAccess=${await bootstrapAdmin(e)}` };
  const proposed = await e.call('/dm/cloud/url', { headers: c, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  await e.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: c });
  const a = await e.call('/dm/cloud', { headers: c, json: { code } });
  assert.equal(a.status, 200, a.text);
  return a.body.deviceId as string;
}
const online = (id: string, want: boolean) =>
  eventually(
    async () => (await m.call(`/api/v1/device/${id}`)).body.online === want,
    15_000,
    `online=${want}`,
  );

before(async () => {
  m = await startTestManager();
  ({ projectId } = await makeProject(m));
  offlineDir = mkdtempSync(join(tmpdir(), 'mw-edge-off-'));
  for (let i = 0; i < 3; i++) {
    const e = await startTestEdge(i === 2 ? { dataDir: offlineDir } : {});
    edges.push(e);
    ids.push(await enrol(e, await activationCode(m, projectId)));
  }
  for (const id of ids) await online(id, true);
  // Edge A's entries at even milliseconds, B's at odd ones: a merge interleaves them.
  for (const [k, e] of edges.slice(0, 2).entries()) {
    for (let i = 0; i < N; i++)
      e.edge.logStore.append({
        time: base + 2 * i + k,
        level: i % 10 === 0 ? 'error' : 'info',
        component: 'test.fleet',
        message: `${k === 0 ? 'alpha' : 'beta'} entry ${i}`,
        fields: { i },
      });
    await e.edge.logStore.flush();
  }
  await edges[2]!.stop();
  await online(ids[2]!, false);
});
after(async () => {
  for (const e of edges) await e.stop().catch(() => undefined);
  await m?.stop();
  if (offlineDir) rmSync(offlineDir, { recursive: true, force: true });
});

describe('edge logs across the fleet', () => {
  test('query: merged by time over the project, paged by cursor, the offline edge named in every page', async () => {
    const got: any[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await m.call('/api/v1/edge-logs/query', {
        json: {
          projectId,
          component: 'test.fleet',
          from: iso(base - 1000),
          limit: 100,
          ...(cursor ? { cursor } : {}),
        },
      });
      assert.equal(r.status, 200, r.text);
      pages++;
      assert.ok(r.body.count <= 100);
      assert.deepEqual(
        r.body.unavailable.map((u: any) => [u.deviceId, u.status]),
        [[ids[2], 'offline']],
      );
      assert.equal(r.body.devices.length, 3);
      got.push(...r.body.entries);
      cursor = r.body.cursor ?? undefined;
      assert.ok(pages < 20, 'the walk ends');
    } while (cursor);
    assert.equal(got.length, 2 * N);
    assert.equal(pages, 5);
    for (let i = 1; i < got.length; i++)
      assert.ok(got[i - 1].timestamp < got[i].timestamp, `ordered at ${i}`);
    assert.equal(new Set(got.map((e) => `${e.deviceId}/${e.message}`)).size, 2 * N, 'no repeats');
    assert.deepEqual(
      got.slice(0, 4).map((e) => [e.deviceId, e.message]),
      [
        [ids[0], 'alpha entry 0'],
        [ids[1], 'beta entry 0'],
        [ids[0], 'alpha entry 1'],
        [ids[1], 'beta entry 1'],
      ],
    );
    assert.deepEqual(got[0].fields.i, 0);
  });

  test('query filters: level, text, named devices, a time range; bad input is a 400', async () => {
    const errors = await m.call('/api/v1/edge-logs/query', {
      json: {
        deviceIds: [ids[0], ids[1]],
        component: 'test.fleet',
        level: 'error',
        from: iso(base - 1000),
        limit: 1000,
      },
    });
    assert.equal(errors.status, 200, errors.text);
    assert.equal(errors.body.count, 2 * (N / 10));
    assert.ok(errors.body.entries.every((e: any) => e.level === 'error'));
    assert.equal(errors.body.cursor, null);
    assert.deepEqual(errors.body.unavailable, []);
    const text = await m.call('/api/v1/edge-logs/query', {
      json: { projectId, text: 'BETA ENTRY 7', from: iso(base - 1000), limit: 1000 },
    });
    assert.deepEqual(text.body.entries.map((e: any) => e.message).sort(), [
      'beta entry 7',
      'beta entry 70',
      'beta entry 71',
      'beta entry 72',
      'beta entry 73',
      'beta entry 74',
      'beta entry 75',
      'beta entry 76',
      'beta entry 77',
      'beta entry 78',
      'beta entry 79',
    ]);
    const range = await m.call('/api/v1/edge-logs/query', {
      json: {
        deviceIds: [ids[0]],
        component: 'test.fleet',
        from: iso(base + 9),
        to: iso(base + 19),
        limit: 1000,
      },
    });
    assert.deepEqual(
      range.body.entries.map((e: any) => e.message),
      ['alpha entry 5', 'alpha entry 6', 'alpha entry 7', 'alpha entry 8', 'alpha entry 9'],
    );
    for (const bad of [
      {},
      { projectId, level: 'loud' },
      { projectId, from: 'yesterday' },
      { projectId, cursor: 'nope' },
      { projectId, limit: 5000 },
      { projectId, deviceIds: [ids[0]] },
    ]) {
      const r = await m.call('/api/v1/edge-logs/query', { json: bad });
      assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.text}`);
    }
    const first = await m.call('/api/v1/edge-logs/query', {
      json: { projectId, limit: 10, from: iso(base - 1000) },
    });
    const other = await m.call('/api/v1/edge-logs/query', {
      json: { projectId, limit: 10, level: 'warn', cursor: first.body.cursor },
    });
    assert.equal(other.status, 400, 'a cursor goes with its own filters');
    assert.equal((await m.call('/api/v1/edge-logs/query', { json: { deviceIds: ['nope'] } })).status, 404);
  });

  test('hits and statistics add up the edges; the offline one is named', async () => {
    const window = { projectId, component: 'test.fleet', from: iso(base - 60_000), to: iso(base + 60_000) };
    const hits = await m.call('/api/v1/edge-logs/hits', { json: { ...window, bucketSeconds: 3600 } });
    assert.equal(hits.status, 200, hits.text);
    const sum = (counts: Record<string, number>[], level: string) =>
      counts.reduce((a, c) => a + (c[level] ?? 0), 0);
    const totals = hits.body.buckets.map((b: any) => b.counts);
    assert.equal(sum(totals, 'info'), 2 * N * 0.9);
    assert.equal(sum(totals, 'error'), 2 * N * 0.1);
    assert.deepEqual(
      hits.body.unavailable.map((u: any) => u.deviceId),
      [ids[2]],
    );
    const a = hits.body.devices.find((d: any) => d.deviceId === ids[0]);
    assert.equal(
      sum(
        a.buckets.map((b: any) => b.counts),
        'error',
      ),
      N / 10,
    );
    // 7,200 one-second buckets: more than an edge answers; each answering edge's refusal is named.
    const tooMany = await m.call('/api/v1/edge-logs/hits', {
      json: { ...window, from: iso(base - 3_600_000), to: iso(base + 3_600_000), bucketSeconds: 1 },
    });
    assert.equal(tooMany.status, 200, tooMany.text);
    const refused = tooMany.body.unavailable.find((u: any) => u.deviceId === ids[0]);
    assert.equal(refused.status, 'error');
    assert.match(refused.message, /at most 1000/);

    const stats = await m.call('/api/v1/edge-logs/statistics', { json: window });
    assert.equal(stats.status, 200, stats.text);
    assert.equal(stats.body.count, 2 * N);
    assert.deepEqual(stats.body.byLevel, { info: 2 * N * 0.9, error: 2 * N * 0.1 });
    assert.deepEqual(stats.body.components, [{ component: 'test.fleet', n: 2 * N }]);
    assert.deepEqual(
      stats.body.unavailable.map((u: any) => [u.deviceId, u.status]),
      [[ids[2], 'offline']],
    );
  });
});

describe('device log forwarding through the link', () => {
  test('status, start (refused by the edge without a target: relayed), stop; an offline device is a 503', async () => {
    const base_ = `/api/v1/device/${ids[0]}/log-forwarding`;
    const st = await m.call(`${base_}/status`);
    assert.equal(st.status, 200, st.text);
    assert.equal(st.body.state, 'unconfigured');
    const start = await m.call(`${base_}/start`, { method: 'POST' });
    assert.equal(start.status, 409, start.text);
    assert.match(start.body.message, /no log forwarding target/);
    // A target on the edge (a TCP syslog port nobody listens on), then start and stop via the manager.
    const put = await m.call(`/api/v1/edge/${projectId}/${ids[0]}/dm/v2/log-forwarding/config`, {
      method: 'PUT',
      json: { enabled: false, target: { type: 'syslog', protocol: 'udp', host: '127.0.0.1', port: 9 } },
    });
    assert.equal(put.status, 200, put.text);
    const started = await m.call(`${base_}/start`, { method: 'POST' });
    assert.equal(started.status, 200, started.text);
    assert.notEqual(started.body.state, 'stopped');
    const stopped = await m.call(`${base_}/stop`, { method: 'POST' });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.state, 'stopped');
    const off = await m.call(`/api/v1/device/${ids[2]}/log-forwarding/status`);
    assert.equal(off.status, 503, off.text);
  });
});
