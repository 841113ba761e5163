/**
 * Issue 11, item 6: the README's "Your first device" walk-through, run as a newcomer runs it: its
 * sh blocks through bash against a real edge (with `millwright` the CLI of this clone and a
 * Modbus peer of this test in place of the plant's PLC), and its GraphQL example as written.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EdgeClient } from '../../src/client/index.js';
import { CLI_ARGS, cleanEnv, runCli, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';
import { ModbusPeer } from '../helpers/peers/modbus.js';

const run = promisify(execFile);
const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
const dirs = tempDirs('mw-readme-');
let edge: CliProcess;
let dir: string;
const peer = new ModbusPeer(1024);

/** The fenced blocks of one language in the README's section `title`. */
function blocks(title: string, lang: string): string[] {
  const start = README.indexOf(`## ${title}\n`);
  assert.ok(start >= 0, `README has a section "${title}"`);
  const end = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

before(async () => {
  await peer.start();
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
});
after(async () => {
  await edge.stop();
  await peer.stop();
  dirs.removeAll();
});

test("the README's first device walk-through runs as written: Generator, a tag, values, Modbus, a write", async () => {
  const script = blocks('Your first device', 'sh');
  assert.ok(script.length >= 4, 'the walk-through has its sh blocks');
  const millwright = `millwright() { ${[process.execPath, ...CLI_ARGS].map((a) => `'${a}'`).join(' ')} "$@"; }`;
  const { stdout, stderr } = await run(
    'bash',
    ['-c', ['set -euo pipefail', millwright, ...script].join('\n')],
    {
      env: cleanEnv({
        // The defaults of the README are those of `millwright up`; this edge runs on free ports.
        DATA: dir,
        MILLWRIGHT_EDGE_URL: edge.ready.services.edge!.url.replace('127.0.0.1', 'localhost'),
        MILLWRIGHT_EDGE_NATS_URL: edge.ready.services.edge!.natsUrl!,
        MODBUS_HOST: '127.0.0.1',
        MODBUS_PORT: String(peer.port),
      }),
      timeout: 120_000,
    },
  ).catch((err: { stdout: string; stderr: string }) => {
    throw new Error(`the walk-through failed:\n${err.stdout}\n${err.stderr}`);
  });
  // Three values of the sine as JSON lines.
  const values = stdout
    .split('\n')
    .filter((l) => l.includes('"subject":"devicehub.raw.gen1.sine"'))
    .map((l) => JSON.parse(l) as { value: number; success: boolean });
  assert.equal(values.length, 3, stdout + stderr);
  assert.ok(values.every((v) => v.success && typeof v.value === 'number'));
  // The tag list shows the tag with a state.
  assert.match(stdout, /sine\s+S\s+float64\s+(OK|Unknown)/);
  // The write reached the PLC.
  assert.match(stdout, /"success":true/);
  assert.equal(peer.holding[10], 42);
});

test("the README's GraphQL example (device properties { Key Value }, tag properties { Name Value }) runs as written", async () => {
  const [doc] = blocks('Your first device', 'graphql');
  assert.ok(doc);
  const made = await runCli(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'readme-gql']);
  const c = JSON.parse(made.stdout) as { client_id: string; client_secret: string };
  const client = new EdgeClient({
    url: edge.ready.services.edge!.url,
    credentials: { clientId: c.client_id, clientSecret: c.client_secret },
    insecure: true,
  });
  try {
    const data = await client.graphql('/devicehub/v2', doc);
    assert.ok(data.CreateDevice.ID);
    assert.deepEqual(
      data.CreateRegister.Topics.map((t: { Topic: string }) => t.Topic).filter((t: string) =>
        t.includes('raw'),
      ),
      ['devicehub.raw.gen2.sine'],
    );
  } finally {
    client.close();
  }
});
