/**
 * Two manager processes, one PostgreSQL database, behind one address (a TCP proxy in this test
 * that sends each new connection to one of them, the other when that one is down): 20 simulated
 * edges link through it (so each manager holds about half of the links), one TEMPLATE_APPLY task
 * over the 20 is shared by both runners, and one manager is killed with SIGKILL half way. Its
 * edges link again through the same address to the survivor, which takes the killed process's
 * claims over once their lease expires; every subtask ends SUCCEEDED and every edge received
 * its apply exactly once (a subtask taken over is sent again under its Idempotency-Key; the edge
 * answers it from its record), with nothing left saved on it. Before the task, a bridged call to each edge through either manager
 * reaches it (the process without the link forwards it to the one holding it).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { pgTestDatabase } from '../helpers/postgres.js';
import { SimEdge } from '../helpers/sim-edge.js';
import { eventually } from '../helpers/util.js';

const EDGES = 20;
const dirs = tempDirs('mw-two-mgr-');
const env = cleanEnv();
const procs: CliProcess[] = [];
const sims: SimEdge[] = [];
let proxy: net.Server | null = null;

after(async () => {
  for (const s of sims) s.stop();
  proxy?.close();
  for (const p of procs) await p.stop();
  dirs.removeAll();
});

/** One address for both managers: each connection goes to the next live backend in turn. */
function startProxy(backends: { port: number; alive: boolean }[]): Promise<number> {
  let next = 0;
  proxy = net.createServer((client) => {
    client.on('error', () => undefined);
    const tryConnect = (left: number) => {
      const live = backends.filter((b) => b.alive);
      if (left === 0 || live.length === 0) return client.destroy();
      const b = live[next++ % live.length]!;
      const upstream = net.connect(b.port, '127.0.0.1');
      upstream.once('connect', () => {
        client.pipe(upstream);
        upstream.pipe(client);
      });
      upstream.on('error', () => {
        if (!upstream.readyState || upstream.connecting) {
          b.alive = false;
          tryConnect(left - 1);
        } else client.destroy();
      });
      upstream.on('close', () => client.destroy());
      client.on('close', () => upstream.destroy());
    };
    tryConnect(backends.length);
  });
  return new Promise((resolve) =>
    proxy!.listen(0, '127.0.0.1', () => resolve((proxy!.address() as net.AddressInfo).port)),
  );
}

