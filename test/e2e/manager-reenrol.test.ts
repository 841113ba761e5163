/**
 * Issue 35, item 5: re-enrolling an edge that is already enrolled. Two managers and one edge as
 * `millwright` processes (ephemeral ports): the edge enrolled into manager A; the three `/dm/cloud`
 * calls again with a new code are refused (409, naming the manager and the device) and consume
 * nothing; with `"move": true` into A again, the old device record is retired (A lists one
 * device, online); with `"move": true` into manager B, A retires its record too (the old link
 * closes as a move). Neither manager's log says "edge stopping": nothing stopped.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { http } from '../helpers/edge.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { eventually } from '../helpers/util.js';

const dirs = tempDirs('mw-reenrol-');
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'first-run-password' });
const procs: CliProcess[] = [];

interface Manager {
  proc: CliProcess;
  url: string;
  api: (path: string, o?: Parameters<typeof http>[1]) => ReturnType<typeof http>;
  projectId: string;
}

async function startManager(name: string): Promise<Manager> {
  const dataDir = dirs.make();
  const token = runCliJson(['manager', 'token', 'create', '--data-dir', dataDir, '--name', 'e2e'], env).token;
  const proc = await startCli(
    [
      'manager',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--admin-port',
      '0',
      '--data-dir',
      dataDir,
      '--heartbeat-interval',
      '300',
      '--log-level',
      'info',
    ],
    { env },
  );
  procs.push(proc);
  const url = proc.ready.services.manager!.url;
  const api = (path: string, o: Parameters<typeof http>[1] = {}) =>
    http(`${url}${path}`, { ...o, headers: { 'x-authtoken': token, ...o.headers } });
  const company = await api('/api/v1/company', { json: { companyName: name } });
  const project = await api('/api/v1/project', { json: { companyId: company.body.id, name: 'p' } });
  assert.equal(project.status, 201, project.text);
  return { proc, url, api, projectId: project.body.id as string };
}

async function codeOf(m: Manager): Promise<string> {
  const r = await m.api('/api/v1/activation/code', { json: { projectId: m.projectId } });
  assert.ok(r.status === 200 || r.status === 201, r.text);
  return r.body.code as string;
}

async function devicesOf(m: Manager): Promise<{ id: string; online: boolean }[]> {
  const r = await m.api(`/api/v1/device/list?projectId=${m.projectId}`);
  assert.equal(r.status, 200, r.text);
  return r.body.items as { id: string; online: boolean }[];
}

let a: Manager;
let b: Manager;
let e: (path: string, o?: Parameters<typeof http>[1]) => ReturnType<typeof http>;
let cookie: Record<string, string>;

/** The edge's three bootstrap calls: propose, confirm, activate (with `extra` in the body). */
async function enrol(m: Manager, code: string, extra: Record<string, unknown> = {}) {
  const tx = (await e('/dm/cloud/url?locale=en-US', { headers: cookie, json: { url: m.url } })).body.tx;
  const confirmed = await e(`/dm/cloud/url/${tx}/confirm?locale=en-US`, { method: 'PUT', headers: cookie });
  assert.equal(confirmed.status, 200, confirmed.text);
  return e('/dm/cloud?locale=en-US', { headers: cookie, json: { code, ...extra } });
}

before(async () => {
  [a, b] = await Promise.all([startManager('a'), startManager('b')]);
  const edge = await startCli(
    [
      'edge',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--datahub-port',
      '0',
      '--data-dir',
      dirs.make(),
      '--log-level',
      'warn',
    ],
    { env },
  );
  procs.push(edge);
  const url = edge.ready.services.edge!.url;
  e = (path, o = {}) => http(`${url}${path}`, o);
  const login = await e('/auth/v2/login', {
    json: { username: 'admin', password: 'first-run-password', providerId: LOCAL_PROVIDER_ID },
  });
  cookie = { cookie: `jwtAccess=${login.body.jwtAccess}` };
  await e('/auth/v2/eula', { method: 'PUT', headers: cookie, json: { agree: true, version: '1.0' } });
  const pw = await e('/auth/v2/password?locale=en-US', {
    method: 'PUT',
    headers: cookie,
    json: { currentPassword: 'first-run-password', newPassword: 'a-new-admin-password' },
  });
  cookie = { cookie: `jwtAccess=${pw.body.jwtAccess}` };
});
after(async () => {
  for (const p of procs) await p.stop();
  dirs.removeAll();
});

