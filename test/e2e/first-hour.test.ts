/** Issue 11, "the first hour": recovering the first-run password, readable errors, the CLI's manners. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { http } from '../helpers/edge.js';
import { unsToken } from '../helpers/uns.js';
import { runCli, startCli, tempDirs } from '../helpers/cli.js';
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MILLWRIGHT_VERSION } from '../../src/kernel/version.js';
import { ERRORS } from '../../src/kernel/errors.js';

const run = promisify(execFile);
/** A loaded machine (tests of other files at once) can take long to start a service. */
const LOADED = { timeoutMs: 120_000 };

const dirs = tempDirs('mw-first-hour-');
after(() => dirs.removeAll());

const login = (url: string, password: string) =>
  http(`${url}/auth/v2/login`, { json: { username: 'admin', password, providerId: LOCAL_PROVIDER_ID } });

test('`millwright edge admin reset-password` prints a one-time password, and the bootstrap asks for a change again', async () => {
  const dir = dirs.make();
  const edge = await startCli(
    ['edge', '--port', '0', '--datahub-port', '0', '--host', '127.0.0.1', '--data-dir', dir],
    LOADED,
  );
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
    assert.equal(blocked.body.code, ERRORS.bootstrapRequired.code);
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
  const uns = await startCli(
    ['uns', '--port', '0', '--mqtt-port', '0', '--mqtts-port', '0', '--host', '127.0.0.1', '--data-dir', dir],
    LOADED,
  );
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

test('the CLI: usage errors exit 2, help texts say what each command is, `up` shows the UNS and manager options', async () => {
  // Each command loads the services (3-4 s of CPU). A bad option value (`edge --log-level loud`,
  // a ConfigError) exits 2 in test/e2e/cli.test.ts (`edge --port eighty`) and the log level's
  // choices are checked in test/kernel/config.test.ts; here the usage errors of Commander.
  for (const args of [
    ['up', '--no-such-option'],
    ['edge', 'api-client', 'create'],
  ]) {
    const r = await runCli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
  }
  assert.equal((await runCli(['--version'])).code, 0);
  const upHelp = await runCli(['up', '--help']);
  assert.equal(upHelp.code, 0);
  assert.doesNotMatch(upHelp.stdout, /for now the edge service/);
  assert.match(upHelp.stdout, /--uns-port <n>/);
  assert.match(upHelp.stdout, /--uns-mqtt-port <n>/);
  assert.match(upHelp.stdout, /--manager-port <n>/);
  // Issue 35, item 9: no empty default, a prefixed option names prefixed options, no help
  // text that sends the reader to itself.
  assert.doesNotMatch(upHelp.stdout, /\(default: \)/);
  assert.match(upHelp.stdout, /--uns-tls-key <value> +PEM private key of --uns-tls-cert /);
  assert.match(upHelp.stdout, /--manager-tls-key <value> +PEM private key of --manager-tls-cert /);
  const managerHelp = await runCli(['manager', '--help']);
  assert.doesNotMatch(managerHelp.stdout, /millwright manager --help/);
  const top = await runCli(['--help']);
  assert.doesNotMatch(top.stdout, /see `millwright edge --help`/);
  assert.doesNotMatch(top.stdout, /see `millwright manager --help`/);
  assert.match(top.stdout, /unified namespace/);
});

test('`npm run millwright` builds once: a second call neither rebuilds nor waits for tsc', async () => {
  const root = join(import.meta.dirname, '../..');
  const script = join(root, 'scripts/millwright.mjs');
  const first = await run(process.execPath, [script, '--version'], { cwd: root });
  assert.equal(first.stdout.trim(), MILLWRIGHT_VERSION);
  const builtAt = statSync(join(root, 'dist/.millwright-built')).mtimeMs;
  const second = await run(process.execPath, [script, '--version'], { cwd: root });
  assert.equal(second.stdout.trim(), MILLWRIGHT_VERSION);
  assert.doesNotMatch(second.stderr, /building/);
  assert.equal(statSync(join(root, 'dist/.millwright-built')).mtimeMs, builtAt, 'dist/ was not rebuilt');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.equal(pkg.scripts.premillwright, undefined, 'no build before every call');
});
