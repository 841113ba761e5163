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
import { Realm } from '../../src/manager/auth/realm.js';
import { createHash } from 'node:crypto';
import { BRIDGE_TARGET_TTL_MS, FleetService, deviceIdentifier } from '../../src/manager/fleet/service.js';
import { SecretBox } from '../../src/kernel/secret-box.js';
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
  // One character in the middle changed (a full base64 group: its decoded bytes change; the last
  // characters may already be the replacement, or carry only padding bits).
  const i = Math.floor(sealed.length / 2);
  const tampered = sealed.slice(0, i) + (sealed[i] === 'A' ? 'B' : 'A') + sealed.slice(i + 1);
  assert.throws(() => box.open(tampered));
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

  test('realm: first administrator, signing key kept, sessions started and ended', async () => {
    const repo = new ManagerAuthRepository(ctx.database);
    // Users exist already (the test above): no first administrator is made.
    assert.deepEqual(await auth.ensureAdmin('first-admin-pw'), { created: false });
    assert.equal(await auth.checkPassword('vera', 'long-password'), true);
    assert.equal(await auth.checkPassword('vera', 'wrong-password'), false);
    assert.equal(await auth.checkPassword('nobody', 'long-password'), false);
    const realm = await Realm.open(repo, auth, log, 600);
    const again = await Realm.open(repo, auth, log, 600);
    assert.deepEqual(again.jwks(), realm.jwks(), 'the signing key is kept in the database');
    realm.callbackPorts.add(8444);
    const verifier = 'v'.repeat(43);
    const request = realm.checkAuthorize(
      {
        client_id: 'manager-console',
        redirect_uri: 'https://m.example:8444/console/callback',
        response_type: 'code',
        scope: 'openid',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      },
      'm.example:8444',
    );
    const code = await realm.issueCode(request, 'vera', 'long-password');
    const tokens = await realm.exchange(
      { code, clientId: 'manager-console', redirectUri: request.redirectUri, codeVerifier: verifier },
      'https://m.example:8444/auth/realms/standalone',
    );
    const claims = await realm.verifySession(tokens.access_token);
    assert.equal(claims?.sub, 'vera');
    assert.equal(await repo.countSessions('vera', Date.now()), 1);
    assert.equal(await realm.endSession(tokens.sessionId), true);
    assert.equal(await realm.verifySession(tokens.access_token), null);
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

forEachDialect('manager bridge targets', (ctx) => {
  let fleet: FleetService;
  before(async () => {
    await ctx.database.migrate([managerAuthMigrations, fleetMigrations]);
    fleet = new FleetService(
      new FleetRepository(ctx.database),
      SecretBox.forDataDir(mkdtempSync(join(tmpdir(), 'mw-box-'))),
      log,
      { activationTtl: 3600 },
    );
  });

  /** A service on the same database that counts its device reads, holding at most `size` targets. */
  function counted(size?: number) {
    const repo = new FleetRepository(ctx.database);
    let reads = 0;
    const getDevice = repo.getDevice.bind(repo);
    repo.getDevice = (id: string) => {
      reads++;
      return getDevice(id);
    };
    // The same data directory key: a second service must open what the first sealed.
    const service = new FleetService(repo, box, log, {
      activationTtl: 3600,
      ...(size ? { bridgeTargetCacheSize: size } : {}),
    });
    return { service, reads: () => reads };
  }
  const box = SecretBox.forDataDir(mkdtempSync(join(tmpdir(), 'mw-box-')));

  async function enrol(service: FleetService, projectId: string, credential: string) {
    const [code] = await service.createCodes(ADMIN, projectId, { count: 1 });
    return service.activate({ code: code!.code, edgeCredential: credential, version: '4.4.0' });
  }

  test('served from memory after the first read; removal and another process are seen', async () => {
    const c = await fleet.createCompany(ADMIN, 'bridge-co');
    const p = await fleet.createProject(ADMIN, { companyId: c.id }, 'bridge-p');
    const other = await fleet.createProject(ADMIN, { companyId: c.id }, 'bridge-other');
    const { service, reads } = counted();
    const a = await enrol(service, p.id, 'mwt_a');
    const b = await enrol(service, p.id, 'mwt_b');

    const t = await service.bridgeTarget(ADMIN, a.deviceId, p.id);
    assert.deepEqual(t, { deviceId: a.deviceId, projectId: p.id, companyId: c.id, credential: 'mwt_a' });
    assert.equal(reads(), 1);
    assert.equal((await service.bridgeTarget(ADMIN, a.deviceId, p.id)).credential, 'mwt_a');
    assert.equal(await service.edgeCredential(a.deviceId), 'mwt_a');
    assert.equal(reads(), 1, 'the second and third calls read nothing');

    // The caller's scope is still checked on every call, cached or not.
    await assert.rejects(service.bridgeTarget(ADMIN, a.deviceId, other.id), /not found/);
    const stranger: Principal = {
      ...ADMIN,
      grants: [{ role: 'admin', companyId: null, projectId: other.id }],
    };
    await assert.rejects(service.bridgeTarget(stranger, a.deviceId), /not found/);

    // Removed through this service: refused at once.
    await service.deleteDevice(ADMIN, a.deviceId);
    await assert.rejects(service.bridgeTarget(ADMIN, a.deviceId, p.id), /not found/);
    assert.equal(await service.edgeCredential(a.deviceId), null);

    // Removed by another process on the same database: seen once the entry's time is up.
    assert.equal((await service.bridgeTarget(ADMIN, b.deviceId, p.id)).credential, 'mwt_b');
    await fleet.deleteDevice(ADMIN, b.deviceId);
    const realNow = Date.now;
    Date.now = () => realNow() + BRIDGE_TARGET_TTL_MS + 1;
    try {
      await assert.rejects(service.bridgeTarget(ADMIN, b.deviceId, p.id), /not found/);
    } finally {
      Date.now = realNow;
    }
  });

  test('a read racing a removal is not cached; the cache holds at most its bound', async () => {
    const c = await fleet.createCompany(ADMIN, 'bridge-co-2');
    const p = await fleet.createProject(ADMIN, { companyId: c.id }, 'bridge-p2');
    const { service, reads } = counted(2);
    const devices = [];
    for (const cred of ['mwt_1', 'mwt_2', 'mwt_3']) devices.push(await enrol(service, p.id, cred));

    const racing = service.bridgeTarget(ADMIN, devices[0]!.deviceId);
    await service.deleteDevice(ADMIN, devices[0]!.deviceId);
    await racing.catch(() => undefined);
    await assert.rejects(service.bridgeTarget(ADMIN, devices[0]!.deviceId), /not found/);

    for (const d of devices.slice(1)) await service.bridgeTarget(ADMIN, d.deviceId);
    assert.ok(service.bridgeTargetsCached <= 2);
    const before = reads();
    await service.bridgeTarget(ADMIN, devices[2]!.deviceId);
    assert.equal(reads(), before, 'the newest entry stayed');
  });
});
