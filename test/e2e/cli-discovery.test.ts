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
  const creds = {
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

  // The UNS `up` started (its feed publishes the tag), not Mosquitto on 1883.
  await ok([
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
  assert.equal(stranger.code, 1, stranger.stderr);
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
