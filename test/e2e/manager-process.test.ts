/**
 * The manager and an edge as `millwright` processes: a token made by the CLI, the edge enrolled
 * through the three bootstrap calls, online; killed (SIGKILL), offline within three heartbeats;
 * restarted, online again; and a manager whose certificate changed since `confirm` refused by
 * the edge.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { eventually } from '../helpers/util.js';

const HEARTBEAT = 300;
const dirs = tempDirs('mw-mgr-proc-');
const managerDir = dirs.make();
const edgeDir = dirs.make();
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'first-run-password' });
const procs: CliProcess[] = [];

async function start(args: string[], service: 'edge' | 'manager') {
  const p = await startCli(args, { env });
  procs.push(p);
  return { proc: p, ready: p.ready.services[service]! };
}

const managerArgs = (port = '0', adminPort = '0') => [
  'manager',
  '--host',
  '127.0.0.1',
  '--port',
  port,
  '--admin-port',
  adminPort,
  '--data-dir',
  managerDir,
  '--heartbeat-interval',
  String(HEARTBEAT),
  '--log-level',
  'warn',
];
const edgeArgs = [
  'edge',
  '--host',
  '127.0.0.1',
  '--port',
  '0',
  '--datahub-port',
  '0',
  '--data-dir',
  edgeDir,
  '--log-level',
  'warn',
];

let token: string;
let mgr: { proc: CliProcess; ready: { url: string; adminUrl?: string; ports: Record<string, number> } };
const api = (path: string, o: Parameters<typeof http>[1] = {}) =>
  http(`${mgr.ready.url}${path}`, { ...o, headers: { 'x-authtoken': token, ...o.headers } });

before(async () => {
  token = runCliJson(['manager', 'token', 'create', '--data-dir', managerDir, '--name', 'e2e'], env).token;
  mgr = await start(managerArgs(), 'manager');
});
after(async () => {
  for (const p of procs) await p.stop();
  dirs.removeAll();
});

test('enrol, kill, restart, and a changed manager certificate', async () => {
  assert.ok(mgr.ready.adminUrl);
  assert.equal((await api('/api/v1/whoami')).status, 200);
  const company = await api('/api/v1/company', { json: { companyName: 'proc' } });
  const project = await api('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  const code = await api('/api/v1/activation/code', { json: { projectId: project.body.id } });

  let edge = await start(edgeArgs, 'edge');
  const e = (path: string, o: Parameters<typeof http>[1] = {}) => http(`${edge.ready.url}${path}`, o);
  const login = await e('/auth/v2/login', {
    json: { username: 'admin', password: 'first-run-password', providerId: LOCAL_PROVIDER_ID },
  });
  let c = { cookie: `jwtAccess=${login.body.jwtAccess}` };
  await e('/auth/v2/eula', { method: 'PUT', headers: c, json: { agree: true, version: '1.0' } });
  const pw = await e('/auth/v2/password?locale=en-US', {
    method: 'PUT',
    headers: c,
    json: { currentPassword: 'first-run-password', newPassword: 'a-new-admin-password' },
  });
  c = { cookie: `jwtAccess=${pw.body.jwtAccess}` };
  const tx = (await e('/dm/cloud/url?locale=en-US', { headers: c, json: { url: mgr.ready.url } })).body.tx;
  assert.equal(
    (await e(`/dm/cloud/url/${tx}/confirm?locale=en-US`, { method: 'PUT', headers: c })).status,
    200,
  );
  const activated = await e('/dm/cloud?locale=en-US', { headers: c, json: { code: code.body.code } });
  assert.equal(activated.status, 200, activated.text);
  const deviceId = activated.body.deviceId as string;
  const online = async () => (await api(`/api/v1/device/${deviceId}`)).body.online as boolean;
  await eventually(online, 10_000, 'online after activation');

  // Killed: no close frame; the socket's end or three missed heartbeats mark it offline.
  process.kill(edge.proc.pid, 'SIGKILL');
  const killedAt = Date.now();
  await eventually(async () => !(await online()), HEARTBEAT * 3 + 2000, 'offline after kill');
  assert.ok(Date.now() - killedAt <= HEARTBEAT * 4 + 1000, `offline after ${Date.now() - killedAt} ms`);

  // Restarted on the same data directory: the link comes back by itself.
  edge = await start(edgeArgs, 'edge');
  await eventually(online, 15_000, 'online after restart');
  // The link the kill ended and the one after the restart; a loaded machine can miss three 300 ms
  // heartbeats and open one more (issue 35, item 6: counted, not a failure). One link is open.
  const history = await api(`/api/v1/device/${deviceId}/connections?limit=100`);
  assert.ok(history.body.total >= 2, history.text);
  const open = (history.body.items as { disconnectedAt: string | null }[]).filter(
    (c) => c.disconnectedAt === null,
  );
  assert.equal(open.length, 1, history.text);

  // The manager comes back on the same ports with another certificate: the edge refuses it.
  await mgr.proc.stop();
  rmSync(join(managerDir, 'tls'), { recursive: true, force: true });
  mgr = await start(
    managerArgs(String(mgr.ready.ports.port), String(mgr.ready.ports['admin-port'])),
    'manager',
  );
  // The edge has tried the new manager and refused it (instead of a fixed six heartbeats).
  await eventually(
    async () => /certificate changed/.test(String((await e('/dm/cloud', { headers: c })).body.lastError)),
    HEARTBEAT * 6 + 10_000,
    'the edge refused the changed certificate',
  );
  assert.equal(await online(), false);
  const status = await e('/dm/cloud', { headers: c });
  assert.equal(status.body.connected, false);
  assert.match(String(status.body.lastError), /certificate changed/);
});
