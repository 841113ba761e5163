/**
 * The asset hub between two real managers: the hub is a `millwright manager` process of its own
 * (its marketplace, `/mpcs/v1/`, published to with its admin token), the importer is a manager
 * started by this test. The importer's admin sets the hub (URL, a viewer token of the hub, the
 * hub's self-signed certificate), validates and connects; its operator browses the catalogue and
 * versions, imports a configuration template (it becomes a company template), a twin model and a
 * hierarchy template (kept as documents), syncs (v2 published on the hub: an update is
 * available), updates to v2 (the company template gets v2's document), deletes an import. Usage
 * events reach the hub; with a wrong token they are parked, and unparked once the token is right.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';

const dirs = tempDirs('mw-asset-hub-');
const env = cleanEnv();
let hubProc: CliProcess;
let hubUrl: string;
let hubAdmin: string;
let hubViewer: string;
let hubCa: string;
let m: TestManager;
let operator: string;
const ids: Record<string, string> = {};
const imports: Record<string, string> = {};

/** A call to the hub's marketplace with `Authorization: <token>`. */
const hub = (path: string, o: Parameters<typeof http>[1] = {}) =>
  http(`${hubUrl}/mpcs/v1${path}`, { ...o, headers: { authorization: hubAdmin, ...o.headers } });
/** A call to the importer's asset hub routes, as its operator. */
const ah = (path: string, o: Parameters<TestManager['call']>[1] = {}) =>
  m.call(`/api/v1/asset-hub${path}`, { token: operator, ...o });
const co = '/company/hub-co';

const template = (description: string) => ({
  format: 'millwright.config-template',
  version: 1,
  sections: {
    devicehub: { devices: [{ Name: 'hub-press', DriverID: 'Generator', Description: description }] },
  },
});

before(async () => {
  const dir = dirs.make();
  const token = (role: string, name: string) =>
    runCliJson(['manager', 'token', 'create', '--data-dir', dir, '--name', name, '--role', role], env)
      .token as string;
  hubAdmin = token('admin', 'hub-admin');
  hubViewer = token('viewer', 'importer');
  hubProc = await startCli(
    [
      'manager',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--admin-port',
      '0',
      '--data-dir',
      dir,
      '--log-level',
      'warn',
    ],
    { env, timeoutMs: 60_000 },
  );
  hubUrl = `https://127.0.0.1:${hubProc.ready.services.manager!.ports.port!}`;
  hubCa = readFileSync(join(dir, 'tls', 'server.crt'), 'utf8');
  m = await startTestManager({ assetHubTelemetryInterval: 200 });
  const { companyId } = await makeProject(m, 'hub-co', 'hub-plant');
  operator = (await m.manager.auth.createToken('hub-operator', 'operator')).token;
  void companyId;
});
after(async () => {
  await m?.stop();
  await hubProc?.stop();
  dirs.removeAll();
});

describe('publishing on the hub', () => {
  test('three items on the hub manager', async () => {
    const items = [
      { name: 'Press line', kind: 'CONFIGURATION_TEMPLATE', version: '1.0.0', content: template('hub v1') },
      {
        name: 'Motor',
        kind: 'TWIN_MODEL',
        version: '1.0.0',
        content: { models: [{ Name: 'Motor', Assets: [] }] },
      },
      {
        name: 'ISA-95',
        kind: 'HIERARCHY_TEMPLATE',
        version: '1.0.0',
        categories: ['isa-95'],
        content: { levels: ['enterprise', 'site', 'area', 'line', 'cell'] },
      },
    ];
    for (const json of items) {
      const r = await hub('/items', { json });
      assert.equal(r.status, 201, r.text);
      ids[json.kind] = r.body.id;
    }
  });
});

