/**
 * Templates and asynchronous tasks across the fleet, with three real edges enrolled into a real
 * manager (all in this process, every call over HTTPS and the link): a template created from one
 * edge's configuration, updated (version, history), parameter values by scope, previewed on the
 * others, and applied to all three as one TEMPLATE_APPLY task while one of them is offline; its
 * subtask is done once it comes back, and the edges' configuration changed. Also the manager
 * error rows of contract part 7 about templates and the remote image pull, and the task routes.
 */
import { after, before, describe, test } from 'node:test';
import type { TaskTables } from '../../src/manager/tasks/repository.js';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapAdmin, http, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

let m: TestManager;
const edges: TestEdge[] = [];
const ids: string[] = [];
let projectId: string;
let companyId: string;
let templateId: string;
let stoppedDir: string;

async function enrol(e: TestEdge, code: string): Promise<string> {
  const c = { cookie: `jwtAccess=${await bootstrapAdmin(e)}` };
  const proposed = await e.call('/dm/cloud/url', { headers: c, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  await e.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: c });
  const a = await e.call('/dm/cloud', { headers: c, json: { code } });
  assert.equal(a.status, 200, a.text);
  return a.body.deviceId as string;
}

const bridged = (i: number, path: string) => `/api/v1/edge/${projectId}/${ids[i]}${path}`;
const gql = (i: number, query: string, variables?: unknown) =>
  m.call(bridged(i, '/devicehub/v2'), { json: { query, variables } });
async function devicesOf(i: number): Promise<{ Name: string; Description: string }[]> {
  const r = await gql(i, 'query { ListDevices(input: { Limit: 100 }) { Items { Name Description } } }');
  assert.equal(r.status, 200, r.text);
  return r.body.data.ListDevices.Items;
}
const online = (id: string, want: boolean) =>
  eventually(
    async () => (await m.call(`/api/v1/device/${id}`)).body.online === want,
    15_000,
    `online=${want}`,
  );

before(async () => {
  m = await startTestManager({ heartbeatInterval: 300 });
  ({ projectId, companyId } = await makeProject(m));
  stoppedDir = mkdtempSync(join(tmpdir(), 'mw-edge-c-'));
  for (let i = 0; i < 3; i++) {
    const e = await startTestEdge(i === 2 ? { dataDir: stoppedDir } : {});
    edges.push(e);
    ids.push(await enrol(e, await activationCode(m, projectId)));
  }
  for (const id of ids) await online(id, true);
});
after(async () => {
  for (const e of edges) await e.stop().catch(() => undefined);
  await m?.stop();
  if (stoppedDir) rmSync(stoppedDir, { recursive: true, force: true });
});

