/**
 * A template apply task never lies about an apply that was cut short (issue 24, item 5).
 *
 * As a user found it: `millwright up`, a `TEMPLATE_APPLY` task of a 20,000-tag template to the
 * local edge, `kill -9` of `up` while the edge applies it (subtask RUNNING), `up` again. The
 * edge's apply never committed (its transaction died with the process): after the restart the
 * subtask must not be SUCCEEDED until the edge really has the new configuration, with the
 * snapshot of its apply and the idempotency record of the subtask's key; and it is applied once.
 * Then the same with a separate manager process and a separate edge process: both killed (the
 * box lost power), both started again; and the manager alone killed while its edge applies: the
 * edge finishes, and the restarted manager's send under the same key is answered with the
 * edge's recorded outcome (not applied twice).
 *
 * The kill is timed on an event rather than a clock: the edge commits the snapshot of an apply
 * just before the apply's transaction starts, watched from a read-only reader of the edge's
 * SQLite file; and it is checked to have landed before the apply committed.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { eventually } from '../helpers/util.js';

const TAGS = 20_000;
const dirs = tempDirs('mw-tpl-kill-');
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'first-run-password' });
const procs: CliProcess[] = [];
after(async () => {
  for (const p of procs) await p.stop();
  dirs.removeAll();
});

async function start(args: string[]): Promise<CliProcess> {
  const p = await startCli(args, { env, timeoutMs: 60_000 });
  procs.push(p);
  return p;
}

/** 20 devices of 1,000 tags each. */
function bigTemplate() {
  return {
    format: 'millwright.config-template',
    version: 1,
    sections: {
      devicehub: {
        devices: Array.from({ length: 20 }, (_, d) => ({
          Name: `kill-${d}`,
          DriverID: 'Generator',
          Tags: Array.from({ length: TAGS / 20 }, (_, i) => ({
            TagName: `tag-${i}`,
            Name: 'S',
            ValueType: 'float64',
            // Polled hourly: the test is about the apply, not about 20,000 tags' values after it.
            IntervalMs: 3_600_000,
            Properties: { address: String(i) },
          })),
        })),
      },
    },
  };
}

/** The manager's API with a token, retried once for a GET on a connection the kill cut. */
function managerApi(url: () => string, token: string) {
  return async (path: string, o: Parameters<typeof http>[1] = {}) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await http(`${url()}${path}`, { ...o, headers: { 'x-authtoken': token, ...o.headers } });
      } catch (err) {
        if (attempt >= 3 || (o.method ?? 'GET') !== 'GET') throw err;
      }
    }
  };
}

/** What the edge's database holds: tags, snapshots of applies, the idempotency record of `key`. */
function edgeState(edgeDb: string, key: string) {
  const db = new SQLite(edgeDb, { readonly: true });
  try {
    const tags = (db.prepare('select count(*) as n from dh_register').get() as { n: number }).n;
    const snapshots = db
      .prepare("select id from config_snapshot where reason like 'before apply%' order by created_at")
      .all() as { id: string }[];
    const record = db.prepare('select answer from config_idempotency where key = ?').get(key) as
      { answer: string } | undefined;
    return {
      tags,
      snapshots: snapshots.map((s) => s.id),
      recorded: record ? (JSON.parse(record.answer) as { snapshotId: string }) : undefined,
    };
  } finally {
    db.close();
  }
}

/** Waits until the edge has committed the snapshot of a new apply (its transaction starts next). */
async function applyStarted(edgeDb: string, before: number): Promise<void> {
  const db = new SQLite(edgeDb, { readonly: true });
  try {
    const q = db.prepare("select count(*) as n from config_snapshot where reason like 'before apply%'");
    await eventually(async () => (q.get() as { n: number }).n > before, 120_000, 'the apply started');
  } finally {
    db.close();
  }
}