describe('settings (admin console)', () => {
  test('none at first: browsing is a 409 asset_hub_not_configured', async () => {
    assert.deepEqual((await m.admin('/admin/v1/asset-hub/settings')).body, { configured: false });
    const r = await ah('/catalog');
    assert.equal(r.status, 409, r.text);
    assert.equal(r.body.code, 'asset_hub_not_configured');
    assert.deepEqual((await ah('/connection')).body, { configured: false, connected: false });
  });

  test('validate: the hub reached with the token; a wrong token or no CA is not valid; bad input 400', async () => {
    const ok = await m.admin('/admin/v1/asset-hub/settings/validate', {
      json: { url: hubUrl, token: hubViewer, caCertificate: hubCa },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.valid, true, ok.text);
    assert.equal(ok.body.hubTokenName, 'importer');
    assert.equal(ok.body.catalogueItems, 3);
    const wrong = await m.admin('/admin/v1/asset-hub/settings/validate', {
      json: { url: hubUrl, token: 'mwt_wrong', caCertificate: hubCa },
    });
    assert.equal(wrong.body.valid, false);
    assert.match(wrong.body.reason, /401/);
    const untrusted = await m.admin('/admin/v1/asset-hub/settings/validate', {
      json: { url: hubUrl, token: hubViewer },
    });
    assert.equal(untrusted.body.valid, false);
    assert.match(untrusted.body.reason, /could not be reached/);
    for (const json of [
      { url: 'http://127.0.0.1:1', token: 'x' },
      { url: 'not a url', token: 'x' },
      { url: hubUrl },
      { url: hubUrl, token: 'x', caCertificate: 'not pem' },
      { url: hubUrl, token: 'x', extra: 1 },
    ]) {
      const r = await m.admin('/admin/v1/asset-hub/settings/validate', { json });
      assert.equal(r.status, 400, `${JSON.stringify(json)}: ${r.text}`);
    }
    // Only a global admin: an operator's token is refused on the admin console.
    const op = await m.admin('/admin/v1/asset-hub/settings', { token: operator });
    assert.equal(op.status, 403);
  });

  test('set, read (the token never shown), connect', async () => {
    const set = await m.admin('/admin/v1/asset-hub/settings', {
      json: { url: `${hubUrl}/`, token: hubViewer, caCertificate: hubCa },
    });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.url, hubUrl);
    const read = await m.admin('/admin/v1/asset-hub/settings');
    assert.equal(read.body.tokenSet, true);
    assert.equal(read.body.telemetry, true);
    assert.equal(JSON.stringify(read.body).includes(hubViewer), false);
    // The saved token is not sent to another URL.
    const moved = await m.admin('/admin/v1/asset-hub/settings', { json: { url: 'https://127.0.0.1:1' } });
    assert.equal(moved.status, 400, moved.text);
    assert.match(moved.body.message, /token is required when the url changes/);
    const c = await ah('/connect', { method: 'POST' });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.connected, true, c.text);
    const s = await ah('/connection');
    assert.equal(s.body.connected, true);
    assert.equal(s.body.url, hubUrl);
  });
});

describe('catalogue and imports', () => {
  test('browse: search, kind, one item, its versions, one version with its content', async () => {
    const all = await ah('/catalog?sort=name:asc');
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(
      all.body.items.map((i: any) => i.name),
      ['ISA-95', 'Motor', 'Press line'],
    );
    assert.equal((await ah('/catalog?kind=TWIN_MODEL')).body.total, 1);
    assert.equal((await ah('/catalog?q=isa')).body.items[0].kind, 'HIERARCHY_TEMPLATE');
    const item = await ah(`/catalog/${ids.CONFIGURATION_TEMPLATE}`);
    assert.equal(item.body.latestVersion, '1.0.0');
    const versions = await ah(`/catalog/${ids.CONFIGURATION_TEMPLATE}/versions`);
    assert.deepEqual(
      versions.body.items.map((v: any) => v.version),
      ['1.0.0'],
    );
    const v = await ah(`/catalog/${ids.CONFIGURATION_TEMPLATE}/versions/1.0.0`);
    assert.equal(v.body.content.sections.devicehub.devices[0].Description, 'hub v1');
    assert.equal((await ah('/catalog/nope')).status, 404);
  });

  test('import three kinds into the company; a configuration template becomes a company template', async () => {
    for (const kind of ['CONFIGURATION_TEMPLATE', 'TWIN_MODEL', 'HIERARCHY_TEMPLATE']) {
      const r = await ah(`${co}/imports`, { json: { itemId: ids[kind] } });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.body.version, '1.0.0');
      assert.equal(r.body.kind, kind);
      imports[kind] = r.body.importId;
      if (kind === 'CONFIGURATION_TEMPLATE') assert.ok(r.body.targetRef);
      else assert.equal(r.body.targetRef, null);
    }
    const again = await ah(`${co}/imports`, { json: { itemId: ids.TWIN_MODEL } });
    assert.equal(again.status, 409);
    assert.equal((await ah(`${co}/imports`, { json: { itemId: 'nope' } })).status, 404);
    assert.equal((await ah('/company/no-such-co/imports', { json: { itemId: ids.TWIN_MODEL } })).status, 404);
    const list = await ah(`${co}/imports?sort=itemName:asc`);
    assert.equal(list.body.total, 3);
    const one = await ah(`${co}/imports/${imports.HIERARCHY_TEMPLATE}`);
    assert.deepEqual(one.body.content.levels, ['enterprise', 'site', 'area', 'line', 'cell']);
    const t = await m.call(
      `/api/v1/template/content?id=${(await ah(`${co}/imports/${imports.CONFIGURATION_TEMPLATE}`)).body.targetRef}`,
    );
    assert.equal(t.status, 200, t.text);
    assert.equal(t.body.sections.devicehub.devices[0].Description, 'hub v1');
    // A viewer of the importer reads imports but may not import.
    const viewer = (await m.manager.auth.createToken('hub-viewer', 'viewer')).token;
    assert.equal((await ah(`${co}/imports`, { token: viewer })).status, 200);
    assert.equal(
      (await ah(`${co}/imports`, { token: viewer, json: { itemId: ids.TWIN_MODEL } })).status,
      403,
    );
  });

  test('v2 published on the hub: sync shows it, update moves the import and its template to v2', async () => {
    const v2 = await hub(`/items/${ids.CONFIGURATION_TEMPLATE}/versions`, {
      json: { version: '2.0.0', changelog: 'v2', content: template('hub v2') },
    });
    assert.equal(v2.status, 201, v2.text);
    const sync = await ah(`${co}/sync`, { method: 'POST', json: {} });
    assert.equal(sync.status, 200, sync.text);
    const line = sync.body.items.find((i: any) => i.importId === imports.CONFIGURATION_TEMPLATE);
    assert.deepEqual([line.version, line.latestVersion, line.updateAvailable], ['1.0.0', '2.0.0', true]);
    const listed = await ah(`${co}/imports/${imports.CONFIGURATION_TEMPLATE}`);
    assert.equal(listed.body.updateAvailable, true);
    const up = await ah(`${co}/imports/${imports.CONFIGURATION_TEMPLATE}/update`, {
      method: 'POST',
      json: {},
    });
    assert.equal(up.status, 200, up.text);
    assert.deepEqual([up.body.updated, up.body.previousVersion, up.body.version], [true, '1.0.0', '2.0.0']);
    assert.equal(up.body.updateAvailable, false);
    const t = await m.call(`/api/v1/template/${up.body.targetRef}`);
    assert.equal(t.body.version, 2, t.text);
    const content = await m.call(`/api/v1/template/content?id=${up.body.targetRef}`);
    assert.equal(content.body.sections.devicehub.devices[0].Description, 'hub v2');
    const same = await ah(`${co}/imports/${imports.CONFIGURATION_TEMPLATE}/update`, {
      method: 'POST',
      json: {},
    });
    assert.equal(same.body.updated, false);
    assert.equal(
      (
        await ah(`${co}/imports/${imports.CONFIGURATION_TEMPLATE}/update`, {
          method: 'POST',
          json: { version: '9.0.0' },
        })
      ).status,
      404,
    );
    // Sync with update: nothing left to update; an item deleted on the hub is reported on its line.
    assert.equal((await hub(`/items/${ids.TWIN_MODEL}`, { method: 'DELETE' })).status, 204);
    const after2 = await ah(`${co}/sync`, { method: 'POST', json: { update: true } });
    const gone = after2.body.items.find((i: any) => i.importId === imports.TWIN_MODEL);
    assert.equal(gone.error.code, 'not_found');
    assert.equal(after2.body.items.filter((i: any) => i.updated).length, 0);
  });

  test('delete an import; usage events reached the hub', async () => {
    assert.equal((await ah(`${co}/imports/${imports.HIERARCHY_TEMPLATE}`, { method: 'DELETE' })).status, 204);
    assert.equal((await ah(`${co}/imports/${imports.HIERARCHY_TEMPLATE}`)).status, 404);
    assert.equal((await ah(`${co}/imports`)).body.total, 2);
    await eventually(
      async () => (await hub(`/items/${ids.HIERARCHY_TEMPLATE}/events`)).body.total === 2,
      15_000,
      'the import and delete events on the hub',
    );
    const events = (await hub(`/items/${ids.CONFIGURATION_TEMPLATE}/events`)).body.items.map((e: any) => [
      e.action,
      e.version,
    ]);
    assert.deepEqual(events.sort(), [
      ['IMPORT', '1.0.0'],
      ['UPDATE', '2.0.0'],
    ]);
    assert.equal((await hub(`/items/${ids.CONFIGURATION_TEMPLATE}`)).body.imports, 1);
  });
});

