/**
 * Issue 35, item 1: the CLI finds what `up` started. `up` runs with the default ports 4222 (NATS),
 * 1883 (MQTT) and 8443 (HTTPS) taken by other listeners (the machine's own nats-server and
 * Mosquitto when they run; this test holds whichever of the three is free, and releases only
 * those), so it moves the DataHub, the broker and the edge to free ports; then `edge device
 * create`, `edge watch`, `edge write` and `uns watch` run with no address flag and no `--ca`, and
 * each reaches the service `up` started (its data directory's ready record). The other listeners
 * of `up` get port 0 (a test binds no default port it does not need to be taken).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, runCli, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/util.js';

const TAKEN = [4222, 1883, 8443];
const dirs = tempDirs('mw-discovery-');
const held: Server[] = [];
let home: string;
let env: NodeJS.ProcessEnv;
let up: CliProcess;
let creds: Record<string, string>;

/**
 * A NATS server that is not an edge's DataHub, as the machine's nats-server is: INFO, then PONG
 * to every PING (enough for the `nats` client to connect).
 */
function fakeNats(socket: Socket): void {
  socket.on('error', () => undefined);
  socket.write(
    `INFO ${JSON.stringify({ server_id: 'NOTANEDGE', server_name: 'some-nats-server', version: '2.10.0', proto: 1, max_payload: 1048576, headers: true })}\r\n`,
  );
  socket.on('data', (d) => {
    if (d.toString().includes('PING')) socket.write('PONG\r\n');
  });
}

/** Listens on `port` of every address unless something already does; answers the server or null. */
function hold(port: number): Promise<Server | null> {
  return new Promise((resolve) => {
    const server = createServer(port === 4222 ? fakeNats : (socket) => socket.destroy());
    server.once('error', () => resolve(null));
    server.listen({ port, host: '::', exclusive: true }, () => resolve(server));
  });
}

before(async () => {
  for (const port of TAKEN) {
    const server = await hold(port);
    if (server) held.push(server);
  }
  home = dirs.make();
  env = cleanEnv({ HOME: home });
  up = await startCli(
    [
      'up',
      '--host',
      '127.0.0.1',
      '--uns-port',
      '0',
      '--uns-mqtts-port',
      '0',
      '--manager-port',
      '0',
      '--manager-admin-port',
      '0',
    ],
    { env, timeoutMs: 120_000 },
  );
});

after(async () => {
  await up?.stop();
  for (const server of held) await new Promise((r) => server.close(r));
  dirs.removeAll();
});

async function ok(args: string[], extra: Record<string, string> = {}): Promise<string> {
  const r = await runCli(args, { ...env, ...extra }, 60_000);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test('`up` moved the taken ports and wrote its addresses in the data directory (no password in it)', () => {
  const edge = up.ready.services.edge!;
  const uns = up.ready.services.uns!;
  assert.notEqual(edge.ports.port, 8443);
  assert.notEqual(edge.ports['datahub-port'], 4222);
  assert.notEqual(uns.ports['mqtt-port'], 1883);
  const record = join(home, '.millwright', 'edge', 'ready.json');
  assert.ok(existsSync(record), record);
  const text = readFileSync(record, 'utf8');
  assert.match(text, new RegExp(edge.natsUrl!.replace(/[.]/g, '\\.')));
  assert.doesNotMatch(text, /password/i);
});

test('`edge device create`, `edge watch`, `edge write`, `uns watch`: no address flag, each reaches the service `up` started', async () => {
  const client = JSON.parse(await ok(['edge', 'api-client', 'create', '--name', 'cli'])) as {
    client_id: string;
    client_secret: string;
  };
  creds = {
    MILLWRIGHT_EDGE_CLIENT_ID: client.client_id,
    MILLWRIGHT_EDGE_CLIENT_SECRET: client.client_secret,
  };
  // HTTPS to the moved edge, its certificate trusted from the data directory (no --ca, no --insecure).
  await ok(['edge', 'device', 'create', '--name', 'gen1', '--driver', 'Generator'], creds);
  await ok(
    [
      'edge',
      'tag',
      'create',
      '--device',
      'gen1',
      '--register',
      'M',
      '--name',
      'setpoint',
      '--type',
      'float64',
      '--interval',
      '100',
      '--property',
      'address=0',
    ],
    creds,
  );

  // The DataHub `up` moved, not the machine's nats-server on 4222; each read once (item 7: the
  // default subject is the raw one, not the raw and the value subjects both).
  const watched = await ok(['edge', 'watch', '--json', '--count', '4']);
  const subjects = watched
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { subject: string }).subject);
  assert.deepEqual(subjects, Array(4).fill('devicehub.raw.gen1.setpoint'));

  const wrote = await runCli(['edge', 'write', 'gen1', 'setpoint', '42'], env, 60_000);
  assert.equal(wrote.code, 0, wrote.stderr);
  assert.equal((JSON.parse(wrote.stdout) as { success: boolean }).success, true, wrote.stdout);

  // The UNS `up` started (its feed publishes the tag), not Mosquitto on 1883. Times in ISO 8601
  // as the API prints them (item 9), not epoch milliseconds.
  const account = await ok([
    'uns',
    'account',
    'create',
    '--username',
    'watcher',
    '--password',
    'watcher-pass',
    '--rule',
    '#:Sub',
  ]);
  assert.match(
    (JSON.parse(account) as { createdAt: unknown }).createdAt as string,
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
  );
  const unsEnv = { MILLWRIGHT_UNS_USERNAME: 'watcher', MILLWRIGHT_UNS_PASSWORD: 'watcher-pass' };
  const seen = await eventually(
    async () => {
      const r = await runCli(['uns', 'watch', '--json', '--count', '1'], { ...env, ...unsEnv }, 30_000);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout.trim().split('\n')[0]!) as { topic: string };
    },
    60_000,
    'a UNS message of the feed',
  );
  assert.match(seen.topic, /gen1\/setpoint$/);
});

