/**
 * Issue 11: live values and devices without writing code. `millwright edge device|tag` through the
 * typed client against a running edge, `millwright edge watch` on a Generator tag, and
 * `GetTagStatus` answering the last value and its timestamp.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanEnv, runCli, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';

const dirs = tempDirs('mw-watch-');
let edge: CliProcess;
let dir: string;
let conn: string[];
let client: { client_id: string; client_secret: string };

before(async () => {
  dir = dirs.make();
  edge = await startCli([
    'edge',
    '--port',
    '0',
    '--datahub-port',
    '0',
    '--host',
    '127.0.0.1',
    '--datahub-host',
    '127.0.0.1',
    '--data-dir',
    dir,
  ]);
  const made = await runCli(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'cli']);
  assert.equal(made.code, 0, made.stderr);
  client = JSON.parse(made.stdout);
  conn = [
    '--url',
    edge.ready.services.edge!.url,
    '--client-id',
    client.client_id,
    '--client-secret',
    client.client_secret,
    '--ca',
    `${dir}/tls/server.crt`,
  ];
});
after(async () => {
  await edge.stop();
  dirs.removeAll();
});

async function ok(args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCli(args, env);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

test('`edge device` and `edge tag` create, list and delete through a running edge; `tag list` shows the last value', async () => {
  const dev = JSON.parse(
    await ok(['edge', 'device', 'create', '--name', 'gen1', '--driver', 'Generator', '--json', ...conn]),
  );
  assert.equal(dev.Name, 'gen1');
  assert.equal(dev.DriverName, 'Generator');
  // The tag names its device by name (DeviceID takes a name, as DriverID does).
  const table = await ok([
    'edge',
    'tag',
    'create',
    '--device',
    'gen1',
    '--register',
    'R',
    '--name',
    'ramp',
    '--type',
    'float64',
    '--interval',
    '100',
    '--property',
    'address=0',
    ...conn,
  ]);
  assert.match(table, /ramp\s+R\s+float64\s+devicehub\.raw\.gen1\.ramp/);
  const list = await ok(['edge', 'device', 'list', ...conn]);
  assert.match(list, /gen1\s+Generator/);

  // Credentials from the environment, as documented.
  const env = cleanEnv({
    MILLWRIGHT_EDGE_URL: edge.ready.services.edge!.url,
    MILLWRIGHT_EDGE_CLIENT_ID: client.client_id,
    MILLWRIGHT_EDGE_CLIENT_SECRET: client.client_secret,
  });
  let tags: any[] = [];
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    tags = JSON.parse(
      await ok(['edge', 'tag', 'list', '--device', 'gen1', '--json', '--ca', `${dir}/tls/server.crt`], env),
    );
    if (tags[0]?.Status?.Value !== null && tags[0]?.Status?.Value !== undefined) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(tags.length, 1);
  const s = tags[0].Status;
  assert.equal(s.State, 'OK');
  assert.equal(typeof s.Value, 'number');
  assert.ok(
    Date.parse(s.Timestamp) <= Date.now() && Date.parse(s.Timestamp) > Date.now() - 60_000,
    s.Timestamp,
  );

  const missing = await runCli([
    'edge',
    'device',
    'list',
    '--url',
    edge.ready.services.edge!.url,
    '--insecure',
  ]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--client-id and --client-secret/);

  assert.match(await ok(['edge', 'tag', 'delete', '--id', tags[0].ID, ...conn]), /deleted 1 tag/);
  assert.match(await ok(['edge', 'device', 'delete', '--device', 'gen1', ...conn]), /deleted 1 device/);
  assert.doesNotMatch(await ok(['edge', 'device', 'list', ...conn]), /gen1/);
});

test('`edge watch` prints a Generator tag as JSON lines, and as table rows', async () => {
  await ok(['edge', 'device', 'create', '--name', 'gen2', '--driver', 'Generator', ...conn]);
  await ok([
    'edge',
    'tag',
    'create',
    '--device',
    'gen2',
    '--register',
    'S',
    '--name',
    'sine',
    '--type',
    'float64',
    '--interval',
    '100',
    '--property',
    'address=0',
    ...conn,
  ]);
  const nats = ['--url', edge.ready.services.edge!.url, '--nats-url', edge.ready.services.edge!.natsUrl!];
  const json = await ok(['edge', 'watch', 'devicehub.raw.gen2.>', '--json', '--count', '3', ...nats]);
  const lines = json
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(lines.length, 3);
  for (const l of lines) {
    assert.equal(l.subject, 'devicehub.raw.gen2.sine');
    assert.equal(l.tagName, 'sine');
    assert.equal(l.success, true);
    assert.equal(typeof l.value, 'number');
  }
  // The default subject (devicehub.>) as a table: one row per message when not on a terminal.
  const rows = await ok(['edge', 'watch', '--count', '4', ...nats]);
  assert.match(rows, /^gen2\/sine\s+-?\d/m);
  assert.match(rows, /\d\d:\d\d:\d\d\.\d{3}\s+OK/);
});
