/** The `millwright` command as a user runs it: start, first-run credentials, admin commands, errors. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { http, basic } from '../helpers/edge.js';
import { UP_PORTS_FREE, cleanEnv, runCli, startCli, tempDirs } from '../helpers/cli.js';
import { parseReadyLine, type ReadyLine } from '../../src/kernel/ready.js';

const dirs = tempDirs('mw-cli-');
const tmp = () => dirs.make();
after(() => dirs.removeAll());
const cli = runCli;

/** Starts a long-running command and waits for its ready line; `url` is the edge's address. */
async function startService(args: string[], env: NodeJS.ProcessEnv = cleanEnv(UP_PORTS_FREE)) {
  // `up` starts three services (edge, UNS, manager) and enrols the edge; a loaded machine (tests
  // of other files at once) can take long to start even one.
  const p = await startCli(args, { env, timeoutMs: 120_000 });
  return {
    url: p.ready.services.edge!.url,
    ready: p.ready,
    output: p.output,
    stop: p.stop,
    pid: p.pid,
    exited: p.exited,
  };
}

// One edge data directory for three starts (each start of a service costs seconds of CPU): the
// first run, a restart, then a second service refused beside it and a start after a SIGKILL.
test('`millwright edge` prints its HTTPS address and a first-run password that logs in; SIGTERM stops it cleanly; a second service on a data directory in use stops at once naming it and its holder; a killed holder leaves no stale lock', async () => {
  const dir = tmp();
  const svc = await startService([
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
  assert.match(svc.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const m = /password "([^"]+)"/.exec(svc.output());
  assert.ok(m, `first-run password printed: ${svc.output()}`);
  const login = await http(`${svc.url}/auth/v2/login`, {
    json: { username: 'admin', password: m[1], providerId: LOCAL_PROVIDER_ID },
  });
  assert.equal(login.status, 200);

  // The CLI creates an API client while the edge runs; the running edge accepts it at once.
  const created = await cli(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'ci-bot']);
  assert.equal(created.code, 0, created.stderr);
  const client = JSON.parse(created.stdout);
  assert.match(client.client_id, /^[0-9a-f-]{36}$/);
  assert.match(client.client_secret, /^mws_/);
  const tok = await http(`${svc.url}/auth/v3/oauth/token`, {
    headers: { authorization: basic(client.client_id, client.client_secret) },
    form: { grant_type: 'client_credentials' },
  });
  assert.equal(tok.status, 200);
  const version = await http(`${svc.url}/devicehub/version`, {
    headers: { authorization: `Bearer ${tok.body.access_token}` },
  });
  assert.equal(version.status, 200);

  assert.equal(await svc.stop(), 0);
  // The second start keeps the admin (no new password) and the certificate.
  const args = ['edge', '--port', '0', '--datahub-port', '0', '--host', '127.0.0.1', '--data-dir', dir];
  const again = await startService(args);
  assert.doesNotMatch(again.output(), /password "/);

  // A second service on the data directory in use stops at once naming it and its holder.
  const second = await cli(args);
  assert.equal(second.code, 2, second.stderr);
  assert.match(
    second.stderr,
    new RegExp(`data directory ${dir} is in use by process ${again.pid} \\(millwright edge`),
  );
  // The offline admin commands still work beside the running service.
  assert.equal((await cli(['edge', 'api-client', 'list', '--data-dir', dir])).code, 0);
  // SIGKILL leaves the lock file behind; the next start takes it over.
  process.kill(again.pid, 'SIGKILL');
  await again.exited;
  const third = await startService(args);
  assert.match(third.url, /^https:\/\//);
  assert.equal(await third.stop(), 0);
});

test('`millwright edge api-client create` works on a fresh data directory, and list never shows secrets', async () => {
  const dir = tmp();
  const created = await cli([
    'edge',
    'api-client',
    'create',
    '--data-dir',
    dir,
    '--name',
    'first',
    '--role',
    'viewer',
  ]);
  assert.equal(created.code, 0, created.stderr);
  const c = JSON.parse(created.stdout);
  assert.equal(c.role, 'viewer');
  const listed = await cli(['edge', 'api-client', 'list', '--data-dir', dir]);
  assert.equal(listed.code, 0, listed.stderr);
  const list = JSON.parse(listed.stdout);
  assert.equal(list.length, 1);
  assert.equal(list[0].client_id, c.client_id);
  assert.ok(!listed.stdout.includes(c.client_secret));
  const env = { ...cleanEnv(), MILLWRIGHT_EDGE_DATA_DIR: dir };
  const viaEnv = await cli(['edge', 'api-token', 'create', '--name', 'legacy'], env);
  assert.equal(viaEnv.code, 0, viaEnv.stderr);
  assert.match(JSON.parse(viaEnv.stdout).token, /^mwt_/);
});

test('a bad option value stops the start with a message naming the key', async () => {
  const dir = tmp();
  const flag = await cli(['edge', '--port', 'eighty', '--data-dir', dir]);
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /invalid value for "port" \(flag --port\)/);
  const env = await cli(['edge', '--data-dir', dir], { ...cleanEnv(), MILLWRIGHT_EDGE_TOKEN_TTL: '5' });
  assert.equal(env.code, 2);
  assert.match(env.stderr, /"token-ttl" \(environment variable MILLWRIGHT_EDGE_TOKEN_TTL\)/);
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ 'data-dir': dir, prot: 1 }));
  const unknown = await cli(['edge', '--config', file]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown key "prot"/);
  const help = await cli(['edge', 'api-client', 'create', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--name <name>/);
});

