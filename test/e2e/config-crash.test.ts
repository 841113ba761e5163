/**
 * Configuration templates against `millwright edge` as a process: the CLI (`edge config export |
 * apply | snapshot`) through the typed client, and the crash test: the edge killed with SIGKILL in
 * the middle of a large apply (an analytics workspace and 60,000 tags); after a restart the
 * configuration is the old one or the new one, never a mixture (analytics included), and the
 * snapshot taken before the apply exists.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { EdgeClient, EdgeConfigClient } from '../../src/client/index.js';
import { cleanEnv, runCli, runCliJson, startCli, tempDirs, type CliProcess } from '../helpers/cli.js';

const dirs = tempDirs('mw-config-crash-');
const running: CliProcess[] = [];
after(async () => {
  for (const p of running) await p.stop();
  dirs.removeAll();
});

async function startEdge(dir: string): Promise<CliProcess & { url: string }> {
  const p = await startCli(
    [
      'edge',
      '--port',
      '0',
      '--datahub-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dir,
      '--log-level',
      'warn',
    ],
    {
      env: cleanEnv(),
    },
  );
  running.push(p);
  return Object.assign(p, { url: p.ready.services.edge!.url });
}

/** With `analytics`, an analytics workspace first (written in the transaction before the devices). */
function bigTemplate(devices: number, tagsPerDevice: number, analytics = false): string {
  return JSON.stringify({
    format: 'millwright.config-template',
    version: 1,
    sections: {
      ...(analytics
        ? {
            analytics: {
              workspaces: [
                {
                  version: 1,
                  workspace: { name: 'crash', description: '' },
                  groups: [],
                  processors: [
                    {
                      key: 'p1',
                      name: 'mean',
                      kind: 'window',
                      group: null,
                      enabled: true,
                      position: { x: 0, y: 0 },
                      parameters: {
                        inputs: [{ subject: 'devicehub.raw.big-0.tag-0' }],
                        statistic: 'mean',
                        windowCount: 10,
                      },
                    },
                  ],
                },
              ],
              variables: { crash: 1 },
            },
          }
        : {}),
      devicehub: {
        devices: Array.from({ length: devices }, (_, d) => ({
          Name: `big-${d}`,
          DriverID: 'Generator',
          Tags: Array.from({ length: tagsPerDevice }, (_, i) => ({
            TagName: `tag-${i}`,
            Name: 'S',
            ValueType: 'float64',
            IntervalMs: 60_000,
            Properties: { address: String(i % 60000) },
          })),
        })),
      },
    },
  });
}

test('CLI: export, apply with a progress line, snapshot list/capture/prune; SIGKILL mid-apply leaves old or new, never a mixture', async () => {
  const dir = dirs.make();
  const client = runCliJson(['edge', 'api-client', 'create', '--data-dir', dir, '--name', 'cli'], cleanEnv());
  let edge = await startEdge(dir);
  const env = cleanEnv({
    MILLWRIGHT_EDGE_URL: edge.url,
    MILLWRIGHT_EDGE_CLIENT_ID: client.client_id,
    MILLWRIGHT_EDGE_CLIENT_SECRET: client.client_secret,
  });
  const small = join(dir, 'small.json');
  writeFileSync(small, bigTemplate(2, 5));
  const applied = await runCli(['edge', 'config', 'apply', small, '--insecure'], env);
  assert.equal(applied.code, 0, applied.stderr);
  assert.equal(JSON.parse(applied.stdout).result.applied, true);
  assert.match(applied.stderr, /uploading .* MiB/);
  assert.match(applied.stderr, /done in/);
  const out = join(dir, 'export.json');
  const exported = await runCli(
    ['edge', 'config', 'export', '--insecure', '--encryption-key', 'cli-secret-key', '-o', out],
    env,
  );
  assert.equal(exported.code, 0, exported.stderr);
  const doc = JSON.parse(readFileSync(out, 'utf8'));
  assert.deepEqual(
    doc.sections.devicehub.devices.map((d: any) => d.Name),
    ['big-0', 'big-1'],
  );
  assert.ok(doc.sections.auth.apiClients[0].secret.$encrypted);
  const captured = await runCli(
    ['edge', 'config', 'snapshot', 'capture', '--insecure', '--reason', 'by cli'],
    env,
  );
  assert.equal(captured.code, 0, captured.stderr);
  const listed = JSON.parse((await runCli(['edge', 'config', 'snapshot', 'list', '--insecure'], env)).stdout);
  assert.equal(listed[0].reason, 'by cli');
  const pruned = JSON.parse(
    (await runCli(['edge', 'config', 'snapshot', 'prune', '--insecure'], env)).stdout,
  );
  assert.equal(pruned.remaining, 1);

  // The crash: a large apply, killed while its transaction runs.
  const api = new EdgeClient({
    url: edge.url,
    credentials: { clientId: client.client_id, clientSecret: client.client_secret },
    insecure: true,
  });
  const config = new EdgeConfigClient(api);
  const before = (await config.snapshots()).length;
  let finished = false;
  const apply = config.apply(bigTemplate(40, 1500, true), { mode: 'use' }).then(
    () => (finished = true),
    () => undefined,
  );
  // The snapshot is committed just before the apply's transaction starts: watched from a reader
  // of the edge's SQLite file (WAL: readers see what is committed, never wait for the writer).
  const reader = new SQLite(join(dir, 'edge.db'), { readonly: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    assert.ok(Date.now() < deadline, 'the apply did not start');
    const row = reader.prepare('select count(*) as n from config_snapshot').get() as { n: number };
    if (row.n > before) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  reader.close();
  // Time is the test: the kill lands in the middle of the apply.
  await new Promise((r) => setTimeout(r, 400));
  process.kill(edge.pid, 'SIGKILL');
  await edge.exited;
  await apply;
  api.close();
  assert.equal(finished, false, 'the edge was killed before the apply finished');

  edge = await startEdge(dir);
  const again = new EdgeClient({
    url: edge.url,
    credentials: { clientId: client.client_id, clientSecret: client.client_secret },
    insecure: true,
  });
  const after = await new EdgeConfigClient(again).export();
  const devices = (after.sections as any).devicehub.devices as Array<{ Name: string; Tags: unknown[] }>;
  const old = devices.length === 2 && devices.every((d) => d.Tags.length === 5);
  const next = devices.length === 40 && devices.every((d) => d.Tags.length === 1500);
  assert.ok(
    old || next,
    `a mixture: ${devices.length} devices, tags ${devices.map((d) => d.Tags.length).join(',')}`,
  );
  // The analytics part of the same apply landed with the devices, or not at all.
  const analytics = (after.sections as any).analytics as { workspaces: any[]; variables: object };
  assert.deepEqual(
    [analytics.workspaces.map((w) => w.workspace.name), analytics.variables],
    next ? [['crash'], { crash: 1 }] : [[], {}],
    `devices ${next ? 'new' : 'old'}, analytics ${JSON.stringify(analytics)}`,
  );
  const snaps = await new EdgeConfigClient(again).snapshots();
  assert.ok(snaps.length > before, 'the snapshot captured before the apply exists');
  assert.match(snaps[0]!.reason, /before apply/);
  again.close();
});
