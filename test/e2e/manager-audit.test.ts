/**
 * The manager's audit trail against a real manager (SQLite): every mutating route of both APIs
 * (walked from the route inventory, so routes added by any module are covered) writes exactly one
 * record; a failed change writes no change and one `failure` record; a change whose record cannot
 * be written does not happen; tampering with a row makes verify name it; the CSV and PDF exports
 * (the PDF read back with pdftotext); the deprecated routes, settings and the older store's move;
 * token changes (admin API and CLI) and edges' link sign-ins recorded without secrets; on SQLite a
 * call waiting on an edge holds no write lock; a caller's bridged reads are not recorded.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { listRoutes } from '../../src/kernel/http/server.js';
import { sql } from '../../src/kernel/db/index.js';
import { userInfo } from 'node:os';
import WebSocket from 'ws';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { cleanEnv, runCli, runCliJson } from '../helpers/cli.js';
import { SimEdge } from '../helpers/sim-edge.js';
import { have } from '../helpers/util.js';

let m: TestManager;
const count = () => m.manager.audit.repo.count({});
const newest = async () => (await m.admin('/admin/v1/logs/v2?limit=1')).body.items[0];

before(async () => {
  m = await startTestManager();
});
after(async () => {
  await m?.stop();
});

/**
 * Routes that record nothing by design (config.audit: false): a call another manager forwards, and
 * the edge-logs queries (reads sent as POST: the body carries the filters; they change nothing).
 */
const NOT_AUDITED = new Set([
  'POST /dm/peer/:deviceId/*',
  'PUT /dm/peer/:deviceId/*',
  'PATCH /dm/peer/:deviceId/*',
  'DELETE /dm/peer/:deviceId/*',
  'POST /api/v1/edge-logs/query',
  'POST /api/v1/edge-logs/hits',
  'POST /api/v1/edge-logs/statistics',
]);

test('every mutating route of both APIs writes exactly one record', async () => {
  const apps = [
    { app: m.manager.app, call: m.call, origin: 'API' },
    { app: m.manager.adminApp, call: m.admin, origin: 'CONSOLE' },
  ];
  let walked = 0;
  for (const { app, call, origin } of apps) {
    for (const route of listRoutes(app)) {
      if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method)) continue;
      const key = `${route.method} ${route.url}`;
      if (NOT_AUDITED.has(key)) continue;
      const path = route.url.replace(/:[A-Za-z0-9_]+/g, 'x').replace(/\*/g, 'x');
      const before = await count();
      const res = await call(path, { method: route.method, json: {} });
      const added = (await count()) - before;
      if (route.permission === 'public' && res.status >= 400) {
        // Anonymous refusals are not recorded (nobody grows the trail without a credential).
        assert.equal(added, 0, `${key} (public, ${res.status}) wrote ${added} records`);
        continue;
      }
      assert.equal(added, 1, `${key} answered ${res.status} and wrote ${added} records`);
      const r = await newest();
      assert.equal(r.details.method, route.method, key);
      assert.equal(r.details.path, path, key);
      assert.equal(r.origin, origin, key);
      assert.equal(r.outcome, res.status < 400 ? 'success' : 'failure', key);
      assert.equal(r.status, res.status, key);
      assert.ok(r.module && r.module !== 'manager', `${key}: module ${r.module}`);
      walked++;
    }
  }
  assert.ok(walked >= 30, `walked ${walked} mutating routes`);
});

test('a success records actor, module, action, target and request id in the same transaction', async () => {
  const c = await m.call('/api/v1/company', { json: { companyName: 'audited-co' } });
  assert.equal(c.status, 201);
  const r = await newest();
  assert.equal(r.action, 'company.create');
  assert.equal(r.module, 'fleet');
  assert.equal(r.outcome, 'success');
  assert.equal(r.actorName, 'test-admin');
  assert.match(r.actor, /^token:/);
  assert.equal(r.target, 'companyName=audited-co');
  assert.ok(r.requestId);
  const rotate = await m.admin('/admin/v1/api-tokens', { json: { name: 'rot' } });
  await m.admin(`/admin/v1/api-tokens/${rotate.body.id}/rotate`, { method: 'POST' });
  const t = await newest();
  assert.equal(t.action, 'api-tokens.rotate');
  assert.equal(t.module, 'admin');
  assert.equal(t.target, `id=${rotate.body.id}`);
});

