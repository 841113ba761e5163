/** Issue 11, "the first hour": recovering the first-run password, readable errors, the CLI's manners. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { http } from '../helpers/edge.js';
import { unsToken } from '../helpers/uns.js';
import { runCli, startCli, tempDirs } from '../helpers/cli.js';

const dirs = tempDirs('mw-first-hour-');
after(() => dirs.removeAll());

const login = (url: string, password: string) =>
  http(`${url}/auth/v2/login`, { json: { username: 'admin', password, providerId: LOCAL_PROVIDER_ID } });

test('`millwright edge admin reset-password` prints a one-time password, and the bootstrap asks for a change again', async () => {
  const dir = dirs.make();
  const edge = await startCli([
    'edge',
    '--port',
    '0',
    '--datahub-port',
    '0',
    '--host',
    '127.0.0.1',
    '--data-dir',
    dir,
  ]);
  try {
    const url = edge.ready.services.edge!.url;
    const first = edge.ready.services.edge!.firstRun!.password!;
    // The first-run bootstrap, done: the admin has a password of their own.
    let jwt = (await login(url, first)).body.jwtAccess as string;
    const cookie = () => ({ cookie: `jwtAccess=${jwt}` });
    assert.equal(
      (
        await http(`${url}/auth/v2/eula`, {
          method: 'PUT',
          headers: cookie(),
          json: { agree: true, version: '1.0' },
        })
      ).status,
      204,
    );
    const changed = await http(`${url}/auth/v2/password?locale=en-US`, {
      method: 'PUT',
      headers: cookie(),
      json: { currentPassword: first, newPassword: 'my-own-password' },
    });
    assert.equal(changed.status, 200, changed.text);

    // Forgotten: reset it from the data directory while the edge runs.
    const reset = await runCli(['edge', 'admin', 'reset-password', '--data-dir', dir]);
    assert.equal(reset.code, 0, reset.stderr);
    const out = JSON.parse(reset.stdout) as { username: string; password: string };
    assert.equal(out.username, 'admin');
    assert.ok(out.password.length >= 12);

    assert.equal((await login(url, 'my-own-password')).status, 401, 'the old password no longer works');
    const again = await login(url, out.password);
    assert.equal(again.status, 200, again.text);
    jwt = again.body.jwtAccess as string;
    const blocked = await http(`${url}/auth/v3/api-clients`, { headers: cookie() });
    assert.equal(blocked.status, 403, blocked.text);
    assert.equal(blocked.body.code, 'bootstrap_required');
    assert.match(blocked.body.message, /change the first-run password/);
    assert.doesNotMatch(blocked.body.message, /EULA/, 'the EULA stays accepted');
    const pw = await http(`${url}/auth/v2/password?locale=en-US`, {
      method: 'PUT',
      headers: cookie(),
      json: { currentPassword: out.password, newPassword: 'another-own-password' },
    });
    assert.equal(pw.status, 200, pw.text);
    jwt = pw.body.jwtAccess as string;
    assert.equal((await http(`${url}/auth/v3/api-clients`, { headers: cookie() })).status, 200);
  } finally {
    await edge.stop();
  }
});

test('`millwright uns admin reset-password` prints a new password for the administrator; the old one stops working', async () => {
  const dir = dirs.make();
  const reset = await runCli(['uns', 'admin', 'reset-password', '--data-dir', dir]);
  assert.equal(reset.code, 0, reset.stderr);
  const out = JSON.parse(reset.stdout) as { username: string; password: string };
  assert.equal(out.username, 'admin');
  const uns = await startCli([
    'uns',
    '--port',
    '0',
    '--mqtt-port',
    '0',
    '--mqtts-port',
    '0',
    '--host',
    '127.0.0.1',
    '--data-dir',
    dir,
  ]);
  try {
    const url = uns.ready.services.uns!.url;
    assert.equal(uns.ready.services.uns!.firstRun, undefined, 'the reset admin is the admin: none created');
    assert.ok(await unsToken({ url }, 'admin', out.password));
    const second = await runCli(['uns', 'admin', 'reset-password', '--data-dir', dir]);
    assert.equal(second.code, 0, second.stderr);
    await assert.rejects(unsToken({ url }, 'admin', out.password));
    assert.ok(await unsToken({ url }, 'admin', (JSON.parse(second.stdout) as { password: string }).password));
  } finally {
    await uns.stop();
  }
});