test('an explicit address still wins, and a NATS server that is not the edge is named as such', async () => {
  // No ready record (another home): the default nats://localhost:4222 is a NATS server, not the edge.
  const stranger = await runCli(['edge', 'watch', '--count', '1'], cleanEnv({ HOME: dirs.make() }), 60_000);
  assert.equal(stranger.code, 2, stranger.stderr);
  assert.match(stranger.stderr, /localhost:4222 is a NATS server but not a Millwright edge's DataHub/);
  assert.match(stranger.stderr, /--nats-url/);
  assert.doesNotMatch(stranger.stderr, /\n\s+at /, 'no stack trace');

  // The ready record's DataHub, given explicitly to a wrong port: the flag wins (and fails).
  const other = await runCli(
    ['edge', 'watch', '--count', '1', '--nats-url', 'nats://127.0.0.1:1'],
    env,
    60_000,
  );
  assert.notEqual(other.code, 0);
  assert.match(other.stderr, /127\.0\.0\.1:1/);
  assert.doesNotMatch(other.stderr, /\n\s+at /, 'no stack trace');
});

test('item 7: the banner ends with the first-run credentials', () => {
  const before = up.output().split('\n');
  const at = before.findIndex((l) => l.startsWith('millwright-ready '));
  const banner = before.slice(0, at).filter((l) => l.startsWith('  ') || l.startsWith('Millwright'));
  const last = banner.slice(-4).join('\n');
  assert.match(last, /first-run login: user "admin", password "/);
  assert.match(last, /UNS administrator: user "admin", password "/);
  const firstCredential = banner.findIndex((l) => /password "/.test(l));
  assert.ok(
    banner.slice(firstCredential).every((l) => /password|shown once|POST \/auth|credentials/i.test(l)),
    `nothing but credentials after the first one:\n${banner.slice(firstCredential).join('\n')}`,
  );
});

test('item 4: `edge driver list` marks the drivers this build acquires; a tag of another says why it stays Unknown', async () => {
  const table = await ok(['edge', 'driver', 'list'], creds);
  assert.match(table, /^Generator\s+\S.*\s+yes$/m);
  assert.match(table, /^FINS Ethernet\s+FINS\s+no \(configuration only\)$/m);
  const acquiring = JSON.parse(await ok(['edge', 'driver', 'list', '--acquiring', '--json'], creds)) as {
    Name: string;
  }[];
  assert.ok(acquiring.some((d) => d.Name === 'Generator'));
  assert.ok(!acquiring.some((d) => d.Name === 'FINS Ethernet'));

  await ok(
    [
      'edge',
      'device',
      'create',
      '--name',
      'plc9',
      '--driver',
      'FINS Ethernet',
      '--property',
      'host=127.0.0.1',
    ],
    creds,
  );
  await ok(
    [
      'edge',
      'tag',
      'create',
      '--device',
      'plc9',
      '--register',
      'DM',
      '--name',
      'w0',
      '--type',
      'uint16',
      '--property',
      'address=0',
    ],
    creds,
  );
  const status = await eventually(
    async () => {
      const tags = JSON.parse(await ok(['edge', 'tag', 'list', '--device', 'plc9', '--json'], creds)) as {
        Status?: { State: string; Reason: string };
      }[];
      return tags[0]?.Status?.Reason ? tags[0].Status : undefined;
    },
    30_000,
    'a reason on the FINS tag',
  );
  assert.equal(status.State, 'Unknown');
  assert.match(status.Reason, /driver "FINS Ethernet" does not acquire in this build/);
  assert.match(status.Reason, /Generator/);
  // Said once in the log, not at every poll.
  const logs = await ok(['edge', 'tag', 'list', '--device', 'plc9'], creds);
  assert.match(logs, /w0/);
});

test('item 3: usage mistakes are one line naming the fix, without a stack trace', async () => {
  const property = await runCli(
    ['edge', 'device', 'create', '--name', 'x', '--driver', 'Generator', '--property', 'seed'],
    { ...env, ...creds },
    60_000,
  );
  assert.equal(property.code, 2, property.stderr);
  assert.match(property.stderr, /--property takes NAME=VALUE/);
  const rule = await runCli(
    ['uns', 'account', 'create', '--username', 'u1', '--password', 'password-1', '--rule', 'plant/#:Write'],
    env,
    60_000,
  );
  assert.equal(rule.code, 2, rule.stderr);
  assert.match(rule.stderr, /did you mean "plant\/#:Pub"/);
  const typo = await runCli(['edge', 'devices', 'list'], env, 60_000);
  assert.equal(typo.code, 2, typo.stderr);
  assert.match(typo.stderr, /did you mean "edge device"/i);
  assert.ok(typo.stderr.split('\n').length < 6, typo.stderr);
  await ok([
    'uns',
    'account',
    'create',
    '--username',
    'narrow',
    '--password',
    'narrow-pass',
    '--rule',
    'other/#:Sub',
  ]);
  const refused = await runCli(
    ['uns', 'watch', 'plant/#', '--count', '1'],
    { ...env, MILLWRIGHT_UNS_USERNAME: 'narrow', MILLWRIGHT_UNS_PASSWORD: 'narrow-pass' },
    60_000,
  );
  assert.equal(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, /refused the subscription to "plant\/#"/);
  // A self-signed certificate names --ca, --insecure and the variable.
  const tls = await runCli(
    ['edge', 'device', 'list', '--url', up.ready.services.edge!.url],
    { ...env, ...creds, MILLWRIGHT_EDGE_DATA_DIR: dirs.make() },
    60_000,
  );
  assert.equal(tls.code, 1, tls.stderr);
  assert.match(tls.stderr, /--ca .*MILLWRIGHT_EDGE_CA.*--insecure/);
  for (const r of [property, rule, typo, refused, tls]) assert.doesNotMatch(r.stderr, /\n\s+at /, r.stderr);
});

test('item 7: a second `up` on the same data, OPC UA on: no ECONNREFUSED, no node-opcua warning, no warning a user cannot act on', async () => {
  await up.stop();
  up = await startCli(
    [
      'up',
      '--host',
      '127.0.0.1',
      '--uns-port',
      '0',
      '--uns-mqtts-port',
      '0',
      '--manager-port',
      '0',
      '--manager-admin-port',
      '0',
      // The OPC UA server on (a free port): node-opcua printed NODE-OPCUA-W27 on Node 20 after
      // the ready line (kernel/node-opcua.ts).
      '--opcua-enabled',
      'true',
      '--opcua-port',
      '0',
      '--opcua-host',
      '127.0.0.1',
      '--log-format',
      'pretty',
    ],
    { env, timeoutMs: 120_000 },
  );
  // Everything the start does after the ready line: the OPC UA server listens, the UNS feed
  // (which connected before the UNS listened, with ECONNREFUSED warnings) is connected.
  await eventually(
    () =>
      /opcua server listening/.test(up.output()) && /integration state .*state=Connected/.test(up.output()),
    90_000,
    'the OPC UA server listening and the UNS feed connected',
  );
  const out = up.output();
  assert.doesNotMatch(out, /ECONNREFUSED/);
  assert.doesNotMatch(out, /NODE-OPCUA|security-revert/);
  // The one warning left is one a user can act on: the FINS device made above, said once (item 4).
  const warnings = out.split('\n').filter((l) => /^\S+ (WARN|ERROR)/.test(l));
  assert.equal(warnings.length, 1, out);
  assert.match(
    warnings[0]!,
    /WARN {2}edge\.acquisition: driver "FINS Ethernet" does not acquire in this build/,
  );
});