test('a failed change: no change, and one record with outcome failure', async () => {
  const before = await count();
  const dup = await m.call('/api/v1/company', { json: { companyName: 'audited-co' } });
  assert.equal(dup.status, 409);
  assert.equal((await count()) - before, 1);
  const r = await newest();
  assert.equal(r.outcome, 'failure');
  assert.equal(r.status, 409);
  assert.equal(r.details.error, 'conflict');
  const list = await m.call('/api/v1/company/list/paged?filter=companyName:eq:audited-co');
  assert.equal(list.body.total, 1);
});

test('no change without its record: when the record cannot be written, the change is rolled back', async () => {
  const db = m.manager.database.db;
  // The record's table moved away: the append fails after the company's insert, in its transaction.
  await sql`alter table audit_record rename to audit_record_away`.execute(db);
  try {
    const res = await m.call('/api/v1/company', { json: { companyName: 'never-recorded' } });
    assert.equal(res.status, 500);
  } finally {
    await sql`alter table audit_record_away rename to audit_record`.execute(db);
  }
  const list = await m.call('/api/v1/company/list/paged?filter=companyName:eq:never-recorded');
  assert.equal(list.body.total, 0, 'the company was not created');
  assert.equal((await m.admin('/admin/v1/logs/v2/verify')).body.ok, true);
});

test('verify: the chain holds; a changed row is named', async () => {
  const ok = await m.admin('/admin/v1/logs/v2/verify');
  assert.equal(ok.status, 200);
  assert.equal(ok.body.ok, true, JSON.stringify(ok.body));
  assert.ok(ok.body.checked > 30);
  const victim = (await m.admin('/admin/v1/logs/v2?sort=seq:asc&offset=5&limit=1')).body.items[0];
  const db = m.manager.database.db;
  await sql`update audit_record set actor = 'someone-else' where seq = ${victim.seq}`.execute(db);
  try {
    const bad = await m.admin('/admin/v1/logs/v2/verify');
    assert.equal(bad.body.ok, false);
    assert.equal(bad.body.broken.seq, victim.seq);
    assert.equal(bad.body.broken.id, victim.id);
    assert.match(bad.body.broken.reason, /was changed/);
  } finally {
    await sql`update audit_record set actor = ${victim.actor} where seq = ${victim.seq}`.execute(db);
  }
  assert.equal((await m.admin('/admin/v1/logs/v2/verify')).body.ok, true);
});

test('filters, categories and the deprecated routes', async () => {
  const byAction = await m.call('/api/v1/logs/v2?action=company.create');
  assert.ok(byAction.body.total >= 2);
  assert.ok(byAction.body.items.every((r: { action: string }) => r.action === 'company.create'));
  const text = await m.call('/api/v1/logs/v2?text=AUDITED-CO&outcome=failure');
  assert.equal(text.body.total, 1);
  const console_ = await m.admin('/admin/v1/logs/v2?origin=CONSOLE&module=admin&limit=5');
  assert.ok(console_.body.total > 0);
  assert.ok(
    console_.body.items.every(
      (r: { origin: string; module: string }) => r.origin === 'CONSOLE' && r.module === 'admin',
    ),
  );
  const future = await m.call(`/api/v1/logs/v2?from=${Date.now() + 60_000}`);
  assert.equal(future.body.total, 0);
  const cats = await m.admin('/admin/v1/logs/v2/categories');
  const fleet = cats.body.items.find((c: { category: string }) => c.category === 'fleet');
  assert.ok(fleet.contexts.some((c: { action: string }) => c.action === 'company.create'));
  const old = await m.admin('/admin/v1/logs?limit=3');
  assert.equal(old.status, 200);
  assert.equal(old.headers.deprecation, 'true');
  assert.equal(old.body.logs.length, 3);
  assert.deepEqual(Object.keys(old.body.logs[0]).sort(), ['context', 'id', 'message', 'timestamp', 'user']);
  const contexts = await m.admin('/admin/v1/logs/contexts');
  assert.ok(contexts.body.includes('fleet'));
});

test('CSV export and a PDF report that pdftotext reads back', async (t) => {
  const csv = await m.call('/api/v1/logs/v2/export?format=csv&action=company.create');
  assert.equal(csv.status, 200);
  assert.match(String(csv.headers['content-type']), /text\/csv/);
  const lines = csv.text.trim().split('\n');
  assert.match(lines[0]!, /^seq,time,actor/);
  assert.ok(lines.length >= 3);
  if (!have('pdftotext')) return t.skip('pdftotext (poppler-utils) is not installed');
  const res = await fetchBytes(`${m.adminUrl}/admin/v1/logs/v2/export?format=pdf&module=fleet`);
  assert.equal(res.subarray(0, 5).toString(), '%PDF-');
  const file = join(m.dataDir, 'report.pdf');
  writeFileSync(file, res);
  const text = execFileSync('pdftotext', ['-layout', file, '-']).toString();
  assert.match(text, /audit trail/);
  assert.match(text, /Chain head: record \d+/);
  assert.match(text, /Filters: module=fleet/);
  assert.match(text, /company\.create/);
  assert.match(text, /Page 1/);
});

