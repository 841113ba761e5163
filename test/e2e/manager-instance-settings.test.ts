/**
 * Instance settings of the manager on the admin console API: the licence type with
 * `licenseCoreName`, the instance mode, the MQTT TLS certificate (checked against its key), the
 * marketplace secrets (sealed at rest: the value is in no file of the data directory, database
 * and log store included) and the user's certificate for the manager's HTTPS, swapped without a
 * restart under HTTPS load (keep-alive and fresh connections to both listeners): no request
 * fails, new connections get the new certificate, and it is still served after a restart.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { makePki, type TestPki } from '../helpers/integrations.js';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { activationCode, makeProject, startTestManager, type TestManager } from '../helpers/manager.js';
import { eventually } from '../helpers/util.js';

let m: TestManager;
let pki: TestPki;
let dataDir: string;
let edge: TestEdge | undefined;
let edgeDir: string;

function fingerprintAt(url: string): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false }, () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.end();
    });
    s.on('error', reject);
  });
}

/** A GET on a new connection (no keep-alive): answers the status, or throws. */
function fresh(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { agent: false, rejectUnauthorized: false, headers: { 'x-authtoken': token } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

before(async () => {
  pki = makePki();
  dataDir = mkdtempSync(join(tmpdir(), 'mw-mgr-settings-'));
  edgeDir = mkdtempSync(join(tmpdir(), 'mw-edge-ssl-'));
  m = await startTestManager({ dataDir });
});
after(async () => {
  await edge?.stop();
  rmSync(edgeDir, { recursive: true, force: true });
  await m?.stop();
  pki?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('instance settings', () => {
  test('licence type with licenseCoreName; instance mode', async () => {
    const lic = await m.admin('/admin/v1/licenses2/type');
    assert.equal(lic.status, 200, lic.text);
    assert.equal(typeof lic.body.licenseCoreName, 'string');
    assert.ok(lic.body.licenseCoreName.length > 0);
    assert.deepEqual((await m.admin('/admin/v1/wg/instance-mode')).body, { mode: 'STANDALONE' });
    const put = await m.admin('/admin/v1/wg/instance-mode', { method: 'PUT', json: { mode: 'HUB' } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((await m.admin('/admin/v1/wg/instance-mode')).body, { mode: 'HUB' });
    const bad = await m.admin('/admin/v1/wg/instance-mode', { method: 'PUT', json: { mode: 'LOUD' } });
    assert.equal(bad.status, 400, bad.text);
  });

  test('MQTT TLS certificate: checked against its key; the key is never answered', async () => {
    assert.equal((await m.admin('/admin/v1/settings/mqtt-ssl-certificate')).body.configured, false);
    const wrong = await m.admin('/admin/v1/settings/mqtt-ssl-certificate', {
      method: 'PUT',
      json: { certificate: pki.serverCert, privateKey: pki.clientKey },
    });
    assert.equal(wrong.status, 400, wrong.text);
    assert.match(wrong.body.message, /does not belong/);
    const junk = await m.admin('/admin/v1/settings/mqtt-ssl-certificate', {
      method: 'PUT',
      json: { certificate: pki.serverCert, privateKey: 'nope' },
    });
    assert.equal(junk.status, 400, junk.text);
    const ok = await m.admin('/admin/v1/settings/mqtt-ssl-certificate', {
      method: 'PUT',
      json: { certificate: pki.serverCert + pki.ca, privateKey: pki.serverKey },
    });
    assert.equal(ok.status, 200, ok.text);
    const got = await m.admin('/admin/v1/settings/mqtt-ssl-certificate');
    assert.equal(got.body.configured, true);
    assert.equal(got.body.certificates.length, 2);
    assert.match(got.body.certificates[0].subject, /CN=localhost/);
    assert.ok(!got.text.includes('PRIVATE KEY'));
  });

  test('marketplace secrets are sealed at rest and never logged (the marketplace module answers the routes)', async () => {
    const value = `mpc-secret-${Math.random().toString(36).slice(2)}-value`;
    const created = await m.admin('/admin/v1/mpc-secrets/registry.password', { json: { value } });
    assert.equal(created.status, 200, created.text);
    assert.ok(!created.text.includes(value));
    const read = await m.admin('/admin/v1/mpc-secrets/registry.password');
    assert.equal(read.status, 200);
    assert.ok(!read.text.includes(value), 'the value is never answered back');
    assert.equal((await m.admin('/admin/v1/mpc-secrets/bad key!')).status, 400);
    assert.equal((await m.admin('/admin/v1/mpc-secrets/registry.password', { token: null })).status, 401);
    await m.manager.shell.logStore.flush();
    for (const file of filesUnder(dataDir)) {
      const bytes = readFileSync(file);
      assert.equal(bytes.includes(value), false, `${file} holds the secret in clear`);
    }
    assert.equal(
      (await m.admin('/admin/v1/mpc-secrets/registry.password', { method: 'DELETE' })).status,
      204,
    );
    assert.equal(
      (await m.admin('/admin/v1/mpc-secrets/registry.password', { method: 'DELETE' })).status,
      404,
    );
  });

  test('user SSL: refused when the key does not match; swapped under HTTPS load with no failed request; a linked edge follows', async () => {
    // An enrolled edge: it pins the manager's certificate, and learns the new one over its link.
    const { projectId } = await makeProject(m);
    edge = await startTestEdge({ dataDir: edgeDir });
    const c = { cookie: `jwtAccess=${await bootstrapAdmin(edge)}` };
    const proposed = await edge.call('/dm/cloud/url', { headers: c, json: { url: m.url } });
    await edge.call(`/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: c });
    const a = await edge.call('/dm/cloud', {
      headers: c,
      json: { code: await activationCode(m, projectId) },
    });
    assert.equal(a.status, 200, a.text);
    const deviceId = a.body.deviceId as string;
    const online = (want: boolean) =>
      eventually(
        async () => (await m.call(`/api/v1/device/${deviceId}`)).body.online === want,
        20_000,
        `online=${want}`,
      );
    await online(true);
    // Only the manager, over the link, announces a certificate: not a local caller.
    const local = await edge.call('/dm/cloud/certificate', {
      method: 'PUT',
      headers: c,
      json: { fingerprint: 'AB:'.repeat(31) + 'AB' },
    });
    assert.equal(local.status, 403, local.text);

    const leaf = new X509Certificate(pki.serverCert).fingerprint256;
    const before = await fingerprintAt(m.url);
    assert.notEqual(before, leaf);
    const wrong = await m.admin('/admin/v1/domain/ssl/user/enable', {
      json: { certificate: pki.serverCert, privateKey: pki.clientKey },
    });
    assert.equal(wrong.status, 400, wrong.text);
    assert.equal(await fingerprintAt(m.url), before, 'a refused certificate changes nothing');

    let running = true;
    const failures: string[] = [];
    let done = 0;
    const targets = [`${m.url}/api/v1/whoami`, `${m.adminUrl}/admin/v1/licenses2/type`];
    const loop = async (i: number) => {
      while (running) {
        const url = targets[i % 2]!;
        try {
          const status =
            i < 4
              ? (
                  await (url.startsWith(m.adminUrl)
                    ? m.admin(url.slice(m.adminUrl.length))
                    : m.call(url.slice(m.url.length)))
                ).status
              : await fresh(url, m.token);
          if (status !== 200) failures.push(`${url}: ${status}`);
          done++;
        } catch (err) {
          failures.push(`${url}: ${(err as Error).message}`);
        }
      }
    };
    const loops = Array.from({ length: 8 }, (_, i) => loop(i));
    await new Promise((r) => setTimeout(r, 1500));
    const atSwap = done;
    const swap = await m.admin('/admin/v1/domain/ssl/user/enable', {
      json: { certificate: pki.serverCert + pki.ca, privateKey: pki.serverKey },
    });
    assert.equal(swap.status, 200, swap.text);
    assert.equal(swap.body.listeners, 2);
    assert.deepEqual(swap.body.edges, { announced: 1, failed: [] });
    await new Promise((r) => setTimeout(r, 1500));
    running = false;
    await Promise.all(loops);
    assert.deepEqual(failures, []);
    assert.ok(
      atSwap > 20 && done - atSwap > 20,
      `requests before ${atSwap} and after ${done - atSwap} the swap`,
    );
    assert.equal(await fingerprintAt(m.url), leaf);
    assert.equal(await fingerprintAt(m.adminUrl), leaf);

    // The edge reconnects (a restart of the edge) to the new certificate.
    await edge.stop();
    await online(false);
    edge = await startTestEdge({ dataDir: edgeDir });
    await online(true);
    assert.equal((await edge.call('/dm/cloud', { headers: { cookie: c.cookie } })).status !== 500, true);

    // Kept across a restart.
    await m.stop();
    m = await startTestManager({ dataDir });
    assert.equal(await fingerprintAt(m.url), leaf);
    assert.equal(await fingerprintAt(m.adminUrl), leaf);
    assert.equal((await m.call('/api/v1/whoami')).status, 200);
  });
});