describe('telemetry parked and unparked', () => {
  test('a wrong token parks the events; the right token and unpark deliver them', async () => {
    const set = await m.admin('/admin/v1/asset-hub/settings', { json: { token: 'mwt_revoked' } });
    assert.equal(set.status, 200, set.text);
    assert.equal((await ah(`${co}/imports/${imports.TWIN_MODEL}`, { method: 'DELETE' })).status, 204);
    await eventually(
      async () => (await m.admin('/admin/v1/asset-hub/telemetry')).body.parked === 1,
      15_000,
      'the delete event parked',
    );
    const t = await m.admin('/admin/v1/asset-hub/telemetry');
    assert.match(t.body.oldestParked[0].lastError, /401/);
    await m.admin('/admin/v1/asset-hub/settings', { json: { token: hubViewer } });
    const u = await m.admin('/admin/v1/asset-hub/telemetry/unpark', { method: 'POST', json: {} });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.unparked, 1);
    assert.equal(u.body.delivered, 1);
    assert.equal(u.body.parked, 0);
    const ev = await hub(`/items/${ids.TWIN_MODEL}/events`);
    // The item was deleted on the hub: its events are recorded all the same (by id).
    assert.equal(ev.status, 404);
  });

  test('delete the settings: browsing is a 409 again; deleting twice is a 404', async () => {
    assert.equal((await m.admin('/admin/v1/asset-hub/settings', { method: 'DELETE' })).status, 204);
    assert.equal((await m.admin('/admin/v1/asset-hub/settings', { method: 'DELETE' })).status, 404);
    assert.equal((await ah('/catalog')).status, 409);
    // The imports stay (their documents are kept here).
    assert.equal((await ah(`${co}/imports`)).body.total, 1);
  });
});
