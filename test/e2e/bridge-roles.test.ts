/**
 * Issue 33, finding 4: the bridge never widens a role. A real manager and a real enrolled edge:
 * a bridged call runs on the edge as the manager caller's role over the device's project (carried
 * in the link's `req` frame), enforced by the edge itself; the edge's credentials and device
 * management need admin on both sides; the edge's log names the manager actor of a bridged call.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import {
  enrolTestEdge,
  activationCode,
  makeProject,
  startTestManager,
  type TestManager,
} from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';
import type { BridgeActor } from '../../src/kernel/link/protocol.js';
import type { BridgedCallRecord } from '../../src/manager/bridge/index.js';

let m: TestManager;
let edge: TestEdge;
let cookie: Record<string, string>;
let projectId: string;
let companyId: string;
let deviceId: string;
let operatorToken: string;
let viewerToken: string;
const heard: BridgedCallRecord[] = [];

const bridged = (path: string) => `/api/v1/edge/${projectId}/${deviceId}${path}`;
const actor = (role: BridgeActor['role']): BridgeActor => ({
  role,
  subject: `token:test-${role}`,
  user: `test-${role}`,
  companyId,
  projectId,
  requestId: 'req-test',
});

async function userToken(username: string, role: 'operator' | 'viewer'): Promise<string> {
  const u = await m.admin('/admin/v1/users', { json: { username, password: 'long-password' } });
  assert.equal(u.status, 201, u.text);
  const g = await m.admin('/admin/v1/user/project/roles', { json: { username, role, projectId } });
  assert.equal(g.status, 201, g.text);
  const t = await m.admin('/admin/v1/api-tokens', { json: { name: `${username}-cli`, username } });
  assert.equal(t.status, 201, t.text);
  return t.body.token as string;
}

before(async () => {
  m = await startTestManager();
  edge = await startTestEdge({ logLevel: 'info' });
  cookie = { cookie: `jwtAccess=${await bootstrapAdmin(edge)}` };
  ({ projectId, companyId } = await makeProject(m, 'roles-co', 'roles-plant'));
  const code = await activationCode(m, projectId);
  deviceId = await enrolTestEdge(edge, m, cookie, code);
  await eventually(
    async () => (await m.call(bridged('/devicehub/version'))).status === 200,
    10_000,
    'the edge answers through the bridge',
  );
  operatorToken = await userToken('olga', 'operator');
  viewerToken = await userToken('vic', 'viewer');
  m.manager.shell.module('bridge').onBridgedCall((c) => void heard.push(c));
});
after(async () => {
  await edge?.stop();
  await m?.stop();
});

async function clientNames(): Promise<string[]> {
  const r = await edge.call('/auth/v3/api-clients?limit=200', { headers: cookie });
  assert.equal(r.status, 200, r.text);
  return r.body.items.map((c: { name: string }) => c.name);
}

test("a project operator's bridged API-client creation is 403, and no client is made", async () => {
  const r = await m.call(bridged('/auth/v3/api-clients'), {
    token: operatorToken,
    json: { name: 'minted-by-operator', role: 'admin' },
  });
  assert.equal(r.status, 403, r.text);
  // The device's OAuth clients (carried out on the edge) need admin too.
  const viaClients = await m.call(`/api/v1/device/${deviceId}/oauth-clients`, {
    token: operatorToken,
    json: { name: 'minted-2', role: 'admin' },
  });
  assert.equal(viaClients.status, 403, viaClients.text);
  assert.ok(!(await clientNames()).some((n) => n.startsWith('minted')));
});

test("an operator cannot apply a template with the edge's credentials, on the edge or as a manager task", async () => {
  // On the edge: a template made from the current configuration holds the auth and datahub sections.
  const made = await m.call(bridged('/config/templates'), { json: { name: 'with-credentials' } });
  assert.equal(made.status, 201, made.text);
  const id = made.body.id as string;
  const applied = await m.call(bridged(`/config/templates/${id}/apply`), { token: operatorToken, json: {} });
  assert.equal(applied.status, 403, applied.text);
  assert.match(applied.text, /credentials \(section auth, datahub\)/);
  // As a manager task: refused before any task starts.
  const tpl = await m.call('/api/v1/template/create', {
    json: { friendlyName: 'edge with credentials', deviceId },
  });
  assert.equal(tpl.status, 201, tpl.text);
  const task = await m.call('/api/v1/async-task/template-apply', {
    token: operatorToken,
    json: { templateId: tpl.body.id, deviceIds: [deviceId] },
  });
  assert.equal(task.status, 403, task.text);
  assert.match(task.text, /admin role/);
  // The admin may (the same template through the bridge, on the edge).
  const byAdmin = await m.call(bridged(`/config/templates/${id}/apply`), { json: {} });
  assert.equal(byAdmin.status, 200, byAdmin.text);
});

test('the edge itself refuses what the manager caller may not do, whatever its credential', async () => {
  const bridge = m.manager.shell.module('bridge');
  // As an operator (a manager that skipped its own check): the edge refuses credentials and /dm/.
  const op = await bridge.json(
    deviceId,
    'POST',
    '/auth/v3/api-clients',
    { name: 'minted-3', role: 'admin' },
    {},
    actor('operator'),
  );
  assert.equal(op.status, 403, JSON.stringify(op.body));
  assert.match(op.body.message, /needs the admin role on the manager and on the edge/);
  const dm = await bridge.json(
    deviceId,
    'PUT',
    '/dm/v2/api-clients/nope',
    { name: 'x' },
    {},
    actor('operator'),
  );
  assert.equal(dm.status, 403, JSON.stringify(dm.body));
  // An operator may change other state (a DeviceHub device through GraphQL).
  const mk = await bridge.json(
    deviceId,
    'POST',
    '/devicehub/v2',
    {
      query: 'mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }',
      variables: { in: { Name: 'by-operator', DriverID: 'Generator' } },
    },
    {},
    actor('operator'),
  );
  assert.equal(mk.status, 200, JSON.stringify(mk.body));
  assert.equal(mk.body.errors, undefined, JSON.stringify(mk.body));
  // A project viewer's mutation is refused on the edge (REST and GraphQL).
  const v = await bridge.json(
    deviceId,
    'POST',
    '/auth/v3/api-clients',
    { name: 'minted-4' },
    {},
    actor('viewer'),
  );
  assert.equal(v.status, 403, JSON.stringify(v.body));
  const vg = await bridge.json(
    deviceId,
    'POST',
    '/devicehub/v2',
    {
      query: 'mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }',
      variables: { in: { Name: 'by-viewer', DriverID: 'Generator' } },
    },
    {},
    actor('viewer'),
  );
  assert.equal(vg.status, 403, JSON.stringify(vg.body));
  // A frame without an actor (a manager older than the field) is a viewer's, never an admin's.
  const old = await m.manager.links.request(deviceId, {
    method: 'DELETE',
    path: '/auth/v3/api-clients/anything',
    headers: {
      authorization: `Basic ${Buffer.from(`${(await m.manager.fleet.edgeCredential(deviceId))!}:`).toString('base64')}`,
    },
    body: null,
  });
  assert.equal(old.status, 403);
  const whoami = await bridge.json(deviceId, 'GET', '/auth/v3/whoami', undefined, {}, actor('viewer'));
  assert.equal(whoami.status, 200, JSON.stringify(whoami.body));
  assert.equal(whoami.body.role, 'viewer');
  assert.ok(!(await clientNames()).some((n) => n.startsWith('minted')));
});

test("a project viewer's bridged mutation is 403; a manager admin's bridged read and mutation work", async () => {
  const v = await m.call(bridged('/auth/v3/api-clients'), { token: viewerToken, json: { name: 'minted-5' } });
  assert.equal(v.status, 403, v.text);
  const read = await m.call(bridged('/auth/v3/api-clients?limit=10'), { token: viewerToken });
  assert.equal(read.status, 200, read.text);

  const adminRead = await m.call(bridged('/auth/v3/whoami'));
  assert.equal(adminRead.status, 200, adminRead.text);
  assert.equal(adminRead.body.role, 'admin');
  const made = await m.call(bridged('/auth/v3/api-clients'), { json: { name: 'made-by-manager-admin' } });
  assert.equal(made.status, 201, made.text);
  assert.ok((await clientNames()).includes('made-by-manager-admin'));
  // The manager's audit hook heard it, with its actor.
  const rec = heard.find((c) => c.method === 'POST' && c.path === '/auth/v3/api-clients' && c.status === 201);
  assert.ok(rec, JSON.stringify(heard.map((c) => [c.method, c.path, c.status])));
  assert.equal(rec.actor.role, 'admin');
  assert.equal(rec.actor.projectId, projectId);
});

test("the edge's log names the manager actor of a bridged call", async () => {
  const made = await m.call(bridged('/auth/v3/api-clients'), { json: { name: 'logged-call' } });
  assert.equal(made.status, 201, made.text);
  const admin = (await m.manager.auth.authenticate(m.token)) as { tokenId: string };
  await edge.edge.logStore.flush();
  const q = await edge.call('/logs/query?search=bridged%20call&limit=50', { headers: cookie });
  assert.equal(q.status, 200, q.text);
  const line = q.body.entries.find(
    (e: any) =>
      e.fields?.method === 'POST' &&
      e.fields?.url === '/auth/v3/api-clients' &&
      e.fields?.bridgedBy?.subject === `token:${admin.tokenId}`,
  );
  assert.ok(line, JSON.stringify(q.body.entries));
  assert.equal(line.fields.bridgedBy.role, 'admin');
  assert.equal(line.fields.bridgedBy.projectId, projectId);
  assert.equal(line.fields.bridgedBy.companyId, companyId);
  assert.match(line.fields.bridgedBy.subject, /^token:/);
  assert.equal(typeof line.fields.bridgedBy.requestId, 'string');
});