test('an enrolled edge: refused naming the manager; "move": true retires the old record, on the same and on another manager', async () => {
  const first = await enrol(a, await codeOf(a));
  assert.equal(first.status, 200, first.text);
  const firstId = first.body.deviceId as string;
  await eventually(
    async () => (await devicesOf(a)).some((d) => d.id === firstId && d.online),
    15_000,
    'online',
  );

  // Again without "move": 409 naming the manager and the device; the code is not consumed.
  const code = await codeOf(a);
  const refused = await enrol(a, code);
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.body.code, 'conflict');
  assert.ok(
    refused.body.message.includes(`enrolled with the manager at ${a.url} as device ${firstId}`),
    refused.text,
  );
  assert.match(refused.body.message, /"move": true/);
  assert.deepEqual(
    (await devicesOf(a)).map((d) => d.id),
    [firstId],
  );
  const status = await e('/dm/cloud', { headers: cookie });
  assert.equal(status.body.deviceId, firstId);
  assert.equal(status.body.managerUrl, a.url);

  // "move": true into the same manager (the unused code): a new record, the old one retired.
  const moved = await enrol(a, code, { move: true });
  assert.equal(moved.status, 200, moved.text);
  const secondId = moved.body.deviceId as string;
  assert.notEqual(secondId, firstId);
  const onA = await eventually(
    async () => {
      const list = await devicesOf(a);
      return list.length === 1 && list[0]!.online ? list : undefined;
    },
    15_000,
    'one device on A, online',
  );
  assert.equal(onA[0]!.id, secondId);
  assert.equal((await a.api(`/api/v1/device/${firstId}`)).status, 404);

  // "move": true into manager B: B has the edge, A retires its record when the old link closes.
  const toB = await enrol(b, await codeOf(b), { move: true });
  assert.equal(toB.status, 200, toB.text);
  const thirdId = toB.body.deviceId as string;
  await eventually(
    async () => (await devicesOf(b)).some((d) => d.id === thirdId && d.online),
    15_000,
    'online on B',
  );
  await eventually(async () => (await devicesOf(a)).length === 0, 15_000, 'A retired the moved edge');
  assert.equal((await a.api(`/api/v1/device/${secondId}`)).status, 404);

  // The logs: A says the edge moved (twice) and retired both records; nothing says "edge stopping".
  const logA = a.proc.output();
  assert.doesNotMatch(logA, /edge stopping/);
  assert.doesNotMatch(b.proc.output(), /edge stopping/);
  const unlinked = logA
    .split('\n')
    .filter((l) => l.includes('"edge unlinked"'))
    .map((l) => JSON.parse(l) as { deviceId: string; reason: string });
  assert.deepEqual(
    unlinked.map((u) => u.deviceId),
    [firstId, secondId],
  );
  assert.match(unlinked[0]!.reason, new RegExp(`^edge moved: enrolled again as device ${secondId} at `));
  assert.match(
    unlinked[1]!.reason,
    new RegExp(`^edge moved: enrolled again as device ${thirdId} at ${b.url}`),
  );
  const retired = logA
    .split('\n')
    .filter((l) => l.includes('device retired'))
    .map((l) => (JSON.parse(l) as { deviceId: string }).deviceId);
  assert.deepEqual([...new Set(retired)].sort(), [firstId, secondId].sort());
});