/** The newest records of `query` (a logs/v2 filter), newest first. */
async function records(query: string): Promise<any[]> {
  return (await m.admin(`/admin/v1/logs/v2?${query}&sort=seq:desc&limit=50`)).body.items;
}

/** Polls until `query` matches at least `n` records (sign-ins are recorded just after the answer). */
async function eventually(query: string, n: number): Promise<any[]> {
  for (let i = 0; i < 100; i++) {
    const items = await records(query);
    if (items.length >= n) return items;
    await new Promise((r) => setTimeout(r, 100));
  }
  return records(query);
}

test('token changes are recorded, by the admin API and by the CLI, never with a secret', async () => {
  const made = await m.admin('/admin/v1/api-tokens', { json: { name: 'tok-a' } });
  assert.equal(made.status, 201);
  const created = await newest();
  assert.equal(created.action, 'api-tokens.create');
  assert.equal(created.actorName, 'test-admin');
  assert.equal(created.target, 'name=tok-a');
  const rotated = await m.admin(`/admin/v1/api-tokens/${made.body.id}/rotate`, { method: 'POST' });
  assert.equal((await newest()).action, 'api-tokens.rotate');
  assert.equal((await m.admin(`/admin/v1/api-tokens/${made.body.id}`, { method: 'DELETE' })).status, 204);
  const revoked = await newest();
  assert.equal(revoked.action, 'api-tokens.delete');
  assert.equal(revoked.target, `id=${made.body.id}`);
  const user = await m.admin('/admin/v1/users', { json: { username: 'auditee', password: 'pass-word-123' } });
  assert.equal(user.status, 201);
  assert.equal((await newest()).action, 'users.create');

  // The CLI on the manager's data directory while the manager runs: same actions, origin CLI,
  // the operating-system user as the actor, in the chain the manager writes to.
  const me = userInfo().username;
  const cli = runCliJson(
    ['manager', 'token', 'create', '--data-dir', m.dataDir, '--name', 'tok-cli'],
    cleanEnv(),
  );
  runCliJson(['manager', 'token', 'rotate', '--data-dir', m.dataDir, '--id', cli.id], cleanEnv());
  runCliJson(['manager', 'token', 'revoke', '--data-dir', m.dataDir, '--id', cli.id], cleanEnv());
  const wrong = await runCli([
    'manager',
    'token',
    'revoke',
    '--data-dir',
    m.dataDir,
    '--id',
    'no-such-token',
  ]);
  assert.notEqual(wrong.code, 0);
  const byCli = await records('origin=CLI');
  assert.deepEqual(
    byCli.slice(0, 4).map((r) => [r.action, r.outcome, r.target]),
    [
      ['api-tokens.delete', 'failure', 'id=no-such-token'],
      ['api-tokens.delete', 'success', `id=${cli.id}`],
      ['api-tokens.rotate', 'success', `id=${cli.id}`],
      ['api-tokens.create', 'success', 'name=tok-cli'],
    ],
  );
  assert.equal(byCli[0].status, 404);
  for (const r of byCli) {
    assert.equal(r.actor, `cli:${me}`);
    assert.equal(r.module, 'admin');
  }
  // No secret anywhere in the trail: the tokens answered once, the user's password.
  const all = JSON.stringify(await records('module=admin'));
  for (const secret of [made.body.token, rotated.body.token, cli.token, 'pass-word-123'])
    assert.ok(!all.includes(secret), 'a secret is in the audit trail');
  assert.equal((await m.admin('/admin/v1/logs/v2/verify')).body.ok, true);
});

