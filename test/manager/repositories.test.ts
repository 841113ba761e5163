/**
 * The manager's repositories and domain services on both dialects (SQLite and PostgreSQL):
 * tokens and scoped roles, the fleet with counts and scope filters, single-use activation under a
 * race, the link bookkeeping (online, heartbeats, history) and the sealed edge credential.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { forEachDialect } from '../helpers/postgres.js';
import {
  ManagerAuthRepository,
  ManagerAuthService,
  managerAuthMigrations,
  type Principal,
} from '../../src/manager/auth/index.js';
import { FleetRepository } from '../../src/manager/fleet/repository.js';
import { FleetService, deviceIdentifier } from '../../src/manager/fleet/service.js';
import { SecretBox } from '../../src/manager/fleet/secret-box.js';
import { fleetMigrations } from '../../src/manager/fleet/migrations/index.js';
import type { ListSpec } from '../../src/kernel/paging.js';

const log = pino({ level: 'silent' });
const ADMIN: Principal = {
  subject: 'test',
  tokenId: 't',
  tokenName: 't',
  username: null,
  grants: [{ role: 'admin', companyId: null, projectId: null }],
};
const all: ListSpec = { offset: 0, limit: 100, sort: [], filter: [] };

test('device identifiers have 25 characters', () => {
  const ids = new Set(Array.from({ length: 1000 }, deviceIdentifier));
  assert.equal(ids.size, 1000);
  for (const id of ids) assert.match(id, /^[a-z0-9]{25}$/);
});

test('the secret box round-trips and refuses a tampered value', () => {
  const box = SecretBox.forDataDir(mkdtempSync(join(tmpdir(), 'mw-box-')));
  const sealed = box.seal('mwt_secret');
  assert.notEqual(sealed.includes('mwt_secret'), true);
  assert.equal(box.open(sealed), 'mwt_secret');
  assert.throws(() => box.open(sealed.slice(0, -2) + 'AA'));
});

forEachDialect('manager repositories', (ctx) => {
  let auth: ManagerAuthService;
  let fleet: FleetService;
  before(async () => {
    await ctx.database.migrate([managerAuthMigrations, fleetMigrations]);
    auth = new ManagerAuthService(new ManagerAuthRepository(ctx.database), log);
    fleet = new FleetService(
      new FleetRepository(ctx.database),
      SecretBox.forDataDir(mkdtempSync(join(tmpdir(), 'mw-box-'))),
      log,
      { activationTtl: 3600 },
    );
  });

  test('tokens: hashed, rotated, revoked; user tokens carry the user grants', async () => {
    const t = await auth.createToken('ops', 'operator');
    const p = await auth.authenticate(t.token);
    assert.deepEqual(p.grants, [{ role: 'operator', companyId: null, projectId: null }]);
    const rotated = await auth.rotateToken(t.id);
    await assert.rejects(auth.authenticate(t.token), /invalid/);
    assert.equal((await auth.authenticate(rotated.token)).tokenId, t.id);
    await auth.revokeToken(t.id);
    await assert.rejects(auth.authenticate(rotated.token), /invalid/);
    await auth.createUser('vera', 'long-password');
    await auth.grant('vera', 'viewer', { companyId: 'c1' });
    const vt = await auth.createToken('vera', 'admin', 'vera');
    assert.deepEqual((await auth.authenticate(vt.token)).grants, [
      { role: 'viewer', companyId: 'c1', projectId: null },
    ]);
    const page = await auth.listBindings({
      ...all,
      filter: [{ field: 'username', op: 'eq', value: 'vera' }],
    });
    assert.equal(page.total, 1);
  });

  test('fleet: counts, scope filters, single-use activation under a race, link bookkeeping', async () => {
    const c = await fleet.createCompany(ADMIN, 'co');
    const p1 = await fleet.createProject(ADMIN, { companyId: c.id }, 'p1');
    const p2 = await fleet.createProject(ADMIN, { companyName: 'co' }, 'p2');
    await assert.rejects(fleet.createProject(ADMIN, { companyId: c.id }, 'p1'), /exists/);
    const [code] = await fleet.createCodes(ADMIN, p1.id, { count: 1 });
    const race = await Promise.allSettled(
      [1, 2, 3].map(() => fleet.activate({ code: code!.code, edgeCredential: 'mwt_cred', version: '4.4.0' })),
    );
    const won = race.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, JSON.stringify(race.map((r) => r.status)));
    const act = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<FleetService['activate']>>>).value;
    assert.equal(await fleet.edgeCredential(act.deviceId), 'mwt_cred');
    assert.deepEqual(await fleet.verifyLink(act.deviceId, act.linkSecret), {
      id: act.deviceId,
      projectId: p1.id,
    });
    assert.equal(await fleet.verifyLink(act.deviceId, 'mwl_wrong'), null);

    const companies = await fleet.listCompanies(ADMIN, all);
    assert.deepEqual(
      companies.items.map((x) => [x.companyName, x.totalNumOfProjects, x.totalNumOfDevices]),
      [['co', 2, 1]],
    );
    const scoped: Principal = { ...ADMIN, grants: [{ role: 'viewer', companyId: null, projectId: p2.id }] };
    assert.equal((await fleet.listDevices(scoped, all)).total, 0);
    assert.equal((await fleet.listProjects(scoped, {}, all)).items[0]!.id, p2.id);
    assert.equal((await fleet.listCompanies(scoped, all)).total, 1);
    await assert.rejects(fleet.device(scoped, act.deviceId), /not found/);

    const conn = await fleet.linkUp(act.deviceId, '127.0.0.1', {
      version: '4.4.0',
      host: '{"hostname":"h"}',
    });
    await fleet.recordHeartbeats([
      { id: act.deviceId, at: Date.now(), metrics: { cpuPercent: 42.4, memoryBytes: 1000 } },
    ]);
    const top = await fleet.topMetrics(ADMIN, p1.id, 'cpu', 5);
    assert.equal(top.items[0]!.value, 42);
    assert.equal((await fleet.device(ADMIN, act.deviceId)).online, true);
    await fleet.linkDown(act.deviceId, conn, 'connection lost', false);
    const d = await fleet.device(ADMIN, act.deviceId);
    assert.equal(d.online, false);
    assert.equal(d.host?.hostname, 'h');
    const history = await fleet.connections(ADMIN, act.deviceId, all);
    assert.equal(history.items[0]!.reason, 'connection lost');
    const status = await fleet.deviceStatus(ADMIN, all, p1.id);
    assert.equal(status.items[0]!.status, 'ACTIVATED');
    assert.deepEqual(await fleet.counts(), { devices: 1, online: 0 });
  });
});