test('a taken port stops `edge` naming the option', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    const dir = tmp();
    const res = await cli([
      'edge',
      '--port',
      String(port),
      '--datahub-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dir,
    ]);
    assert.equal(res.code, 2);
    assert.match(
      res.stderr,
      new RegExp(`port ${port} is already in use; choose another with --port or MILLWRIGHT_EDGE_PORT`),
    );
  } finally {
    blocker.close();
  }
});

// `up` taking a free port instead of a taken default is checked on the first start below (one
// `up` of three services less).
test('`up` takes a free port for a taken default (the first-run password still shown), remembers the free ports it took and takes them again at the next start', async () => {
  // Hold the documented ports (if another program does not already).
  const holders = await Promise.all(
    [8443, 4222].map(
      (port) =>
        new Promise<ReturnType<typeof createServer> | null>((r) => {
          const s = createServer();
          s.once('error', () => r(null));
          s.listen(port, '127.0.0.1', () => r(s));
        }),
    ),
  );
  try {
    const dir = tmp();
    const first = await startService([
      'up',
      '--host',
      '127.0.0.1',
      '--datahub-host',
      '127.0.0.1',
      '--data-dir',
      dir,
    ]);
    // 8443 held (here or by another program): the edge moves, and says so.
    assert.match(first.output(), /port 8443 is taken by another program; the edge service takes \d+ instead/);
    // The first-run password is shown although the first port was taken (nothing irreversible
    // happens before every port is bound).
    if (holders[0]) assert.match(first.output(), /first-run login: user "admin", password "[^"]+"/);
    assert.doesNotMatch(first.url, /:8443$/);
    const ready1 = readyLine(first.output());
    const ports1 = ready1.services.edge!.ports;
    assert.notEqual(ports1.port, 8443);
    assert.notEqual(ports1['datahub-port'], 4222);
    assert.match(
      first.output(),
      /datahub-port 4222 is taken by another program; the edge service takes \d+ instead \(kept for the next start\)/,
    );
    assert.equal(await first.stop(), 0);
    const second = await startService([
      'up',
      '--host',
      '127.0.0.1',
      '--datahub-host',
      '127.0.0.1',
      '--data-dir',
      dir,
    ]);
    const ports2 = readyLine(second.output()).services.edge!.ports;
    assert.equal(ports2.port, ports1.port);
    assert.equal(ports2['datahub-port'], ports1['datahub-port']);
    assert.equal(await second.stop(), 0);
  } finally {
    for (const h of holders) h?.close();
  }
});

function readyLine(output: string): ReadyLine {
  for (const line of output.split('\n')) {
    const parsed = parseReadyLine(line);
    if (parsed) return parsed;
  }
  throw new Error(`no ready line in: ${output}`);
}