test("edges' sign-ins on the link are recorded: success, and a wrong secret (bounded), no secret", async () => {
  const { projectId } = await makeProject(m, 'signin-co', 'signin-p');
  const edge = new SimEdge();
  await edge.activate(m.url, await activationCode(m, projectId));
  await edge.connect();
  try {
    const actor = `device:${edge.deviceId}`;
    const ok = await eventually(`action=link.sign-in&actor=${actor}&outcome=success`, 1);
    assert.equal(ok.length, 1);
    assert.equal(ok[0].module, 'link');
    assert.equal(ok[0].projectId, projectId);
    assert.equal(ok[0].target, `deviceId=${edge.deviceId}`);
    // A wrong secret for this device: 401, one failure record; a second within the minute is
    // counted on the next record, not written; an unknown device id writes nothing.
    const refused = (id: string, secret: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${m.url.replace(/^http/, 'ws')}/dm/link`, {
          headers: { 'x-device-id': id, 'x-device-secret': secret },
          rejectUnauthorized: false,
        });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          ws.terminate();
        });
        ws.on('open', () => reject(new Error('a wrong secret linked')));
        ws.on('error', () => undefined);
      });
    assert.equal(await refused(edge.deviceId, 'not-the-secret-1'), 401);
    assert.equal(await refused(edge.deviceId, 'not-the-secret-2'), 401);
    const nobody = 'z'.repeat(25);
    assert.equal(await refused(nobody, 'whatever-secret'), 401);
    const failed = await eventually(`action=link.sign-in&actor=${actor}&outcome=failure`, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await records(`action=link.sign-in&actor=${actor}&outcome=failure`)).length, 1);
    assert.equal(failed[0].status, 401);
    assert.equal(failed[0].details.error, 'wrong link secret');
    assert.equal((await records(`actor=device:${nobody}`)).length, 0);
    const text = JSON.stringify(await records('action=link.sign-in'));
    for (const secret of [edge.linkSecret, 'not-the-secret-1', 'not-the-secret-2'])
      assert.ok(!text.includes(secret), 'a link secret is in the audit trail');
  } finally {
    await edge.stop();
  }
});

test('SQLite: a mutating call waiting on an edge holds no write lock; other changes commit meanwhile', async () => {
  const { projectId } = await makeProject(m, 'lock-co', 'lock-p');
  // The edge answers after 2.5 s: well inside the test manager's 5 s bridge timeout (an answer
  // after 5 s raced the timeout's 500 ms sweep and lost once in CI).
  const edge = new SimEdge({ applyMs: 2500 });
  await edge.activate(m.url, await activationCode(m, projectId));
  await edge.connect();
  try {
    const base = `/api/v1/edge/${projectId}/${edge.deviceId}`;
    const session = await m.call(`${base}/config/session`, { json: { doc: 1 } });
    assert.equal(session.status, 201, session.text);
    // A bridged PUT the edge answers after 2.5 s (its apply), recorded with the bridged call.
    let slowDone = false;
    const slow = m
      .call(`${base}/config/template/${session.body.id}`, { method: 'PUT', json: { name: 'slow-apply' } })
      .finally(() => (slowDone = true));
    for (let i = 0; i < 200 && ![...edge.saved.values()].includes('slow-apply'); i++)
      await new Promise((r) => setTimeout(r, 25));
    assert.ok([...edge.saved.values()].includes('slow-apply'), 'the edge has the call');
    // While the edge works: another change and its record commit.
    const during = await m.call('/api/v1/company', { json: { companyName: 'while-the-edge-works' } });
    assert.equal(during.status, 201);
    assert.equal(slowDone, false, 'the change had to wait for the bridged call');
    const duringRecord = await newest();
    assert.equal(duringRecord.target, 'companyName=while-the-edge-works');
    const res = await slow;
    assert.equal(res.status, 200, res.text);
    const bridged = await newest();
    assert.equal(bridged.action, 'edge.update');
    assert.match(bridged.target, new RegExp(`deviceId=${edge.deviceId}`));
    assert.ok(bridged.seq > duringRecord.seq);
    assert.equal(bridged.details.method, 'PUT');
  } finally {
    await edge.stop();
  }
});

test("a caller's bridged reads leave no record; its bridged change leaves one", async () => {
  const { projectId } = await makeProject(m, 'reads-co', 'reads-p');
  const edge = new SimEdge();
  await edge.activate(m.url, await activationCode(m, projectId));
  await edge.connect();
  try {
    const base = `/api/v1/edge/${projectId}/${edge.deviceId}`;
    // Let the link's sign-in record land first.
    await new Promise((r) => setTimeout(r, 300));
    const before = await count();
    for (const method of ['GET', 'HEAD', 'OPTIONS']) {
      const res = await m.call(`${base}/config/templates`, { method });
      assert.ok(res.status < 500, `${method}: ${res.status} ${res.text}`);
    }
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await count()) - before, 0, 'a bridged read was recorded');
    const made = await m.call(`${base}/config/session`, { json: { doc: 1 } });
    assert.equal(made.status, 201, made.text);
    assert.equal((await count()) - before, 1);
    const r = await newest();
    assert.equal(r.module, 'bridge');
    assert.equal(r.details.method, 'POST');
    // The request log sees every bridged read while it is on, the ones the bridge's fast path
    // (src/manager/bridge/fast-path.ts) would take too: the log vetoes that path.
    const on = await m.admin('/admin/v1/action-log/settings/api-activity', {
      method: 'PUT',
      json: { enabled: true },
    });
    assert.equal(on.body.enabled, true);
    try {
      for (let i = 0; i < 3; i++) assert.equal((await m.call(`${base}/config/templates`)).status, 200);
      let logged = 0;
      for (let i = 0; i < 300 && logged < 3; i++) {
        const act = await m.admin(`/admin/v1/logs/v2/api-activity?filter=path:eq:${base}/config/templates`);
        logged = act.body.total;
        if (logged < 3) await new Promise((res) => setTimeout(res, 100)); // written once a second
      }
      assert.equal(logged, 3, 'every bridged read is in the request log');
    } finally {
      await m.admin('/admin/v1/action-log/settings/api-activity', {
        method: 'PUT',
        json: { enabled: false },
      });
    }
  } finally {
    await edge.stop();
  }
});

test('settings, the request log, retention and the older store moved in', async () => {
  const s = await m.admin('/admin/v1/action-log/settings', { method: 'PUT', json: { retentionDays: 30 } });
  assert.equal(s.status, 200);
  assert.equal(s.body.retentionDays, 30);
  const bad = await m.admin('/admin/v1/action-log/settings', { method: 'PUT', json: { retentionDays: -1 } });
  assert.equal(bad.status, 400);
  const on = await m.admin('/admin/v1/action-log/settings/api-activity', {
    method: 'PUT',
    json: { enabled: true },
  });
  assert.equal(on.body.enabled, true);
  await m.call('/api/v1/whoami');
  await m.manager.shell
    .module('audit')
    .repo.database.db.selectFrom('audit_setting' as never)
    .selectAll()
    .execute();
  let seen = false;
  for (let i = 0; i < 300 && !seen; i++) {
    const act = await m.admin('/admin/v1/logs/v2/api-activity?filter=path:eq:/api/v1/whoami');
    seen = act.body.total >= 1;
    if (seen) assert.equal(act.body.items[0].status, 200);
    else await new Promise((r) => setTimeout(r, 100)); // the log is written once a second
  }
  assert.ok(seen, 'the request log holds the call');
  // Retention: 30 days on; a housekeeping run 31 days later removes every record, and verify holds.
  const removed = await m.manager.audit.housekeep(Date.now() + 31 * 86_400_000);
  assert.ok(removed.records > 30);
  assert.equal((await m.admin('/admin/v1/logs/v2/verify')).body.ok, true);
  await m.admin('/admin/v1/action-log/settings', { method: 'PUT', json: { retentionDays: 0 } });

  const repo = m.manager.audit.repo;
  await repo.addLegacy(
    Array.from({ length: 1200 }, (_, i) => ({
      id: `old-${String(i).padStart(5, '0')}`,
      at: Date.parse('2025-01-01') + i * 1000,
      username: 'olduser',
      context: 'template',
      message: `old change ${i}`,
    })),
  );
  const status = await m.admin('/admin/v1/action-log/migration');
  assert.equal(status.body.state, 'NOT_STARTED');
  assert.equal(status.body.remaining, 1200);
  // Half way (one batch of 500), then the retry resumes; a second retry adds nothing.
  await m.manager.audit.migrate(1);
  assert.equal((await m.admin('/admin/v1/action-log/migration')).body.migrated, 500);
  const done = await m.admin('/admin/v1/action-log/migration/retry', { method: 'POST' });
  assert.equal(done.body.state, 'COMPLETED');
  assert.equal(done.body.migrated, 1200);
  const again = await m.admin('/admin/v1/action-log/migration/retry', { method: 'POST' });
  assert.equal(again.body.migrated, 1200);
  assert.equal((await m.admin('/admin/v1/logs/v2?module=legacy')).body.total, 1200);
  assert.equal((await m.admin('/admin/v1/logs/v2/verify')).body.ok, true);
});

async function fetchBytes(url: string): Promise<Buffer> {
  const { request } = await import('undici');
  const { insecureAgent } = await import('../helpers/edge.js');
  const res = await request(url, { headers: { 'x-authtoken': m.token }, dispatcher: insecureAgent });
  assert.equal(res.statusCode, 200);
  return Buffer.from(await res.body.arrayBuffer());
}