/** Starts the task on one device; answers the task id and its one subtask id. */
async function startTask(api: ReturnType<typeof managerApi>, projectId: string, deviceId: string) {
  const tpl = await api('/api/v1/template/create/v2', {
    json: { friendlyName: `kill-${Date.now()}`, projectId, content: bigTemplate() },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const started = await api('/api/v1/async-task/template-apply', {
    json: { templateId: tpl.body.id, deviceIds: [deviceId], deadlineSeconds: 600 },
  });
  assert.equal(started.status, 202, started.text);
  const taskId = started.body.taskId as string;
  const subs = await api(`/api/v1/async-task/${taskId}/subtasks`);
  return { taskId, subtaskId: subs.body.items[0].subtaskId as string };
}

async function taskEnded(api: ReturnType<typeof managerApi>, taskId: string) {
  const task = await eventually(
    async () => {
      const r = await api(`/api/v1/async-task/${taskId}`);
      return r.status === 200 && r.body.status !== 'RUNNING' && r.body;
    },
    180_000,
    'the task ended',
  );
  const sub = (await api(`/api/v1/async-task/${taskId}/subtasks`)).body.items[0];
  return { task, sub };
}

/** The subtask is SUCCEEDED, and the edge has what that claims: the tags, the apply's snapshot, the key's record. */
function assertApplied(
  edgeDb: string,
  key: string,
  sub: { status: string; result: Record<string, unknown> | null },
  snapshotsBefore: number,
  expectReplay?: boolean,
) {
  assert.equal(sub.status, 'SUCCEEDED', JSON.stringify(sub));
  const state = edgeState(edgeDb, key);
  assert.equal(state.tags, TAGS, `the edge has the new configuration: ${JSON.stringify(sub.result)}`);
  assert.ok(state.recorded, `the edge recorded the apply of ${key}`);
  assert.equal(
    sub.result?.snapshotId,
    state.recorded.snapshotId,
    'the subtask reports the apply that committed',
  );
  assert.ok(state.snapshots.includes(state.recorded.snapshotId), 'the snapshot of that apply exists');
  // Applied once: one snapshot for the apply that committed, one more for one that was cut short.
  assert.ok(state.snapshots.length - snapshotsBefore <= 2, `snapshots: ${state.snapshots.length}`);
  // (A first send after a restart may outlast the bridge's timeout and be answered from the record.)
  if (expectReplay !== undefined)
    assert.equal(sub.result?.replayed === true, expectReplay, JSON.stringify(sub.result));
}

test('`millwright up` killed while its edge applies a 20,000-tag template: after the restart the subtask is applied, not assumed', async () => {
  const dir = dirs.make();
  const edgeDb = join(dir, 'edge.db');
  const token = runCliJson(
    ['manager', 'token', 'create', '--data-dir', join(dir, 'manager'), '--name', 't'],
    env,
  ).token as string;
  const ports = {
    '--port': '0',
    '--datahub-port': '0',
    '--uns-port': '0',
    '--uns-mqtt-port': '0',
    '--uns-mqtts-port': '0',
    '--manager-port': '0',
    '--manager-admin-port': '0',
  };
  const upArgs = () => [
    'up',
    '--host',
    '127.0.0.1',
    '--data-dir',
    dir,
    '--log-level',
    'warn',
    ...Object.entries(ports).flat(),
  ];
  let up = await start(upArgs());
  const s = up.ready.services;
  // The same ports again after the restart: the edge is enrolled with the manager's address.
  Object.assign(ports, {
    '--port': String(s.edge!.ports.port),
    '--datahub-port': String(s.edge!.ports['datahub-port']),
    '--uns-port': String(s.uns!.ports.port),
    '--uns-mqtt-port': String(s.uns!.ports['mqtt-port']),
    '--uns-mqtts-port': String(s.uns!.ports['mqtts-port']),
    '--manager-port': String(s.manager!.ports.port),
    '--manager-admin-port': String(s.manager!.ports['admin-port']),
  });
  const api = managerApi(() => up.ready.services.manager!.url, token);
  const device = await eventually(async () => {
    const r = await api('/api/v1/device/list?limit=10');
    return r.body.items?.find((d: { online: boolean }) => d.online);
  }, 20_000);
  const { taskId, subtaskId } = await startTask(api, device.projectId, device.id);
  const key = `mw-task-${subtaskId}`;

  await applyStarted(edgeDb, 0);
  process.kill(up.pid, 'SIGKILL');
  await up.exited;
  const cut = edgeState(edgeDb, key);
  assert.equal(
    cut.recorded,
    undefined,
    'killed before the edge committed the apply (else this test proves nothing)',
  );
  assert.equal(cut.tags, 0);

  up = await start(upArgs());
  const { task, sub } = await taskEnded(api, taskId);
  assert.equal(task.status, 'SUCCEEDED', JSON.stringify(sub));
  assertApplied(edgeDb, key, sub, 0);
});

test('a separate manager and edge: both killed mid-apply, then the manager alone; applied once each time, never assumed', async () => {
  const managerDir = dirs.make();
  const edgeDir = dirs.make();
  const edgeDb = join(edgeDir, 'edge.db');
  const token = runCliJson(['manager', 'token', 'create', '--data-dir', managerDir, '--name', 't'], env)
    .token as string;
  const managerArgs = (port: string, adminPort: string) =>
    `manager --host 127.0.0.1 --port ${port} --admin-port ${adminPort} --data-dir ${managerDir} --heartbeat-interval 300 --log-level warn`.split(
      ' ',
    );
  const edgeArgs = (port: string, datahub: string) =>
    `edge --host 127.0.0.1 --port ${port} --datahub-port ${datahub} --data-dir ${edgeDir} --log-level warn`.split(
      ' ',
    );
  let manager = await start(managerArgs('0', '0'));
  const m = manager.ready.services.manager!;
  const mPorts = [String(m.ports.port), String(m.ports['admin-port'])] as const;
  let edge = await start(edgeArgs('0', '0'));
  const e = edge.ready.services.edge!;
  const ePorts = [String(e.ports.port), String(e.ports['datahub-port'])] as const;
  const api = managerApi(() => manager.ready.services.manager!.url, token);

  // The edge enrolled as a user does it: bootstrap, the manager's address confirmed, a code.
  const company = await api('/api/v1/company', { json: { companyName: 'kill' } });
  const project = await api('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  const projectId = project.body.id as string;
  const code = await api('/api/v1/activation/code', { json: { projectId } });
  const call = (path: string, o: Parameters<typeof http>[1] = {}) => http(`${e.url}${path}`, o);
  const login = await call('/auth/v2/login', {
    json: { username: 'admin', password: 'first-run-password', providerId: LOCAL_PROVIDER_ID },
  });
  let c = { cookie: `jwtAccess=${login.body.jwtAccess}` };
  await call('/auth/v2/eula', { method: 'PUT', headers: c, json: { agree: true, version: '1.0' } });
  const pw = await call('/auth/v2/password?locale=en-US', {
    method: 'PUT',
    headers: c,
    json: { currentPassword: 'first-run-password', newPassword: 'a-new-admin-password' },
  });
  c = { cookie: `jwtAccess=${pw.body.jwtAccess}` };
  const tx = (await call('/dm/cloud/url?locale=en-US', { headers: c, json: { url: m.url } })).body.tx;
  await call(`/dm/cloud/url/${tx}/confirm?locale=en-US`, { method: 'PUT', headers: c });
  const activated = await call('/dm/cloud?locale=en-US', { headers: c, json: { code: code.body.code } });
  assert.equal(activated.status, 200, activated.text);
  const deviceId = activated.body.deviceId as string;
  const online = async () => (await api(`/api/v1/device/${deviceId}`)).body.online === true;
  await eventually(online, 15_000, 'online');

  // 1. Both killed while the edge applies (the box lost power), both started again.
  const first = await startTask(api, projectId, deviceId);
  const firstKey = `mw-task-${first.subtaskId}`;
  await applyStarted(edgeDb, 0);
  process.kill(edge.pid, 'SIGKILL');
  process.kill(manager.pid, 'SIGKILL');
  await Promise.all([edge.exited, manager.exited]);
  assert.equal(edgeState(edgeDb, firstKey).recorded, undefined, 'killed before the edge committed the apply');
  edge = await start(edgeArgs(...ePorts));
  manager = await start(managerArgs(...mPorts));
  const one = await taskEnded(api, first.taskId);
  assert.equal(one.task.status, 'SUCCEEDED', JSON.stringify(one.sub));
  assertApplied(edgeDb, firstKey, one.sub, 0);

  // 2. The manager alone killed while the edge applies: the edge finishes; sent again under the
  // same key after the restart, the apply is answered from the edge's record, not made again.
  const snapshotsBefore = edgeState(edgeDb, firstKey).snapshots.length;
  const second = await startTask(api, projectId, deviceId);
  const secondKey = `mw-task-${second.subtaskId}`;
  await applyStarted(edgeDb, snapshotsBefore);
  process.kill(manager.pid, 'SIGKILL');
  await manager.exited;
  manager = await start(managerArgs(...mPorts));
  const two = await taskEnded(api, second.taskId);
  assert.equal(two.task.status, 'SUCCEEDED', JSON.stringify(two.sub));
  assertApplied(edgeDb, secondKey, two.sub, snapshotsBefore, true);
  assert.equal(edgeState(edgeDb, secondKey).snapshots.length, snapshotsBefore + 1, 'applied once');
});
