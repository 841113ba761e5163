/**
 * An edge enrolled into a manager through the three bootstrap calls of contract part 4.1, then
 * reached through the bridge: REST, DeviceHub GraphQL and a CSV upload (multipart), device OAuth
 * clients carried out on the edge, and the refusals (wrong, reused and expired codes, a device
 * offline). Both services run in this process on ephemeral ports; every call goes over HTTPS.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { FormData, request } from 'undici';
import { bootstrapAdmin, insecureAgent, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';
import { ERRORS } from '../../src/kernel/errors.js';

let m: TestManager;
let edge: TestEdge;
let cookie: Record<string, string>;
let projectId: string;
let deviceId: string;

async function enrol(e: TestEdge, c: Record<string, string>, code: string) {
  const proposed = await e.call('/dm/cloud/url?locale=en-US', { headers: c, json: { url: m.url } });
  assert.equal(proposed.status, 200, proposed.text);
  const confirmed = await e.call(`/dm/cloud/url/${proposed.body.tx}/confirm?locale=en-US`, {
    method: 'PUT',
    headers: c,
  });
  assert.equal(confirmed.status, 200, confirmed.text);
  return { proposed, activated: await e.call('/dm/cloud?locale=en-US', { headers: c, json: { code } }) };
}

before(async () => {
  m = await startTestManager();
  edge = await startTestEdge();
  cookie = { cookie: `jwtAccess=${await bootstrapAdmin(edge)}` };
  ({ projectId } = await makeProject(m));
});
after(async () => {
  await edge?.stop();
  await m?.stop();
});

describe('activation', () => {
  test('the three bootstrap calls enrol the edge; the fingerprint is the manager certificate', async () => {
    const code = await activationCode(m, projectId);
    const { proposed, activated } = await enrol(edge, cookie, code);
    const cert = new X509Certificate(readFileSync(m.manager.tls!.certFile));
    assert.equal(proposed.body.fingerprint, cert.fingerprint256);
    assert.equal(activated.status, 200, activated.text);
    deviceId = activated.body.deviceId;
    assert.match(deviceId, /^[a-z0-9]{25}$/);
    const online = await eventually(
      async () => {
        const r = await m.call(`/api/v1/device/list?projectId=${projectId}`);
        return r.body.items.find((d: any) => d.id === deviceId && d.online) as any;
      },
      10_000,
      'device online',
    );
    assert.equal(online.projectId, projectId);
    const detail = await m.call(`/api/v1/device/${deviceId}`);
    assert.equal(detail.body.edgeVersion, '4.4.0');
    assert.equal(typeof detail.body.host.hostname, 'string');
    const status = await m.call(`/api/v1/activation/device-status?projectId=${projectId}`);
    assert.equal(status.body.items[0].status, 'ACTIVATED');
    assert.equal(status.body.items[0].deviceId, deviceId);
  });

  test('a wrong, a reused and an expired code are refused', async () => {
    const other = await startTestEdge();
    try {
      const c = { cookie: `jwtAccess=${await bootstrapAdmin(other)}` };
      const wrong = await enrol(other, c, 'AAAA-BBBB-CCCC-DDDD');
      assert.equal(wrong.activated.status, 401, wrong.activated.text);
      assert.equal(wrong.activated.body.code, ERRORS.invalidActivationCode.code);
      const used = (await m.call(`/api/v1/activation/device-status?projectId=${projectId}`)).body.items;
      assert.equal(used.length, 1);
      const reusedCode = await activationCode(m, projectId);
      assert.equal((await enrol(other, c, reusedCode)).activated.status, 200);
      const third = await startTestEdge();
      try {
        const c3 = { cookie: `jwtAccess=${await bootstrapAdmin(third)}` };
        const reused = await enrol(third, c3, reusedCode);
        assert.equal(reused.activated.status, 409, reused.activated.text);
        assert.equal(reused.activated.body.code, ERRORS.activationCodeUsed.code);
        const expiring = await activationCode(m, projectId, 1);
        // Time is the test: the 1 s activation code expires.
        await new Promise((r) => setTimeout(r, 1100));
        const expired = await enrol(third, c3, expiring);
        assert.equal(expired.activated.status, 410, expired.activated.text);
        assert.equal(expired.activated.body.code, ERRORS.activationCodeExpired.code);
        // A refused activation leaves no credential of the manager on the edge.
        const tokens = await third.call('/auth/v3/api-tokens', { headers: c3 });
        assert.equal(tokens.body.total, 0);
      } finally {
        await third.stop();
      }
    } finally {
      await other.stop();
    }
  });
});

describe('the bridge', () => {
  const bridged = (path: string) => `/api/v1/edge/${projectId}/${deviceId}${path}`;

  test('forwards a REST call with the edge credential and answers the edge reply', async () => {
    const r = await m.call(bridged('/devicehub/version'));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.version, '4.4.0');
    // The edge's own 404 comes back as it is.
    const missing = await m.call(bridged('/no/such/route'));
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, ERRORS.notFound.code);
  });

  test('a DeviceHub GraphQL query and mutation', async () => {
    const mk = await m.call(bridged('/devicehub/v2'), {
      json: {
        query: 'mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID Name } }',
        variables: { in: { Name: 'bridged-gen', DriverID: 'Generator' } },
      },
    });
    assert.equal(mk.status, 200, mk.text);
    assert.equal(mk.body.errors, undefined, mk.text);
    const list = await m.call(bridged('/devicehub/v2'), {
      json: { query: 'query { ListDevices(input: { Limit: 10 }) { Total Items { ID Name DriverID } } }' },
    });
    assert.equal(list.status, 200, list.text);
    assert.ok(list.body.data.ListDevices.Items.some((d: any) => d.Name === 'bridged-gen'));
  });

  test('a CSV upload (GraphQL multipart) through the bridge', async () => {
    const form = new FormData();
    const q =
      'mutation($file: Upload!) { UploadCsv(File: $file) { Success Stats { Total Created Failed } } }';
    form.append('operations', JSON.stringify({ query: q, variables: { file: null } }));
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    const csv =
      'DeviceName,TagName,Name,ValueType,Property.address\nbridged-gen,sine_a,S,float64,1\nbridged-gen,sine_b,S,float64,2\n';
    form.append('0', new Blob([csv], { type: 'text/csv' }), 'tags.csv');
    const res = await request(`${m.url}${bridged('/devicehub/v2')}`, {
      method: 'POST',
      headers: { 'x-authtoken': m.token },
      body: form,
      dispatcher: insecureAgent,
    });
    const body = (await res.body.json()) as any;
    assert.equal(res.statusCode, 200, JSON.stringify(body));
    assert.equal(body.errors, undefined, JSON.stringify(body.errors));
    assert.deepEqual(body.data.UploadCsv.Stats, { Total: 2, Created: 2, Failed: 0 });
  });

  test('large bodies both ways: a 2,000-tag CSV up (many body frames), a listing of them down (streamed)', async () => {
    const form = new FormData();
    const q =
      'mutation($file: Upload!) { UploadCsv(File: $file) { Success Stats { Total Created Failed } } }';
    form.append('operations', JSON.stringify({ query: q, variables: { file: null } }));
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    const rows = Array.from(
      { length: 2000 },
      (_, i) => `bridged-gen,bulk_${String(i).padStart(5, '0')}_${'p'.repeat(40)},S,float64,${i + 10}`,
    );
    const csv = `DeviceName,TagName,Name,ValueType,Property.address\n${rows.join('\n')}\n`;
    assert.ok(csv.length > 2 * 64 * 1024, 'larger than two link body frames');
    form.append('0', new Blob([csv], { type: 'text/csv' }), 'bulk.csv');
    const up = await request(`${m.url}${bridged('/devicehub/v2')}`, {
      method: 'POST',
      headers: { 'x-authtoken': m.token },
      body: form,
      dispatcher: insecureAgent,
    });
    const upBody = (await up.body.json()) as any;
    assert.equal(up.statusCode, 200, JSON.stringify(upBody));
    assert.deepEqual(upBody.data.UploadCsv.Stats, { Total: 2000, Created: 2000, Failed: 0 });

    const list = await m.call(bridged('/devicehub/v2'), {
      json: {
        query:
          'query { ListRegistersFromAllDevices(input: { Limit: 1000, TagPattern: "bulk_" }) { TotalCount Registers { ID TagName DeviceName Description } } }',
      },
    });
    assert.equal(list.status, 200, list.text.slice(0, 500));
    assert.ok(list.text.length > 64 * 1024, `a body of ${list.text.length} bytes: streamed in slices`);
    const listed = list.body.data.ListRegistersFromAllDevices;
    assert.equal(listed.TotalCount, 2000);
    assert.equal(new Set(listed.Registers.map((r: any) => r.TagName)).size, 1000);
    assert.ok(
      listed.Registers.every((r: any) => r.TagName.startsWith('bulk_') && r.DeviceName === 'bridged-gen'),
    );
  });

  test('a bridged read answers alike through Fastify (the first call of a token) and from memory (the later ones)', async () => {
    // A new token is not in the manager's token cache: its first read goes through Fastify's
    // route; the next ones take the bridge's fast path (src/manager/bridge/fast-path.ts).
    const without = ({ date: _date, ...rest }: Record<string, unknown>) => rest;
    const graphql = encodeURIComponent(
      'query { ListRegistersFromAllDevices(input: { Limit: 1000, TagPattern: "bulk_" }) { TotalCount Registers { TagName } } }',
    );
    for (const path of ['/devicehub/version', '/no/such/route', `/devicehub/v2?query=${graphql}`]) {
      const { token } = await m.manager.auth.createToken(`reads-${path.length}`, 'admin');
      const first = await m.call(bridged(path), { token });
      const later = [await m.call(bridged(path), { token }), await m.call(bridged(path), { token })];
      for (const r of later) {
        assert.equal(r.status, first.status, `${path}: ${r.text.slice(0, 300)}`);
        assert.deepEqual(without(r.headers), without(first.headers), path);
        assert.equal(r.text, first.text, path);
      }
    }
    const streamed = await m.call(bridged(`/devicehub/v2?query=${graphql}`));
    assert.equal(streamed.status, 200, streamed.text.slice(0, 300));
    assert.ok(streamed.text.length > 16 * 1024, `a body of ${streamed.text.length} bytes: streamed`);
    assert.equal(streamed.body.data.ListRegistersFromAllDevices.TotalCount, 2000);
    // A wrong token and a device of no project are still Fastify's answers (401, 404).
    assert.equal((await m.call(bridged('/devicehub/version'), { token: 'nope' })).status, 401);
    assert.equal((await m.call(`/api/v1/edge/${projectId}/nodevice/devicehub/version`)).status, 404);
  });

  test('a device of another project, an unknown device: 404; the caller token never reaches the edge', async () => {
    const other = await makeProject(m, 'other-co', 'other');
    const r = await m.call(`/api/v1/edge/${other.projectId}/${deviceId}/devicehub/version`);
    assert.equal(r.status, 404);
    const who = await m.call(bridged('/auth/v3/whoami'));
    assert.equal(who.status, 200, who.text);
    assert.match(who.body.subject, /^token:/);
  });

  test('a manager that did not run for five heartbeats keeps its links (their heartbeats wait in the sockets)', async () => {
    const relinked: string[] = [];
    m.manager.links.onLinked((id) => relinked.push(id));
    // Both services run in this process: block it for 1.5 s (the test manager's heartbeat is
    // 300 ms, a link silent for 900 ms ends), then let it run a few heartbeats.
    const until = Date.now() + 1500;
    while (Date.now() < until) {
      // blocked
    }
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.deepEqual(relinked, [], 'no link ended and came back');
    assert.ok(m.manager.links.isOnline(deviceId));
    const r = await m.call(bridged('/devicehub/version'));
    assert.equal(r.status, 200, r.text);
  });
});

describe('device OAuth clients, carried out on the edge', () => {
  test('create (secret once), list, update, regenerate, delete', async () => {
    const base = `/api/v1/device/${deviceId}/oauth-clients`;
    const created = await m.call(base, { json: { name: 'grafana', role: 'viewer' } });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.clientSecret, /^mws_/);
    const token = async (secret: string) =>
      edge.call('/auth/v3/oauth/token', {
        form: { grant_type: 'client_credentials', client_id: created.body.clientId, client_secret: secret },
      });
    assert.equal((await token(created.body.clientSecret)).status, 200);
    const list = await m.call(base);
    assert.ok(
      list.body.items.some((c: any) => c.clientId === created.body.clientId && c.clientSecret === undefined),
    );
    const updated = await m.call(`${base}/${created.body.clientId}`, {
      method: 'PUT',
      json: { name: 'grafana-2' },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.name, 'grafana-2');
    const regen = await m.call(`${base}/${created.body.clientId}/secret`, { method: 'POST', json: {} });
    assert.equal(regen.status, 200, regen.text);
    assert.equal((await token(created.body.clientSecret)).status, 401);
    assert.equal((await token(regen.body.clientSecret)).status, 200);
    assert.equal((await m.call(`${base}/${created.body.clientId}`, { method: 'DELETE' })).status, 204);
    assert.equal((await m.call(`${base}/${created.body.clientId}`, { method: 'DELETE' })).status, 404);
  });
});

describe('revocation', () => {
  test('a removed device is refused by the bridge at once, though its edge is still linked', async () => {
    const other = await startTestEdge();
    try {
      const c = { cookie: `jwtAccess=${await bootstrapAdmin(other)}` };
      const { activated } = await enrol(other, c, await activationCode(m, projectId));
      assert.equal(activated.status, 200, activated.text);
      const id = activated.body.deviceId as string;
      await eventually(async () => (await m.call(`/api/v1/device/${id}`)).body.online, 10_000, 'online');
      const url = `/api/v1/edge/${projectId}/${id}/devicehub/version`;
      // The second call is served from the bridge's memory of the device and its credential.
      assert.equal((await m.call(url)).status, 200);
      assert.equal((await m.call(url)).status, 200);
      assert.equal((await m.call(`/api/v1/device/${id}`, { method: 'DELETE' })).status, 204);
      const r = await m.call(url);
      assert.equal(r.status, 404, r.text);
    } finally {
      await other.stop();
    }
  });
});

describe('offline', () => {
  test('an unenrolled edge goes offline at once; the bridge answers 503; the history records it', async () => {
    assert.equal((await edge.call('/dm/cloud', { method: 'DELETE', headers: cookie })).status, 204);
    await eventually(async () => !(await m.call(`/api/v1/device/${deviceId}`)).body.online, 5000, 'offline');
    const r = await m.call(`/api/v1/edge/${projectId}/${deviceId}/devicehub/version`);
    assert.equal(r.status, 503);
    assert.equal(r.body.code, ERRORS.deviceOffline.code);
    assert.match(r.body.message, /offline/);
    const history = await m.call(`/api/v1/device/${deviceId}/connections`);
    // At least the one connection (a loaded machine may have missed 300 ms heartbeats earlier and
    // reconnected); none is left open.
    assert.ok(history.body.total >= 1, history.text);
    for (const c of history.body.items) assert.ok(c.disconnectedAt, history.text);
  });
});