describe('templates', () => {
  test('created from a real edge configuration: friendlyName, version 1, createdBy, no stat', async () => {
    const mk = await gql(0, 'mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID Name } }', {
      in: { Name: 'press-1', DriverID: 'Generator', Description: 'from edge A' },
    });
    assert.equal(mk.body.errors, undefined, mk.text);
    const created = await m.call('/api/v1/template/create', {
      json: { friendlyName: 'line template', templateDescription: 'press line', deviceId: ids[0] },
    });
    assert.equal(created.status, 201, created.text);
    templateId = created.body.id;
    assert.equal(created.body.friendlyName, 'line template');
    assert.equal(created.body.version, 1);
    assert.match(created.body.createdBy, /^token:/);
    assert.equal(created.body.updatedBy, created.body.createdBy);
    assert.ok(created.body.updatedAt);
    assert.equal('stat' in created.body, false);
    assert.equal(created.body.projectId, projectId);
    const content = await m.call(`/api/v1/template/content?id=${templateId}`);
    assert.equal(content.status, 200, content.text);
    assert.equal(content.body.format, 'millwright.config-template');
    assert.ok(content.body.sections.devicehub.devices.some((d: any) => d.Name === 'press-1'));
    const comp = await m.call(`/api/v1/template/composition/v2?id=${templateId}`);
    const dh = comp.body.sections.find((s: any) => s.section === 'devicehub');
    assert.equal(dh.items.devices, 1);
    // The capture left no saved template behind on the edge.
    const saved = await m.call(bridged(0, '/config/templates'));
    assert.equal(saved.body.total, 0, saved.text);
  });

  test('update: friendlyName required (400); a new version with the history kept; variables', async () => {
    for (const call of [m.call, m.admin]) {
      const base = call === m.call ? '/api/v1/template' : '/admin/v1/template';
      const r = await call(base, { json: { id: templateId, templateDescription: 'x' } });
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.message, /friendly name is required/);
    }
    const doc = (await m.call(`/api/v1/template/content?id=${templateId}`)).body;
    const press = doc.sections.devicehub.devices.find((d: any) => d.Name === 'press-1');
    press.Description = 'line {{line}}';
    doc.sections.devicehub.devices = [press];
    doc.parameters = { devicehub: { line: 'default-line' } };
    const up = await m.call('/api/v1/template', {
      json: { id: templateId, friendlyName: 'line template v2', content: doc },
    });
    assert.equal(up.status, 200, up.text);
    assert.equal(up.body.version, 2);
    assert.equal(up.body.friendlyName, 'line template v2');
    const meta = await m.call(`/api/v1/template/${templateId}`);
    assert.deepEqual(
      meta.body.versions.map((v: any) => [v.version, v.friendlyName]),
      [
        [2, 'line template v2'],
        [1, 'line template'],
      ],
    );
    const vars = await m.call(`/api/v1/template/list-variables/v2?id=${templateId}`);
    assert.equal(vars.status, 200, vars.text);
    assert.deepEqual(
      vars.body.variables.map((v: any) => [v.section, v.name, v.defaultValue]),
      [['devicehub', 'line', 'default-line']],
    );
    const v1 = await m.admin(`/admin/v1/template/list-variables?id=${templateId}`);
    assert.deepEqual(v1.body.variables, ['line']);
    const list = await m.admin(
      '/admin/v1/template/list?filter=friendlyName:startswith:line&sort=version:desc',
    );
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.total, 1);
    assert.equal(list.body.items[0].version, 2);
    const main = await m.call('/api/v1/template/list?filter=version:gte:2');
    assert.equal(main.body.total, 1);
  });

  test('parameter values by scope', async () => {
    const set = await m.call('/api/v1/activation/request/template/vars/v2', {
      json: {
        templateId,
        scopes: [
          { scopeType: 'PROJECT', scopeId: projectId, parameters: { devicehub: { line: 'project-line' } } },
          { scopeType: 'DEVICE', scopeId: ids[1], parameters: { devicehub: { line: 'line-b' } } },
        ],
      },
    });
    assert.equal(set.status, 200, set.text);
    const got = await m.call(`/api/v1/activation/request/template/vars/v2?templateId=${templateId}`);
    assert.deepEqual(
      got.body.scopes.map((s: any) => [s.scopeType, s.parameters.devicehub.line]),
      [
        ['DEVICE', 'line-b'],
        ['PROJECT', 'project-line'],
      ],
    );
    const bad = await m.call('/api/v1/activation/request/template/vars/v2', {
      json: { templateId, scopes: [{ scopeType: 'DEVICE', parameters: {} }] },
    });
    assert.equal(bad.status, 400, bad.text);
  });

  test('composition: a template made of two others, each section from one part', async () => {
    const doc = (sections: Record<string, unknown>, parameters?: Record<string, Record<string, string>>) => ({
      format: 'millwright.config-template',
      version: 1,
      ...(parameters ? { parameters } : {}),
      sections,
    });
    const mk = async (friendlyName: string, content: unknown) => {
      const r = await m.call('/api/v1/template/create/v2', { json: { friendlyName, projectId, content } });
      assert.equal(r.status, 201, r.text);
      return r.body;
    };
    const devices = await mk(
      'mixers',
      doc(
        { devicehub: { devices: [{ Name: 'mixer-1', DriverID: 'Generator', Description: '{{area}}' }] } },
        { devicehub: { area: 'hall 1' } },
      ),
    );
    const keys = await mk('no keys', doc({ datahub: { accessKeys: [] } }));
    const made = await m.call('/api/v1/template/create/v2', {
      json: { friendlyName: 'mixers and keys', projectId, parts: [devices.id, keys.id] },
    });
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(made.body.sections, ['devicehub', 'datahub']);
    assert.deepEqual(made.body.parts, [
      { id: devices.id, friendlyName: 'mixers', version: 1 },
      { id: keys.id, friendlyName: 'no keys', version: 1 },
    ]);
    const comp = await m.call(`/api/v1/template/composition/v2?id=${made.body.id}`);
    assert.equal(comp.status, 200, comp.text);
    assert.deepEqual(comp.body.parts, made.body.parts);
    assert.deepEqual(
      comp.body.sections.map((x: { section: string }) => x.section),
      ['devicehub', 'datahub'],
    );
    assert.equal((await m.call(`/api/v1/template/composition/v2?id=${devices.id}`)).body.parts, null);
    // The parts' parameter defaults come along.
    const vars = await m.call(`/api/v1/template/list-variables/v2?id=${made.body.id}`);
    assert.deepEqual(
      vars.body.variables.map((v: { name: string; defaultValue: unknown }) => [v.name, v.defaultValue]),
      [['area', 'hall 1']],
    );
    const compose = (parts: string[], extra: object = {}) =>
      m.call('/api/v1/template/create/v2', { json: { friendlyName: 'x', projectId, parts, ...extra } });
    const twice = await compose([devices.id, devices.id]);
    assert.equal(twice.status, 400, twice.text);
    assert.match(twice.body.message, /named twice/);
    const clash = await compose([devices.id, templateId]);
    assert.equal(clash.status, 400, clash.text);
    assert.match(clash.body.message, /section "devicehub" is in both "mixers" and/);
    assert.equal((await compose([devices.id])).status, 400);
    assert.equal((await compose([devices.id, 'nope'])).status, 404);
    assert.equal((await compose([devices.id, keys.id], { content: doc({}) })).status, 400);
    // New content is no longer the composition.
    const updated = await m.call('/api/v1/template', {
      json: {
        id: made.body.id,
        friendlyName: 'mixers and keys',
        content: doc({ datahub: { accessKeys: [] } }),
      },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.parts, null);
  });

  test('preview: per device what an apply would change; an edge before 4.3.0 is a clear error', async () => {
    const r = await m.call('/api/v1/template/preview', {
      json: { templateId, deviceIds: [ids[1], ids[2]] },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.total, 2);
    for (const item of r.body.items) {
      assert.equal(item.status, 'OK', JSON.stringify(item));
      assert.deepEqual(item.preview.sections.devicehub.added, ['press-1']);
    }
    // With content: the device's current configuration beside the template with its parameters.
    const shown = await m.call('/api/v1/template/preview', {
      json: { templateId, deviceIds: [ids[1]], withContent: true },
    });
    assert.equal(shown.status, 200, shown.text);
    const dh = shown.body.items[0].content.sections.devicehub;
    assert.deepEqual(dh.current.devices, [], 'edge B has no device yet');
    assert.deepEqual(
      dh.proposed.devices.map((d: { Name: string; Description: string }) => [d.Name, d.Description]),
      [['press-1', 'line line-b']],
      'the device scope value substituted',
    );
    const tooMany = await m.call('/api/v1/template/preview', {
      json: { templateId, deviceIds: Array.from({ length: 11 }, (_, i) => `d${i}`), withContent: true },
    });
    assert.equal(tooMany.status, 400, tooMany.text);
    // Nothing changed on the edges, and no saved template is left behind.
    assert.equal((await devicesOf(1)).length, 0);
    assert.equal((await m.call(bridged(1, '/config/templates'))).body.total, 0);
    // An edge that reported 4.2.0 at activation (its link is not needed to refuse it).
    const old = await http(`${m.url}/dm/activate`, {
      json: { code: await activationCode(m, projectId), edgeCredential: 'mwt_old', version: '4.2.0' },
    });
    assert.equal(old.status, 200, old.text);
    const refused = await m.call('/api/v1/template/preview', {
      json: { templateId, deviceIds: [old.body.deviceId] },
    });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.code, ERRORS.edgeVersionUnsupported.code);
    assert.match(refused.body.message, /4\.3\.0 or later.*4\.2\.0/);
    assert.equal((await m.call(`/api/v1/device/${old.body.deviceId}`, { method: 'DELETE' })).status, 204);
    const mode = await m.call('/api/v1/template/preview', {
      json: { templateId, deviceIds: [ids[1]], mode: 'replace' },
    });
    assert.equal(mode.status, 400);
  });

  test('applied to three edges as one task, one offline until the middle of it', async () => {
    await edges[2]!.stop();
    await online(ids[2]!, false);
    // Every call the manager sends over a link during the task (a spy: the calls go on as sent).
    const hub = m.manager.links;
    const sent: string[] = [];
    const request = hub.request.bind(hub);
    hub.request = (deviceId, req) => {
      sent.push(
        `${deviceId} ${req.method} ${req.path.replace(/^\/config\/template\/.+$/, '/config/template/{id}')}`,
      );
      return request(deviceId, req);
    };
    const started = await m.call('/api/v1/async-task/template-apply', {
      json: { templateId, deviceIds: ids, deadlineSeconds: 120 },
    });
    assert.equal(started.status, 202, started.text);
    assert.equal(started.body.type, 'TEMPLATE_APPLY');
    assert.equal(started.body.params.version, 2);
    const taskId = started.body.taskId as string;
    const subtasks = async () => (await m.call(`/api/v1/async-task/${taskId}/subtasks`)).body.items as any[];
    await eventually(
      async () => (await subtasks()).filter((s) => s.status === 'SUCCEEDED').length === 2,
      30_000,
      'two online edges done',
    );
    const waiting = (await subtasks()).find((s) => s.deviceId === ids[2]);
    assert.equal(waiting.status, 'PENDING');
    assert.equal((await m.call(`/api/v1/async-task/${taskId}`)).body.status, 'RUNNING');
    // The third edge comes back (same data directory: enrolled, it links again).
    edges[2] = await startTestEdge({ dataDir: stoppedDir });
    await eventually(
      async () => (await m.call(`/api/v1/async-task/${taskId}`)).body.status === 'SUCCEEDED',
      40_000,
      'task done',
    );
    hub.request = request;
    // An apply is two link round trips per device: the upload session opened with the document,
    // then the apply under the subtask's Idempotency-Key. Nothing is saved on the edge.
    for (const id of ids)
      assert.deepEqual(
        sent.filter((c) => c.startsWith(`${id} `)),
        [`${id} POST /config/session`, `${id} PUT /config/template/{id}`],
      );
    const all = await subtasks();
    assert.equal(all.length, 3);
    for (const s of all) {
      assert.equal(s.status, 'SUCCEEDED', JSON.stringify(s));
      assert.equal(s.attempts, 1);
      assert.ok(s.startedAt && s.finishedAt && s.durationMs >= 0);
      assert.equal(s.result.edgeStatus, 200);
      assert.ok(s.result.snapshotId, JSON.stringify(s.result));
    }
    // The edges' configuration changed, with each device's parameters. (On a loaded 2-core machine
    // an edge busy applying may miss the tests' 300 ms heartbeats and reconnect: wait for it.)
    for (const id of ids) await online(id, true);
    const want = ['project-line', 'line-b', 'project-line'];
    for (let i = 0; i < 3; i++) {
      const press = (await devicesOf(i)).find((d) => d.Name === 'press-1');
      assert.equal(press?.Description, `line ${want[i]}`, `edge ${i}`);
      assert.equal((await m.call(bridged(i, '/config/templates'))).body.total, 0);
    }
    // The task routes of both APIs.
    const types = await m.call('/api/v1/async-task/task-types');
    assert.deepEqual(types.body.items.map((t: any) => t.type).sort(), [
      'CA_CERTIFICATES_SYNC',
      'IMAGE_PULL',
      'MARKETPLACE_APP_INSTALL',
      'TEMPLATE_APPLY',
    ]);
    assert.equal((await m.admin('/admin/v1/instance-async-task/task-types')).body.total, 4);
    const admin = await m.admin(`/admin/v1/instance-async-task/task/${taskId}`);
    assert.deepEqual(admin.body.counts, { SUCCEEDED: 3 });
    assert.equal((await m.admin(`/admin/v1/instance-async-task/${taskId}/subtasks`)).body.total, 3);
    const tasks = await m.admin('/admin/v1/instance-async-task/tasks?filter=type:eq:TEMPLATE_APPLY');
    assert.equal(tasks.body.total, 1);
    const logs = await m.admin(`/admin/v1/instance-async-task/logs/subtask/${waiting.subtaskId}`);
    assert.ok(
      logs.body.items.some((l: any) => /applied version 2/.test(l.message)),
      logs.text,
    );
    const from = Date.parse(started.body.createdAt);
    const hist = await m.call(`/api/v1/async-task/subtasks?from=${from}&to=${from + 3_600_000}&limit=2`);
    assert.equal(hist.status, 200, hist.text);
    assert.equal(hist.body.total, 3);
    assert.equal(hist.body.items.length, 2);
    assert.equal((await m.call(`/api/v1/async-task/subtasks?from=${from + 3_600_000}`)).body.total, 0);
    assert.equal((await m.admin('/admin/v1/instance-async-task/subtasks?from=nope')).status, 400);
    // Done: nothing to cancel.
    assert.equal((await m.call(`/api/v1/async-task/${taskId}/cancel`, { method: 'POST' })).status, 409);
  });

  test('a task can be cancelled and resumed: its waiting subtasks are cancelled, then wait again', async () => {
    await edges[2]!.stop();
    await online(ids[2]!, false);
    const started = await m.call('/api/v1/async-task/template-apply', {
      json: { templateId, deviceIds: [ids[2]] },
    });
    assert.equal(started.status, 202, started.text);
    const c = await m.call(`/api/v1/async-task/${started.body.taskId}/cancel`, { method: 'POST' });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.status, 'CANCELLED');
    const subs = (await m.call(`/api/v1/async-task/${started.body.taskId}/subtasks`)).body.items;
    assert.equal(subs[0].status, 'CANCELLED');
    // Resumed: the cancelled subtask waits for its device again, under a new deadline.
    const resume = (body?: object) =>
      m.call(`/api/v1/async-task/${started.body.taskId}/resume`, {
        method: 'POST',
        ...(body ? { json: body } : {}),
      });
    const r = await resume({ deadlineSeconds: 600 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'RUNNING');
    assert.equal(r.body.finishedAt, null);
    assert.ok(Date.parse(r.body.deadline) > Date.now() + 500_000, r.body.deadline);
    const [again] = (await m.call(`/api/v1/async-task/${started.body.taskId}/subtasks`)).body.items;
    assert.equal(again.subtaskId, subs[0].subtaskId, 'the same subtask (and Idempotency-Key)');
    assert.ok(['PENDING', 'RETRY'].includes(again.status), again.status);
    assert.equal(again.error, null);
    const twice = await resume();
    assert.equal(twice.status, 409, twice.text);
    assert.match(twice.body.message, /is RUNNING, not CANCELLED/);
    assert.equal((await resume({ deadlineSeconds: 0 })).status, 400);
    // Cancelled again (its edge stays offline), resumed without a body.
    assert.equal(
      (await m.call(`/api/v1/async-task/${started.body.taskId}/cancel`, { method: 'POST' })).status,
      200,
    );
    assert.equal((await resume()).status, 200);
    assert.equal(
      (await m.call(`/api/v1/async-task/${started.body.taskId}/cancel`, { method: 'POST' })).status,
      200,
    );
  });

  test('secrets travel encrypted under the user key: an API client of edge A works on edge B', async () => {
    // Edges A and B only (another test may have left a third one offline on purpose).
    for (const id of ids.slice(0, 2)) await online(id, true);
    const made = await m.call(`/api/v1/device/${ids[0]}/oauth-clients`, {
      json: { name: 'robot', role: 'viewer' },
    });
    assert.equal(made.status, 201, made.text);
    const tpl = await m.call('/api/v1/template/create', {
      json: { friendlyName: 'with secrets', deviceId: ids[0], userEncryptionKey: 'k-secret-2026' },
    });
    assert.equal(tpl.status, 201, tpl.text);
    assert.equal(tpl.body.encrypted, true);
    const content = await m.call(`/api/v1/template/content?id=${tpl.body.id}`);
    assert.equal(content.text.includes(made.body.clientSecret), false);
    assert.match(JSON.stringify(content.body.sections.auth), /\$encrypted/);
    const started = await m.call('/api/v1/async-task/template-apply', {
      json: { templateId: tpl.body.id, deviceIds: [ids[1]] },
    });
    assert.equal(started.status, 202, started.text);
    await eventually(
      async () => (await m.call(`/api/v1/async-task/${started.body.taskId}`)).body.status !== 'RUNNING',
      20_000,
    );
    const [sub] = (await m.call(`/api/v1/async-task/${started.body.taskId}/subtasks`)).body.items;
    assert.equal(sub.status, 'SUCCEEDED', JSON.stringify(sub));
    const token = await edges[1]!.call('/auth/v3/oauth/token', {
      form: {
        grant_type: 'client_credentials',
        client_id: made.body.clientId,
        client_secret: made.body.clientSecret,
      },
    });
    assert.equal(token.status, 200, token.text);
  });

  test('a caller scoped to another project sees none of these templates and tasks', async () => {
    const other = await makeProject(m, 'other-co', 'other');
    await m.admin('/admin/v1/users', { json: { username: 'vera', password: 'long-password' } });
    const g = await m.admin('/admin/v1/user/project/roles', {
      json: { username: 'vera', role: 'operator', projectId: other.projectId },
    });
    assert.equal(g.status, 201, g.text);
    const t = (await m.admin('/admin/v1/api-tokens', { json: { name: 'vera', username: 'vera' } })).body
      .token;
    assert.equal((await m.call(`/api/v1/template/content?id=${templateId}`, { token: t })).status, 404);
    const list = await m.call('/api/v1/template/list', { token: t });
    assert.equal(
      list.body.items.some((x: any) => x.id === templateId),
      false,
    );
    const hist = await m.call('/api/v1/async-task/subtasks', { token: t });
    assert.equal(hist.status, 200, hist.text);
    assert.equal(hist.body.total, 0);
    const apply = await m.call('/api/v1/async-task/template-apply', {
      token: t,
      json: { templateId, deviceIds: [ids[0]] },
    });
    assert.equal(apply.status, 404, apply.text);
    // The admin sees the history of every task.
    assert.ok((await m.call('/api/v1/async-task/subtasks')).body.total >= 4);
  });

  test('POST /api/v1/template/apply is gone: an unknown route', async () => {
    const r = await m.call('/api/v1/template/apply', { json: { templateId, deviceIds: ids } });
    assert.equal(r.status, 404, r.text);
    assert.equal((await m.call('/api/v1/template/apply', { token: null, json: {} })).status, 401);
  });
});

