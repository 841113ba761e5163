/**
 * Edge logs across the fleet with a slow edge: a `millwright edge` process that is stopped
 * (SIGSTOP) while its link stays up is named `timeout` after the per-edge deadline, the other
 * edge's entries are answered, and the whole call is not held up by it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapAdmin, http, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { startEdgeProcess } from '../helpers/edge-process.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';

let m: TestManager;
let fast: TestEdge;
let slow: Awaited<ReturnType<typeof startEdgeProcess>>;
let slowDir: string;
let projectId: string;
const ids: string[] = [];
let stopped = false;

async function enrol(url: string, headers: Record<string, string>): Promise<string> {
  const proposed = await http(`${url}/dm/cloud/url`, { headers, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  await http(`${url}/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers });
  const a = await http(`${url}/dm/cloud`, { headers, json: { code: await activationCode(m, projectId) } });
  assert.equal(a.status, 200, a.text);
  return a.body.deviceId as string;
}

before(async () => {
  // Heartbeats every 5 s: a stopped edge's link is not seen silent for 15 s.
  m = await startTestManager({ heartbeatInterval: 5000 });
  ({ projectId } = await makeProject(m));
  fast = await startTestEdge();
  ids.push(await enrol(fast.url, { cookie: `jwtAccess=${await bootstrapAdmin(fast)}` }));
  slowDir = mkdtempSync(join(tmpdir(), 'mw-edge-slow-'));
  slow = await startEdgeProcess(slowDir);
  const tok = await http(`${slow.url}/auth/v3/oauth/token`, {
    form: {
      grant_type: 'client_credentials',
      client_id: slow.credentials.clientId,
      client_secret: slow.credentials.secret,
    },
  });
  ids.push(await enrol(slow.url, { authorization: `Bearer ${tok.body.access_token}` }));
  for (const id of ids)
    await eventually(
      async () => (await m.call(`/api/v1/device/${id}`)).body.online === true,
      20_000,
      'online',
    );
  fast.edge.logStore.append({ level: 'warn', component: 'test.slow', message: 'from the fast edge' });
  await fast.edge.logStore.flush();
});
after(async () => {
  if (stopped) process.kill(slow.proc.pid, 'SIGCONT');
  await slow?.stop();
  await fast?.stop();
  await m?.stop();
  rmSync(slowDir, { recursive: true, force: true });
});

test('a slow edge is named timeout after its deadline; the others answer', async () => {
  process.kill(slow.proc.pid, 'SIGSTOP');
  stopped = true;
  const t0 = Date.now();
  const r = await m.call('/api/v1/edge-logs/query', {
    json: { projectId, component: 'test.slow', deadlineMs: 1000, limit: 10 },
  });
  const ms = Date.now() - t0;
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(
    r.body.entries.map((e: any) => [e.deviceId, e.message]),
    [[ids[0], 'from the fast edge']],
  );
  assert.deepEqual(
    r.body.unavailable.map((u: any) => [u.deviceId, u.status]),
    [[ids[1], 'timeout']],
  );
  assert.ok(ms < 5000, `answered in ${ms} ms`);
  const stats = await m.call('/api/v1/edge-logs/statistics', { json: { projectId, deadlineMs: 500 } });
  assert.equal(stats.status, 200, stats.text);
  assert.deepEqual(
    stats.body.unavailable.map((u: any) => [u.deviceId, u.status]),
    [[ids[1], 'timeout']],
  );
  process.kill(slow.proc.pid, 'SIGCONT');
  stopped = false;
});
