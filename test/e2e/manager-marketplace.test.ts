/**
 * The marketplace (`/mpcs/v1/`) of a real manager with two real edges enrolled in one project (all
 * over HTTPS and the link): publishing by a global admin (not by an operator), versions, search
 * and categories, the authentication of contract part 5 (`Authorization: <token>` without Bearer,
 * and `X-AuthToken`; Bearer is a 401), and an item installed on the project as a task: every edge
 * of the project gets the template (read back from each edge), then version 2 on one device.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';

let m: TestManager;
const edges: TestEdge[] = [];
const ids: string[] = [];
let projectId: string;
let companyId: string;
let itemId: string;

async function enrol(e: TestEdge, code: string): Promise<string> {
  const c = { cookie: `jwtAccess=${await bootstrapAdmin(e)}` };
  const proposed = await e.call('/dm/cloud/url', { headers: c, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  await e.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: c });
  const a = await e.call('/dm/cloud', { headers: c, json: { code } });
  assert.equal(a.status, 200, a.text);
  return a.body.deviceId as string;
}

/** A call to `/mpcs/` with `Authorization: <token>` (no Bearer), as the contract says. */
const mp = (path: string, options: Parameters<TestManager['call']>[1] = {}) =>
  m.call(`/mpcs/v1${path}`, {
    token: null,
    ...options,
    headers: { authorization: m.token, ...options.headers },
  });

const template = (description: string) => ({
  format: 'millwright.config-template',
  version: 1,
  sections: {
    devicehub: {
      devices: [{ Name: 'mp-press', DriverID: 'Generator', Description: description, Tags: [] }],
    },
  },
});