describe('uploads and contract part 7', () => {
  const doc = {
    format: 'millwright.config-template',
    version: 1,
    sections: { devicehub: { devices: [] } },
  };

  test('upload without friendlyName: 409; with it: 201 (main and admin console)', async () => {
    for (const [call, base] of [
      [m.call, '/api/v1/template'],
      [m.admin, '/admin/v1/template'],
    ] as const) {
      const r = await call(`${base}/upload`, { json: doc });
      assert.equal(r.status, 409, r.text);
      assert.match(r.body.message, /Required request parameter 'friendlyName'.* is not present/);
      const ok = await call(`${base}/upload?friendlyName=uploaded&userEncryptionKey=k-1234`, { json: doc });
      assert.equal(ok.status, 201, ok.text);
      assert.equal(ok.body.friendlyName, 'uploaded');
      assert.equal(ok.body.version, 1);
    }
    const admin = await m.admin(`/admin/v1/template/upload?friendlyName=for-device&deviceId=${ids[0]}`, {
      json: doc,
    });
    assert.equal(admin.status, 201, admin.text);
    assert.equal(admin.body.projectId, projectId);
    const bad = await m.call('/api/v1/template/upload?friendlyName=x', { json: { format: 'nope' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, ERRORS.invalidTemplate.code);
  });

  test('upload-zip: a ZIP holding one JSON document, raw or as a form file; without friendlyName 409', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mw-zip-'));
    try {
      writeFileSync(join(dir, 'template.json'), JSON.stringify(doc));
      execFileSync('zip', ['-q', join(dir, 't.zip'), 'template.json'], { cwd: dir });
      const zip = readFileSync(join(dir, 't.zip'));
      const headers = { 'content-type': 'application/zip' };
      for (const [call, base] of [
        [m.call, '/api/v1/template'],
        [m.admin, '/admin/v1/template'],
      ] as const) {
        const missing = await call(`${base}/upload-zip`, { method: 'PUT', headers, body: zip });
        assert.equal(missing.status, 409, missing.text);
        const ok = await call(`${base}/upload-zip?friendlyName=zipped`, {
          method: 'PUT',
          headers,
          body: zip,
        });
        assert.equal(ok.status, 201, ok.text);
        assert.deepEqual(ok.body.sections, ['devicehub']);
      }
      const notZip = await m.call('/api/v1/template/upload-zip?friendlyName=z', {
        method: 'PUT',
        headers,
        body: Buffer.from('not a zip'),
      });
      assert.equal(notZip.status, 400, notZip.text);

      // The same archive as the file field of a form (issue 33: was "damaged central directory").
      const form = new FormData();
      form.append('note', 'a text field before the file');
      form.append('file', new Blob([zip], { type: 'application/zip' }), 't.zip');
      const encoded = new Request('http://localhost/', { method: 'PUT', body: form });
      const multipart = {
        headers: { 'content-type': encoded.headers.get('content-type')! },
        body: Buffer.from(await encoded.arrayBuffer()),
      };
      for (const [call, base] of [
        [m.call, '/api/v1/template'],
        [m.admin, '/admin/v1/template'],
      ] as const) {
        const viaForm = await call(`${base}/upload-zip?friendlyName=form-zipped`, {
          method: 'PUT',
          ...multipart,
        });
        assert.equal(viaForm.status, 201, viaForm.text);
        assert.deepEqual(viaForm.body.sections, ['devicehub']);
      }
      const noFile = new FormData();
      noFile.append('file', 'not a file part');
      const noFileReq = new Request('http://localhost/', { method: 'PUT', body: noFile });
      const refused = await m.call('/api/v1/template/upload-zip?friendlyName=z', {
        method: 'PUT',
        headers: { 'content-type': noFileReq.headers.get('content-type')! },
        body: Buffer.from(await noFileReq.arrayBuffer()),
      });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.message, /multipart body has 0 file parts.*raw body|request body/);
      const noBoundary = await m.call('/api/v1/template/upload-zip?friendlyName=z', {
        method: 'PUT',
        headers: { 'content-type': 'multipart/form-data' },
        body: zip,
      });
      assert.equal(noBoundary.status, 400, noBoundary.text);
      assert.match(noBoundary.body.message, /no boundary/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('create/v2 from a document; create needs a friendly name', async () => {
    const r = await m.call('/api/v1/template/create/v2', {
      json: { friendlyName: 'v2', content: doc, projectId },
    });
    assert.equal(r.status, 201, r.text);
    const byCompany = await m.call('/api/v1/template/create/v2', {
      json: { friendlyName: 'company-wide', content: doc, companyId },
    });
    assert.equal(byCompany.status, 201, byCompany.text);
    assert.equal(byCompany.body.companyId, companyId);
    assert.equal(byCompany.body.projectId, null);
    const unknown = await m.call('/api/v1/template/create/v2', {
      json: { friendlyName: 'nowhere', content: doc, companyId: 'no-such-company' },
    });
    assert.equal(unknown.status, 404, unknown.text);
    const preview = await m.call('/api/v1/template/preview', {
      json: { templateId: byCompany.body.id, companyId },
    });
    assert.equal(preview.status, 200, preview.text);
    assert.equal(preview.body.total, 3);
    const missing = await m.call('/api/v1/template/create', { json: { deviceId: ids[0] } });
    assert.equal(missing.status, 400);
    assert.match(missing.body.message, /friendly name is required/);
    const key = await m.admin('/admin/v1/git/templates/encryption-key');
    assert.equal(key.status, 200);
    assert.equal(
      (await m.admin('/admin/v1/git/templates/encryption-key')).body.encryptionKey,
      key.body.encryptionKey,
    );
  });

  test('remote image pull: query string parameters are a 400 (body missing); a JSON body is a task', async () => {
    const q = await m.admin(
      '/admin/v1/registry/image/upload-remote?externalUrl=https://registry.example&externalName=nginx',
      { method: 'POST' },
    );
    assert.equal(q.status, 400, q.text);
    assert.match(q.body.message, /Required request body is missing/);
    const empty = await m.admin('/admin/v1/registry/image/upload-remote?externalName=nginx', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '',
    });
    assert.equal(empty.status, 400, empty.text);
    assert.match(empty.body.message, /Required request body is missing/);
    const noName = await m.admin('/admin/v1/registry/image/upload-remote', {
      json: { externalUrl: 'https://registry.example' },
    });
    assert.equal(noName.status, 400, noName.text);
    const ok = await m.admin('/admin/v1/registry/image/upload-remote', {
      json: {
        externalUrl: 'http://127.0.0.1:9',
        externalName: 'library/nginx',
        externalTag: '1.27',
        internalName: 'nginx',
        user: 'puller',
        password: 'pull-secret-123',
      },
    });
    assert.equal(ok.status, 202, ok.text);
    assert.equal(ok.body.type, 'IMAGE_PULL');
    assert.equal(ok.body.params.password, '********');
    assert.equal(ok.text.includes('pull-secret-123'), false);
    const done = await eventually(async () => {
      const t = await m.admin(`/admin/v1/instance-async-task/task/${ok.body.taskId}`);
      return t.body.status !== 'RUNNING' && t.body;
    });
    assert.equal(done.status, 'FAILED');
    const subs = await m.admin(`/admin/v1/instance-async-task/${ok.body.taskId}/subtasks`);
    assert.match(subs.body.items[0].error, /could not be reached/);
    // The password is not in the database in clear.
    const rows = await m.manager.database
      .typed<TaskTables>()
      .selectFrom('mgr_task')
      .select('params')
      .execute();
    assert.equal(
      rows.some((r: any) => String(r.params).includes('pull-secret-123')),
      false,
    );
  });
});
