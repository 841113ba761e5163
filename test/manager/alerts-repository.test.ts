/**
 * The alert tables on SQLite and PostgreSQL, through two handles on one database (two manager
 * processes): one incident per rule and device however many evaluators open it at once, one
 * resolution, the notifications of each change written once and with it; outbox claims never
 * overlap, a claim past its lease is taken over and only its holder ends it; the per-channel count
 * the rate limit reads; secrets sealed at rest and never answered.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { forEachDialect } from '../helpers/postgres.js';
import { alertsMigrations } from '../../src/manager/alerts/migrations/index.js';
import { AlertRepository } from '../../src/manager/alerts/repository.js';
import { AlertService, type RuleSettings } from '../../src/manager/alerts/service.js';
import { ruleOf } from '../../src/manager/alerts/catalog.js';
import { SecretBox } from '../../src/kernel/secret-box.js';
import type { FleetService, DeviceFacts } from '../../src/manager/fleet/index.js';
import type { Principal } from '../../src/manager/auth/index.js';

const admin: Principal = {
  subject: 'token:test',
  tokenId: 't',
  tokenName: 'test',
  username: null,
  grants: [{ role: 'admin', companyId: null, projectId: null }],
};
const fleet = {
  project: async (_p: Principal, id: string) => ({ id, company_id: 'c1', name: 'p', created_at: 0 }),
} as unknown as FleetService;
const device = (id: string): DeviceFacts => ({
  id,
  name: `edge-${id}`,
  projectId: 'p1',
  companyId: 'c1',
  online: false,
  lastSeen: Date.now() - 120_000,
  activatedAt: Date.now() - 600_000,
  metrics: {},
  linksSince: 0,
});
const offline: RuleSettings = {
  rule: ruleOf('device-offline')!,
  enabled: true,
  severity: 'CRITICAL',
  params: { forSeconds: 60, clearSeconds: 0 },
  updatedAt: null,
  updatedBy: null,
};

forEachDialect('alert repository', (ctx) => {
  let a: AlertService;
  let b: AlertService;
  let ra: AlertRepository;
  let rb: AlertRepository;
  before(async () => {
    await ctx.database.migrate([alertsMigrations]);
    const box = new SecretBox(randomBytes(32));
    ra = new AlertRepository(ctx.database);
    // SQLite is one manager process (the data directory's lock): its two "processes" share the
    // handle; on PostgreSQL they are two pools, as two managers are.
    rb = new AlertRepository(ctx.dialect === 'sqlite' ? ctx.database : ctx.reopen(ctx.database));
    const log = pino({ level: 'silent' });
    a = new AlertService(ra, box, fleet, log);
    b = new AlertService(rb, box, fleet, log);
    await a.setInstanceSettings(admin, {
      smtp: {
        host: '127.0.0.1',
        port: 2525,
        security: 'none',
        username: 'u',
        password: 'smtp-pass-123',
        from: 'mw@example.com',
      },
      mqtt: { url: 'mqtt://127.0.0.1:1', password: 'mqtt-pass-456' },
      notify: {
        enabled: true,
        emails: ['ops@example.com'],
        webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'hook-secret-789' }],
        mqtt: true,
      },
    });
  });

  test('two evaluators opening the same incident at once open one, with one set of notifications', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).open(offline, device('d1'), 'offline', {})),
    );
    assert.equal(results.filter(Boolean).length, 1, JSON.stringify(results));
    const open = await a.openIncidents();
    assert.equal(open.length, 1);
    const notes = await ra.notificationsOf(open[0]!.id);
    assert.deepEqual(notes.map((n) => n.channel).sort(), ['email', 'mqtt', 'webhook']);
    assert.ok(notes.every((n) => n.event === 'OPENED'));

    // Resolved by both at once: one resolution, one set of RESOLVED notifications.
    const resolved = await Promise.all([
      a.resolve(open[0]!.id, 'manager:auto'),
      b.resolve(open[0]!.id, 'manager:auto'),
    ]);
    assert.equal(resolved.filter(Boolean).length, 1);
    const after = await ra.notificationsOf(open[0]!.id);
    assert.equal(after.filter((n) => n.event === 'RESOLVED').length, 3);
    // A new episode opens a new incident.
    assert.equal(await a.open(offline, device('d1'), 'offline again', {}), true);
  });

  test('an incident resolved by hand is not opened again within the same episode', async () => {
    const since = Date.now() - 1000;
    assert.equal(await a.open(offline, device('d2'), 'offline', {}), true);
    const [row] = (await a.openIncidents()).filter((i) => i.device_id === 'd2');
    const r = await a.resolveByHand(admin, [row!.id, 'nope']);
    assert.deepEqual(r, { resolved: [row!.id], notOpen: ['nope'] });
    assert.equal(await b.resolvedByHandSince('device-offline', 'd2', since), true);
    assert.equal(await b.resolvedByHandSince('device-offline', 'd2', Date.now() + 1000), false);
  });

  test('two processes claiming notifications at once never claim the same one; a lapsed lease is taken over', async () => {
    for (let i = 0; i < 10; i++) await a.open(offline, device(`c${i}`), 'offline', {});
    const seen: string[] = [];
    for (let round = 0; round < 20; round++) {
      const [x, y] = await Promise.all([ra.claim('A', 4, 60_000), rb.claim('B', 4, 60_000)]);
      seen.push(...x.map((r) => r.id), ...y.map((r) => r.id));
      if (x.length + y.length === 0) break;
    }
    assert.ok(seen.length >= 30, `claimed ${seen.length}`);
    assert.equal(new Set(seen).size, seen.length, 'no notification claimed twice');
    // A claim past its lease is taken over; only the holder ends it.
    await a.open(offline, device('lease'), 'offline', {});
    const [first] = await ra.claim('A', 1, 50);
    assert.ok(first);
    // Time is the test: the 50 ms lease runs out.
    await new Promise((r) => setTimeout(r, 80));
    const taken = await rb.claim('B', 10, 60_000);
    assert.ok(taken.some((t) => t.id === first.id));
    assert.equal(await ra.finish(first.id, 'A', 'SENT', null), false);
    assert.equal(await rb.finish(first.id, 'B', 'SENT', null), true);
    assert.equal(await ra.sentSince(first.channel_key, Date.now() - 60_000), 1);
    // Released for a retry, it waits for its next attempt.
    const rest = taken.filter((t) => t.id !== first.id);
    assert.equal(await rb.release(rest[0]!.id, 'B', Date.now() + 60_000, 'down', true), true);
    assert.equal(
      (await ra.claim('A', 100, 60_000)).some((r) => r.id === rest[0]!.id),
      false,
    );
  });

  test('secrets are sealed at rest and never answered', async () => {
    const raw = (await ra.setting('instance'))!.value;
    for (const secret of ['smtp-pass-123', 'mqtt-pass-456', 'hook-secret-789'])
      assert.ok(!raw.includes(secret), secret);
    const view = await b.instanceSettingsView(admin);
    assert.equal(view.smtp?.passwordSet, true);
    assert.equal(view.mqtt?.passwordSet, true);
    assert.deepEqual(view.notify.webhooks, [{ url: 'http://127.0.0.1:9/hook', secretSet: true }]);
    assert.ok(!JSON.stringify(view).includes('pass-'));
    // A change that leaves the secrets out keeps them.
    await b.setInstanceSettings(admin, {
      rateLimitPerMinute: 5,
      notify: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] },
    });
    const kept = await b.instanceSettingsView(admin);
    assert.equal(kept.notify.webhooks[0]!.secretSet, true);
    assert.equal(kept.smtp?.passwordSet, true);
    assert.equal(kept.rateLimitPerMinute, 5);
  });

  test('a project that turns a rule’s notifications off gets none; rule changes are recorded', async () => {
    await a.setRuleNotifications(admin, 'device-offline', { projectId: 'p1', notify: false });
    await a.open(offline, device('quiet'), 'offline', {});
    const [row] = (await a.openIncidents()).filter((i) => i.device_id === 'quiet');
    assert.deepEqual(await ra.notificationsOf(row!.id), []);
    await a.setRuleNotifications(admin, 'device-offline', {
      projectId: 'p1',
      notify: true,
      channels: ['webhook'],
    });
    await a.resolve(row!.id, 'manager:auto');
    assert.deepEqual(
      (await ra.notificationsOf(row!.id)).map((n) => n.channel),
      ['webhook'],
    );
    await a.updateRule(admin, 'device-cpu', { params: { threshold: 80 } });
    await assert.rejects(a.updateRule(admin, 'device-cpu', { params: { nope: 1 } }), /no parameter "nope"/);
    const audit = await a.ruleAudit(admin, 'device-offline', { offset: 0, limit: 50, sort: [], filter: [] });
    assert.equal(audit.total, 2);
    assert.equal((await a.rule(admin, 'device-cpu')).params.threshold, 80);
  });
});