async function devicesOf(i: number): Promise<{ Name: string; Description: string }[]> {
  const r = await m.call(`/api/v1/edge/${projectId}/${ids[i]}/devicehub/v2`, {
    json: { query: 'query { ListDevices(input: { Limit: 100 }) { Items { Name Description } } }' },
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data.ListDevices.Items;
}

async function finished(taskId: string): Promise<any> {
  let task: any;
  await eventually(
    async () => {
      task = (await m.call(`/api/v1/async-task/${taskId}`)).body;
      return task.status !== 'RUNNING';
    },
    60_000,
    `task ${taskId} finished`,
  );
  return task;
}

before(async () => {
  m = await startTestManager();
  ({ projectId, companyId } = await makeProject(m, 'mp-co', 'mp-plant'));
  for (let i = 0; i < 2; i++) {
    const e = await startTestEdge();
    edges.push(e);
    ids.push(await enrol(e, await activationCode(m, projectId)));
  }
  for (const id of ids)
    await eventually(
      async () => (await m.call(`/api/v1/device/${id}`)).body.online === true,
      20_000,
      'online',
    );
});
after(async () => {
  for (const e of edges) await e.stop().catch(() => undefined);
  await m?.stop();
});

describe('authentication (contract part 5)', () => {
  test('Authorization: <token> and X-AuthToken are taken; Bearer and none are 401', async () => {
    assert.equal((await mp('/items')).status, 200);
    assert.equal((await m.call('/mpcs/v1/items')).status, 200);
    const bearer = await mp('/items', { headers: { authorization: `Bearer ${m.token}` } });
    assert.equal(bearer.status, 401);
    assert.match(bearer.body.message, /without "Bearer"/);
    assert.equal((await m.call('/mpcs/v1/items', { token: null })).status, 401);
    assert.equal((await mp('/items', { headers: { authorization: 'mwt_not-a-token' } })).status, 401);
  });
});

describe('catalogue', () => {
  test('a global admin publishes; an operator may not (403); bad content is a 400', async () => {
    const r = await mp('/items', {
      json: {
        name: 'Press line',
        kind: 'CONFIGURATION_TEMPLATE',
        description: 'A generator press for packaging lines',
        categories: ['Packaging', 'energy'],
        version: '1.0.0',
        changelog: 'first',
        content: template('from the marketplace v1'),
      },
    });
    assert.equal(r.status, 201, r.text);
    itemId = r.body.id;
    assert.equal(r.body.latestVersion, '1.0.0');
    assert.deepEqual(r.body.categories, ['energy', 'packaging']);
    const op = (await m.manager.auth.createToken('mp-operator', 'operator')).token;
    const refused = await mp('/items', {
      headers: { authorization: op },
      json: { name: 'x', kind: 'TWIN_MODEL', version: '1.0.0', content: { models: [{ Name: 'm' }] } },
    });
    assert.equal(refused.status, 403, refused.text);
    const bad = [
      { name: 'b', kind: 'CONFIGURATION_TEMPLATE', version: '1.0.0', content: { format: 'nope' } },
      { name: 'b', kind: 'TWIN_MODEL', version: '1.0.0', content: { models: [] } },
      { name: 'b', kind: 'APPLICATION', version: '1.0.0', content: { containers: [{}] } },
      { name: 'b', kind: 'TWIN_MODEL', version: 'v1', content: { models: [{ Name: 'm' }] } },
      { name: 'b', kind: 'GADGET', version: '1.0.0', content: {} },
      { name: 'b', kind: 'TWIN_MODEL', version: '1.0.0', content: { models: [{ Name: 'm' }] }, extra: 1 },
    ];
    for (const json of bad) {
      const x = await mp('/items', { json });
      assert.equal(x.status, 400, `${JSON.stringify(json)}: ${x.text}`);
    }
    const dup = await mp('/items', {
      json: {
        name: 'Press line',
        kind: 'TWIN_MODEL',
        version: '1.0.0',
        content: { models: [{ Name: 'm' }] },
      },
    });
    assert.equal(dup.status, 409, dup.text);
  });

  test('versions: newer only, never changed; search, kind and category; categories', async () => {
    const twin = await mp('/items', {
      json: {
        name: 'Motor twin',
        kind: 'TWIN_MODEL',
        categories: ['energy'],
        version: '0.1.0',
        content: { models: [{ Name: 'Motor', Assets: [] }] },
      },
    });
    assert.equal(twin.status, 201, twin.text);
    const older = await mp(`/items/${itemId}/versions`, {
      json: { version: '0.9.0', content: template('x') },
    });
    assert.equal(older.status, 409, older.text);
    const v2 = await mp(`/items/${itemId}/versions`, {
      json: { version: '2.0.0', changelog: 'second', content: template('from the marketplace v2') },
    });
    assert.equal(v2.status, 201, v2.text);
    assert.equal(v2.body.latestVersion, '2.0.0');
    const again = await mp(`/items/${itemId}/versions`, {
      json: { version: '2.0.0', content: template('y') },
    });
    assert.equal(again.status, 409);
    const versions = await mp(`/items/${itemId}/versions`);
    assert.deepEqual(
      versions.body.items.map((v: any) => v.version),
      ['2.0.0', '1.0.0'],
    );
    const one = await mp(`/items/${itemId}/versions/1.0.0`);
    assert.equal(one.body.content.sections.devicehub.devices[0].Description, 'from the marketplace v1');
    assert.equal((await mp(`/items/${itemId}/versions/latest`)).body.version, '2.0.0');
    assert.equal((await mp(`/items/${itemId}/versions/9.9.9`)).status, 404);
    const item = await mp(`/items/${itemId}`);
    assert.equal(item.body.versions, 2);
    assert.equal(item.body.recentVersions.length, 2);
    const search = await mp('/items?q=PACKAGING');
    assert.deepEqual(
      search.body.items.map((i: any) => i.name),
      ['Press line'],
    );
    const energy = await mp('/items?category=energy&sort=name:desc');
    assert.deepEqual(
      energy.body.items.map((i: any) => i.name),
      ['Press line', 'Motor twin'],
    );
    assert.equal((await mp('/items?kind=TWIN_MODEL')).body.total, 1);
    assert.equal((await mp('/items?kind=NOPE')).status, 400);
    const cats = await mp('/categories');
    assert.deepEqual(cats.body.items, [
      { name: 'energy', items: 2 },
      { name: 'packaging', items: 1 },
    ]);
    const renamed = await mp(`/items/${twin.body.id}`, {
      method: 'PUT',
      json: { description: 'a motor', categories: ['drives'] },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual(renamed.body.categories, ['drives']);
    assert.equal((await mp(`/items/${twin.body.id}`, { method: 'DELETE' })).status, 204);
    assert.equal((await mp(`/items/${twin.body.id}`)).status, 404);
  });
});

describe('installs as tasks', () => {
  test('an item installed on a project: every edge of it gets the template', async () => {
    const r = await mp(`/items/${itemId}/install`, { json: { projectId, version: '1.0.0' } });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.kind, 'CONFIGURATION_TEMPLATE');
    assert.equal(r.body.devices, 2);
    assert.equal(r.body.task.type, 'TEMPLATE_APPLY');
    assert.equal(r.body.projectId, projectId);
    assert.equal(r.body.companyId, companyId);
    const task = await finished(r.body.taskId);
    assert.equal(task.status, 'SUCCEEDED', JSON.stringify(task));
    for (let i = 0; i < 2; i++) {
      const press = (await devicesOf(i)).find((d) => d.Name === 'mp-press');
      assert.equal(press?.Description, 'from the marketplace v1', `edge ${i}`);
    }
    // The manager template it made is in the project; installing the same version again reuses it.
    const t = await m.call(`/api/v1/template/${r.body.templateId}`);
    assert.equal(t.status, 200, t.text);
    assert.equal(t.body.projectId, projectId);
    const again = await mp(`/items/${itemId}/install`, { json: { projectId, version: '1.0.0' } });
    assert.equal(again.body.templateId, r.body.templateId);
    await finished(again.body.taskId);
  });

  test('the latest version on one device; the installs are listed and counted', async () => {
    const r = await mp(`/items/${itemId}/install`, { json: { deviceIds: [ids[1]] } });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.version, '2.0.0');
    assert.equal((await finished(r.body.taskId)).status, 'SUCCEEDED');
    assert.equal(
      (await devicesOf(1)).find((d) => d.Name === 'mp-press')?.Description,
      'from the marketplace v2',
    );
    assert.equal(
      (await devicesOf(0)).find((d) => d.Name === 'mp-press')?.Description,
      'from the marketplace v1',
    );
    const installs = await mp(`/items/${itemId}/installs`);
    assert.equal(installs.body.total, 3);
    assert.equal(installs.body.items[0].targetType, 'DEVICES');
    assert.equal((await mp(`/items/${itemId}`)).body.installs, 3);
  });

  test('a twin model installed on the project: a /digital-twins model on every edge', async () => {
    const twin = await mp('/items', {
      json: {
        name: 'Pump twin',
        kind: 'TWIN_MODEL',
        version: '1.0.0',
        content: {
          models: [
            {
              Name: 'MpPump',
              Assets: 'pump',
              StaticAttributes: [{ Key: 'Vendor', Value: 'ACME' }],
              Instances: [{ Name: 'mp-pump-1', Topic: 'plant.mp-pump-1', Source: 'local', Enabled: true }],
            },
          ],
        },
      },
    });
    assert.equal(twin.status, 201, twin.text);
    const r = await mp(`/items/${twin.body.id}/install`, { json: { projectId } });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.task.type, 'TEMPLATE_APPLY');
    const task = await finished(r.body.taskId);
    assert.equal(task.status, 'SUCCEEDED', JSON.stringify(task));
    for (let i = 0; i < 2; i++) {
      const q = await m.call(`/api/v1/edge/${projectId}/${ids[i]}/digital-twins`, {
        json: { query: '{ ListModels(input: { Limit: 100 }) { Items { Name Assets } } }' },
      });
      assert.equal(q.status, 200, q.text);
      assert.equal(q.body.errors, undefined, q.text);
      const model = q.body.data.ListModels.Items.find((x: any) => x.Name === 'MpPump');
      assert.equal(model?.Assets, 'pump', `edge ${i}: ${q.text}`);
    }
  });

  test('install errors: no target, both targets, an unknown device, a hierarchy template', async () => {
    assert.equal((await mp(`/items/${itemId}/install`, { json: {} })).status, 400);
    assert.equal(
      (await mp(`/items/${itemId}/install`, { json: { projectId, deviceIds: [ids[0]] } })).status,
      400,
    );
    assert.equal((await mp(`/items/${itemId}/install`, { json: { deviceIds: ['nope'] } })).status, 404);
    assert.equal((await mp('/items/nope/install', { json: { projectId } })).status, 404);
    const h = await mp('/items', {
      json: {
        name: 'ISA-95 plant',
        kind: 'HIERARCHY_TEMPLATE',
        version: '1.0.0',
        content: { levels: ['site'] },
      },
    });
    assert.equal(h.status, 201, h.text);
    const refused = await mp(`/items/${h.body.id}/install`, { json: { projectId } });
    assert.equal(refused.status, 400);
    assert.match(refused.body.message, /asset hub/);
  });

  test('an application: a MARKETPLACE_APP_INSTALL task whose subtask reaches each edge', async () => {
    const app = await mp('/items', {
      json: {
        name: 'Hello app',
        kind: 'APPLICATION',
        version: '1.0.0',
        content: { containers: [{ Name: 'mp-hello', Image: 'docker.io/library/hello-world:latest' }] },
      },
    });
    assert.equal(app.status, 201, app.text);
    const r = await mp(`/items/${app.body.id}/install`, { json: { projectId, deadlineSeconds: 5 } });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.task.type, 'MARKETPLACE_APP_INSTALL');
    assert.equal(r.body.templateId, null);
    await finished(r.body.taskId);
    const subtasks = (await m.call(`/api/v1/async-task/${r.body.taskId}/subtasks`)).body.items as any[];
    assert.equal(subtasks.length, 2);
    for (const s of subtasks) {
      // Created when the edge runs a container engine; otherwise the edge's own answer is kept.
      if (s.status === 'SUCCEEDED') assert.deepEqual(s.result.created, ['mp-hello']);
      else
        assert.match(
          s.error ?? '',
          /creating container mp-hello: the edge answered|deadline/,
          JSON.stringify(s),
        );
    }
  });
});