test('two managers share one task over 20 edges; one killed half way; each subtask runs once', async (t) => {
  const db = await pgTestDatabase(t);
  if (!db) return;
  const [dirA, dirB] = [dirs.make(), dirs.make()];
  const args = (dir: string) => [
    'manager',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--admin-port',
    '0',
    '--data-dir',
    dir,
    '--database-url',
    db.url,
    '--heartbeat-interval',
    '300',
    '--task-concurrency',
    '2',
    '--task-lease',
    '1500',
    '--log-level',
    'warn',
  ];
  const token = runCliJson(
    ['manager', 'token', 'create', '--data-dir', dirA, '--database-url', db.url, '--name', 't'],
    env,
  ).token as string;
  const a = await startCli(args(dirA), { env });
  procs.push(a);
  // Both managers open the edges' credentials with the same key (docs/manager.md).
  mkdirSync(join(dirB, 'secrets'), { recursive: true, mode: 0o700 });
  copyFileSync(join(dirA, 'secrets', 'credentials.key'), join(dirB, 'secrets', 'credentials.key'));
  const b = await startCli(args(dirB), { env });
  procs.push(b);
  const backends = [a, b].map((p) => ({ port: p.ready.services.manager!.ports.port!, alive: true, proc: p }));
  const url = `https://127.0.0.1:${await startProxy(backends)}`;
  // A kept-alive connection to the killed manager fails once: a client behind one address tries again.
  const api = async (path: string, o: Parameters<typeof http>[1] = {}) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await http(`${url}${path}`, { ...o, headers: { 'x-authtoken': token, ...o.headers } });
      } catch (err) {
        if (attempt >= 3 || (o.method ?? 'GET') !== 'GET') throw err;
      }
    }
  };

  const company = await api('/api/v1/company', { json: { companyName: 'two' } });
  const project = await api('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  const projectId = project.body.id as string;
  const codes = await api('/api/v1/activation/code', { json: { projectId, count: EDGES } });
  assert.equal(codes.status, 201, codes.text);
  for (const c of codes.body.items) {
    const s = new SimEdge({ applyMs: 300 });
    sims.push(s);
    await s.activate(url, c.code);
    await s.connect();
  }
  await eventually(
    async () =>
      (await api(`/api/v1/device/list?projectId=${projectId}&limit=100`)).body.items.filter(
        (d: any) => d.online,
      ).length === EDGES,
    15_000,
    'all linked',
  );
  // A bridged call reaches every device through either manager, whichever holds its link.
  for (const p of [a, b]) {
    for (const sim of sims) {
      const r = await http(
        `${p.ready.services.manager!.url}/api/v1/edge/${projectId}/${sim.deviceId}/config/templates`,
        {
          headers: { 'x-authtoken': token },
        },
      );
      assert.equal(r.status, 200, `${sim.deviceId} through ${p.pid}: ${r.text}`);
      assert.equal(r.body.total, 0);
    }
  }
  const tpl = await api('/api/v1/template/create/v2', {
    json: {
      friendlyName: 'fleet',
      projectId,
      content: { format: 'millwright.config-template', version: 1, sections: { devicehub: { devices: [] } } },
    },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const started = await api('/api/v1/async-task/template-apply', {
    json: { templateId: tpl.body.id, projectId, deadlineSeconds: 120 },
  });
  assert.equal(started.status, 202, started.text);
  const taskId = started.body.taskId as string;
  const subtasks = async () => (await api(`/api/v1/async-task/${taskId}/subtasks`)).body.items as any[];
  await eventually(
    async () => (await subtasks()).filter((s) => s.status === 'SUCCEEDED').length >= EDGES / 2 - 4,
    30_000,
    'half done',
  );
  // Kill the first manager while it holds claims.
  process.kill(a.pid, 'SIGKILL');
  await a.exited;
  backends[0]!.alive = false;
  const done = await eventually(
    async () => {
      const r = await api(`/api/v1/async-task/${taskId}`);
      return r.body.status !== 'RUNNING' && r.body;
    },
    60_000,
    'task done',
  );
  const all = await subtasks();
  assert.equal(done.status, 'SUCCEEDED', JSON.stringify(all.filter((s) => s.status !== 'SUCCEEDED')));
  assert.equal(all.length, EDGES);
  for (const s of all) assert.equal(s.status, 'SUCCEEDED');
  // Every edge received exactly one apply, and nothing is left saved on it (no marker template:
  // a subtask taken over is sent again under its Idempotency-Key, answered from the edge's record).
  for (const sim of sims) {
    const total = [...sim.applies.values()].reduce((x, y) => x + y, 0);
    assert.equal(total, 1, `device ${sim.deviceId}: ${JSON.stringify([...sim.applies])}`);
    assert.deepEqual([...sim.saved.values()], [], 'nothing is saved on the edge');
  }
  // Both processes ran subtasks (the logs name the process).
  const instances = new Set<string>();
  for (const s of all) {
    const logs = await http(
      `${backends[1]!.proc.ready.services.manager!.adminUrl}/admin/v1/instance-async-task/logs/subtask/${s.subtaskId}`,
      {
        headers: { 'x-authtoken': token },
      },
    );
    for (const l of logs.body.items) instances.add(l.instance);
  }
  assert.equal(instances.size, 2, 'both managers ran subtasks');
  const replayed = all.filter((s) => s.result?.replayed).length;
  const replays = sims.reduce((n, sim) => n + sim.replays, 0);
  assert.ok(replayed <= replays, 'a subtask answered from the record was answered so by its edge');
  console.log(
    `# ${replays} subtask(s) sent again by the survivor and answered from the edge's Idempotency-Key record`,
  );
});
