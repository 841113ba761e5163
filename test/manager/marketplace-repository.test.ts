/**
 * The marketplace catalogue and the asset hub's tables on both dialects (SQLite and PostgreSQL):
 * publishing, versions in order (newer only), search, kind and category filters, categories,
 * usage events counted once and trimmed; imports unique per company and item; the telemetry
 * queue bounded (oldest, parked first, dropped), parked and unparked. Also the version rule.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { forEachDialect } from '../helpers/postgres.js';
import type { Principal } from '../../src/manager/auth/index.js';
import { marketplaceMigrations } from '../../src/manager/marketplace/migrations/index.js';
import { MarketplaceRepository } from '../../src/manager/marketplace/repository.js';
import { MarketplaceService } from '../../src/manager/marketplace/service.js';
import { checkContent, templateDocumentOf, versionSeq } from '../../src/manager/marketplace/content.js';
import { assetHubMigrations } from '../../src/manager/assethub/migrations/index.js';
import { AssetHubRepository, type ImportRow } from '../../src/manager/assethub/repository.js';
import { hubUrlOf } from '../../src/manager/assethub/client.js';
import { resolveRefs, secretRefs } from '../../src/manager/marketplace/secrets.js';
import type { ListSpec } from '../../src/kernel/paging.js';

const log = pino({ level: 'silent' });
const ADMIN: Principal = {
  subject: 'token:admin',
  tokenId: 't',
  tokenName: 't',
  username: null,
  grants: [{ role: 'admin', companyId: null, projectId: null }],
};
const all: ListSpec = { offset: 0, limit: 100, sort: [], filter: [] };
const twin = (name: string) => ({ models: [{ Name: name, Assets: [] }] });

test('versions order by major, minor, patch; bad ones are refused', () => {
  assert.ok(versionSeq('1.10.0') > versionSeq('1.9.99'));
  assert.ok(versionSeq('2.0.0') > versionSeq('1.99999.99999'));
  for (const v of ['1.0', 'v1.0.0', '1.0.0-beta', '100000.0.0', ''])
    assert.throws(() => versionSeq(v), /major\.minor\.patch/);
});

test('content by kind; template-shaped kinds become one-section templates', () => {
  assert.throws(() => checkContent('TWIN_MODEL', { models: [], x: 1 }), /unknown field/);
  assert.throws(
    () => checkContent('APPLICATION', { containers: Array(21).fill({ Image: 'a' }) }),
    /more than 20/,
  );
  assert.throws(() => checkContent('ANALYTICS_WORKSPACE', { workspace: {} }), /ExportWorkspace/);
  assert.deepEqual(templateDocumentOf('TWIN_MODEL', twin('m')).sections, {
    twins: { transformations: [], models: [{ Name: 'm', Assets: [] }] },
  });
  const ws = { version: 1, workspace: { name: 'w' } };
  assert.deepEqual(templateDocumentOf('ANALYTICS_WORKSPACE', ws).sections, {
    analytics: { workspaces: [ws], variables: {} },
  });
  assert.throws(
    () => templateDocumentOf('APPLICATION', {}),
    /not installed through a configuration template/,
  );
});

test('secret references are found and resolved in every string, at any depth', () => {
  const spec = {
    Env: ['A={{mpc-secret:a}}', 'B={{mpc-secret:b}}{{mpc-secret:a}}'],
    Auth: { p: '{{mpc-secret:c}}' },
    n: 1,
  };
  assert.deepEqual([...secretRefs(spec)].sort(), ['a', 'b', 'c']);
  assert.deepEqual(
    resolveRefs(
      spec,
      new Map([
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
      ]),
    ),
    { Env: ['A=1', 'B=21'], Auth: { p: '3' }, n: 1 },
  );
});

test('a hub URL is https, without credentials or query', () => {
  assert.equal(hubUrlOf('https://hub.example.com:8444/'), 'https://hub.example.com:8444');
  for (const u of ['http://hub', 'https://u:p@hub', 'https://hub/?x=1', 'hub'])
    assert.throws(() => hubUrlOf(u), /url/);
});

forEachDialect('marketplace and asset hub tables', (ctx) => {
  let mp: MarketplaceService;
  let hub: AssetHubRepository;
  before(async () => {
    await ctx.database.migrate([marketplaceMigrations, assetHubMigrations]);
    mp = new MarketplaceService(
      new MarketplaceRepository(ctx.database),
      { maxItems: 3, maxVersions: 3, maxContentBytes: 10_000, maxEvents: 3 },
      log,
    );
    hub = new AssetHubRepository(ctx.database);
  });

  test('publish, versions, search and categories, limits', async () => {
    const a = await mp.publish(ADMIN, {
      name: 'Motor',
      kind: 'TWIN_MODEL',
      categories: ['Drives', 'energy'],
      description: 'An electric motor',
      version: '1.2.0',
      content: twin('Motor'),
    });
    await mp.publish(ADMIN, {
      name: 'Pump',
      kind: 'TWIN_MODEL',
      categories: ['energy'],
      version: '1.0.0',
      content: twin('Pump'),
    });
    await mp.publishVersion(ADMIN, a.id, { version: '1.10.0', content: twin('Motor') });
    await assert.rejects(
      mp.publishVersion(ADMIN, a.id, { version: '1.9.0', content: twin('Motor') }),
      /not newer/,
    );
    await mp.publishVersion(ADMIN, a.id, { version: '2.0.0', content: twin('Motor') });
    await assert.rejects(
      mp.publishVersion(ADMIN, a.id, { version: '3.0.0', content: twin('Motor') }),
      /at most 3 versions/,
    );
    const versions = await mp.versions(a.id, { ...all, sort: [{ field: 'version', order: 'desc' }] });
    assert.deepEqual(
      versions.items.map((v) => v.version),
      ['2.0.0', '1.10.0', '1.2.0'],
    );
    assert.equal((await mp.get(a.id)).latestVersion, '2.0.0');
    assert.deepEqual(
      (await mp.list(all, { q: 'ELECTRIC' })).items.map((i) => i.name),
      ['Motor'],
    );
    assert.equal((await mp.list(all, { category: 'energy' })).total, 2);
    assert.equal((await mp.list(all, { category: 'drives' })).total, 1);
    assert.equal((await mp.list(all, { category: 'driv' })).total, 0);
    assert.deepEqual((await mp.categories()).items, [
      { name: 'drives', items: 1 },
      { name: 'energy', items: 2 },
    ]);
    await mp.publish(ADMIN, { name: 'Fan', kind: 'TWIN_MODEL', version: '1.0.0', content: twin('Fan') });
    await assert.rejects(
      mp.publish(ADMIN, { name: 'Four', kind: 'TWIN_MODEL', version: '1.0.0', content: twin('x') }),
      /at most 3 items/,
    );
    await assert.rejects(
      mp.publish(ADMIN, {
        name: 'Big',
        kind: 'TWIN_MODEL',
        version: '1.0.0',
        content: twin('x'.repeat(20_000)),
      }),
      /at most 10000 bytes/,
    );
    const events = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        eventId: `e${i}`,
        itemId: a.id,
        version: '2.0.0',
        action: 'IMPORT' as const,
      }));
    assert.deepEqual(await mp.recordEvents(ADMIN, events(2)), { received: 2, accepted: 2 });
    assert.deepEqual(await mp.recordEvents(ADMIN, events(2)), { received: 2, accepted: 0 });
    await mp.recordEvents(ADMIN, events(5));
    assert.ok((await mp.events(ADMIN, a.id)).total <= 3, 'events trimmed to the bound');
    assert.equal((await mp.get(a.id)).imports, 5);
  });

  test('imports are unique per company and item', async () => {
    const row: ImportRow = {
      id: 'i1',
      company_id: 'c1',
      hub_url: 'https://hub',
      item_id: 'item',
      item_name: 'Item',
      kind: 'TWIN_MODEL',
      version: '1.0.0',
      latest_version: null,
      content: '{}',
      size: 2,
      target_ref: null,
      imported_by: 'x',
      imported_at: 1,
      updated_by: 'x',
      updated_at: 1,
      synced_at: null,
    };
    await hub.insertImport(row);
    await assert.rejects(hub.insertImport({ ...row, id: 'i2' }));
    await hub.insertImport({ ...row, id: 'i3', company_id: 'c2' });
    assert.equal((await hub.listImports('c1', all)).total, 1);
    await hub.updateImport('i1', { latest_version: '2.0.0' });
    assert.equal((await hub.importOfItem('c1', 'item'))?.latest_version, '2.0.0');
    assert.equal(await hub.countImports(), 2);
  });

  test('the telemetry queue: bounded, parked first dropped, unparked', async () => {
    const ev = (id: string, at: number) => ({
      id,
      item_id: 'item',
      version: '1.0.0',
      action: 'IMPORT',
      status: 'PENDING',
      attempts: 0,
      last_error: null,
      next_at: at,
      created_at: at,
    });
    await hub.enqueueEvent(ev('a', 1), 2);
    await hub.enqueueEvent(ev('b', 2), 2);
    await hub.failEvents([ev('b', 2)], 'refused', () => true, 10);
    assert.deepEqual(await hub.eventCounts(), { PENDING: 1, PARKED: 1 });
    assert.equal(await hub.enqueueEvent(ev('c', 3), 2), 1);
    assert.deepEqual((await hub.dueEvents(100, 10)).map((e) => e.id).sort(), ['a', 'c']);
    await hub.failEvents([ev('a', 1)], 'down', () => true, 10);
    assert.equal(await hub.unpark(5), 1);
    assert.deepEqual((await hub.dueEvents(5, 10)).map((e) => e.id).sort(), ['a', 'c']);
    await hub.deleteEvents(['a', 'c']);
    assert.deepEqual(await hub.eventCounts(), {});
  });
});