describe('marketplace secrets (/admin/v1/mpc-secrets/{key})', () => {
  test('set, read (never the value), used by an application install, deleted', async () => {
    assert.equal((await m.admin('/admin/v1/mpc-secrets/api-key')).status, 404);
    const set = await m.admin('/admin/v1/mpc-secrets/api-key', { json: { value: 's3cret-value' } });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.set, true);
    const read = await m.admin('/admin/v1/mpc-secrets/api-key');
    assert.equal(read.status, 200);
    assert.equal(JSON.stringify(read.body).includes('s3cret-value'), false);
    assert.equal((await m.admin('/admin/v1/mpc-secrets/bad key', { json: { value: 'x' } })).status, 400);
    assert.equal((await m.admin('/admin/v1/mpc-secrets/k', { json: { value: '' } })).status, 400);
    const op = (await m.manager.auth.createToken('mp-op-2', 'operator')).token;
    assert.equal((await m.admin('/admin/v1/mpc-secrets/api-key', { token: op })).status, 403);
    const app = await mp('/items', {
      json: {
        name: 'Secret app',
        kind: 'APPLICATION',
        version: '1.0.0',
        content: {
          containers: [
            {
              Name: 'mp-secret',
              Image: 'docker.io/library/alpine:3',
              Env: ['KEY={{mpc-secret:api-key}}', 'X={{mpc-secret:missing}}'],
            },
          ],
        },
      },
    });
    assert.equal(app.status, 201, app.text);
    const refused = await mp(`/items/${app.body.id}/install`, { json: { deviceIds: [ids[0]] } });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.message, /not set: missing/);
    await m.admin('/admin/v1/mpc-secrets/missing', { json: { value: 'other' } });
    const ok = await mp(`/items/${app.body.id}/install`, {
      json: { deviceIds: [ids[0]], deadlineSeconds: 5 },
    });
    assert.equal(ok.status, 202, ok.text);
    await finished(ok.body.taskId);
    const task = await m.call(`/api/v1/async-task/${ok.body.taskId}`);
    assert.equal(task.text.includes('s3cret-value'), false);
    const subtasks = await m.call(`/api/v1/async-task/${ok.body.taskId}/subtasks`);
    assert.equal(subtasks.text.includes('s3cret-value'), false);
    assert.equal((await m.admin('/admin/v1/mpc-secrets/api-key', { method: 'DELETE' })).status, 204);
    assert.equal((await m.admin('/admin/v1/mpc-secrets/api-key', { method: 'DELETE' })).status, 404);
  });
});

describe('telemetry from asset hubs', () => {
  test('events are counted once per id; a viewer token may report; events are read by an admin', async () => {
    const viewer = (await m.manager.auth.createToken('mp-viewer', 'viewer')).token;
    const events = [
      { eventId: 'e-1', itemId, version: '1.0.0', action: 'IMPORT' },
      { eventId: 'e-2', itemId, version: '2.0.0', action: 'UPDATE' },
    ];
    const r = await mp('/telemetry', { headers: { authorization: viewer }, json: { events } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { received: 2, accepted: 2 });
    const again = await mp('/telemetry', { headers: { authorization: viewer }, json: { events } });
    assert.deepEqual(again.body, { received: 2, accepted: 0 });
    assert.equal((await mp(`/items/${itemId}`)).body.imports, 1);
    const seen = await mp(`/items/${itemId}/events`);
    assert.equal(seen.body.total, 2);
    assert.equal((await mp(`/items/${itemId}/events`, { headers: { authorization: viewer } })).status, 403);
  });
});
