/**
 * Task state survives the manager: a `millwright manager` process (SQLite) killed with SIGKILL
 * in the middle of a TEMPLATE_APPLY task over 8 simulated edges, started again on the same data
 * directory and port; the edges link again, the task resumes where it was (the subtasks that
 * were running are sent again under the same Idempotency-Key, which the edge answers from its
 * record) and every edge received its apply exactly once, with nothing left saved on it.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { SimEdge } from '../helpers/sim-edge.js';
import { eventually } from '../helpers/util.js';

const EDGES = 8;
const dirs = tempDirs('mw-task-restart-');
const env = cleanEnv();
const procs: CliProcess[] = [];
const sims: SimEdge[] = [];

after(async () => {
  for (const s of sims) s.stop();
  for (const p of procs) await p.stop();
  dirs.removeAll();
});

test('a task running when the manager is killed resumes after the restart; no subtask runs twice', async () => {
  const dir = dirs.make();
  const args = (port: string) => [
    'manager',
    '--host',
    '127.0.0.1',
    '--port',
    port,
    '--admin-port',
    '0',
    '--data-dir',
    dir,
    '--heartbeat-interval',
    '300',
    '--task-concurrency',
    '2',
    '--log-level',
    'warn',
  ];
  const token = runCliJson(['manager', 'token', 'create', '--data-dir', dir, '--name', 't'], env)
    .token as string;
  let proc = await startCli(args('0'), { env });
  procs.push(proc);
  const port = String(proc.ready.services.manager!.ports.port);
  const url = proc.ready.services.manager!.url;
  const api = async (path: string, o: Parameters<typeof http>[1] = {}) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await http(`${url}${path}`, { ...o, headers: { 'x-authtoken': token, ...o.headers } });
      } catch (err) {
        if (attempt >= 3 || (o.method ?? 'GET') !== 'GET') throw err;
      }
    }
  };
  const company = await api('/api/v1/company', { json: { companyName: 'r' } });
  const project = await api('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  const projectId = project.body.id as string;
  const codes = await api('/api/v1/activation/code', { json: { projectId, count: EDGES } });
  for (const c of codes.body.items) {
    const s = new SimEdge({ applyMs: 400 });
    sims.push(s);
    await s.activate(url, c.code);
    await s.connect();
  }
  const tpl = await api('/api/v1/template/create/v2', {
    json: {
      friendlyName: 'restart',
      projectId,
      content: { format: 'millwright.config-template', version: 1, sections: { devicehub: { devices: [] } } },
    },
  });
  const started = await api('/api/v1/async-task/template-apply', {
    json: { templateId: tpl.body.id, projectId, deadlineSeconds: 120 },
  });
  assert.equal(started.status, 202, started.text);
  const taskId = started.body.taskId as string;
  const subtasks = async () => (await api(`/api/v1/async-task/${taskId}/subtasks`)).body.items as any[];
  await eventually(
    async () => (await subtasks()).filter((s) => s.status === 'SUCCEEDED').length >= 2,
    20_000,
  );
  process.kill(proc.pid, 'SIGKILL');
  await proc.exited;
  const doneBefore = sims.reduce((n, s) => n + s.applies.size, 0);
  assert.ok(doneBefore < EDGES, 'killed in the middle of the task');
  proc = await startCli(args(port), { env });
  procs.push(proc);
  const done = await eventually(
    async () => {
      const r = await api(`/api/v1/async-task/${taskId}`);
      return r.body.status !== 'RUNNING' && r.body;
    },
    40_000,
    'task done after the restart',
  );
  assert.equal(done.status, 'SUCCEEDED');
  const all = await subtasks();
  for (const s of all) assert.equal(s.status, 'SUCCEEDED', JSON.stringify(s));
  for (const sim of sims) {
    const total = [...sim.applies.values()].reduce((x, y) => x + y, 0);
    assert.equal(total, 1, `device ${sim.deviceId}: ${JSON.stringify([...sim.applies])}`);
    assert.deepEqual([...sim.saved.values()], [], 'nothing is saved on the edge');
  }
});
