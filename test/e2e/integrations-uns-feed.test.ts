/**
 * `millwright up` feeds the unified namespace with no configuration step: the banner prints a
 * mosquitto_sub line; a value published on the edge's DataHub arrives at the UNS broker on
 * `<prefix>/<device>/<tag>` (seen by `mosquitto_sub`, the command as printed) and in the UNS topic
 * tree. The feed is made once: a second `up` on the same data keeps it. `MILLWRIGHT_EDGE_UNS_FEED=false`
 * makes none.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as natsConnect, JSONCodec } from 'nats';
import { UP_PORTS_FREE, cleanEnv, startCli } from '../helpers/cli.js';
import {
  ADMIN_PASSWORD,
  bootstrapAdmin,
  clientToken,
  graphql,
  http,
  type TestEdge,
} from '../helpers/edge.js';
import { eventually, skipUnless } from '../helpers/util.js';

const skip = skipUnless('mosquitto_sub');
const jc = JSONCodec();

async function up(dataDir: string, extra: string[] = [], env: Record<string, string> = {}) {
  const proc = await startCli(['up', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, ...extra], {
    env: cleanEnv({
      MILLWRIGHT_EDGE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      ...UP_PORTS_FREE,
      MILLWRIGHT_UNS_MQTTS_PORT: '0',
      MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
      MILLWRIGHT_UNS_LOG_LEVEL: 'warn',
      MILLWRIGHT_EDGE_LOG_LEVEL: 'warn',
      ...env,
    }),
    timeoutMs: 120_000,
  });
  return { proc, ready: proc.ready };
}

test(
  'millwright up: every tag in the UNS on <prefix>/<device>/<tag>, with no configuration step',
  { skip, timeout: 120_000 },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'mw-unsfeed-'));
    try {
      const first = await up(dataDir, ['--uns-feed-prefix', 'site1/edge1']);
      let sub: ReturnType<typeof spawn> | undefined;
      try {
        const out = first.proc.output();
        const watch = /watch it: (mosquitto_sub .*) {2}\(shown once\)/.exec(out);
        assert.ok(watch, out);
        assert.match(watch[1]!, /-t 'site1\/edge1\/#'/);
        // The printed command, as a newcomer pastes it.
        let received = '';
        // exec: the shell becomes mosquitto_sub, so that kill() stops it (an orphan would hold the pipes).
        sub = spawn('sh', ['-c', `exec ${watch[1]!}`], { stdio: ['ignore', 'pipe', 'pipe'] });
        sub.stdout!.on('data', (d) => (received += d));
        sub.stderr!.on('data', (d) => (received += d));
        // No event says that mosquitto_sub (another process) has subscribed.
        await new Promise((r) => setTimeout(r, 700));
        const nc = await natsConnect({
          servers: first.ready.services.edge!.natsUrl!.replace('localhost', '127.0.0.1'),
        });
        const publishOnce = async () => {
          nc.publish(
            'devicehub.raw.Press1.force',
            jc.encode({ deviceName: 'Press1', tagName: 'force', value: 12.5, success: true }),
          );
          await nc.flush();
        };
        await eventually(
          async () => {
            await publishOnce();
            return received.includes('site1/edge1/Press1/force');
          },
          30_000,
          `the value with mosquitto_sub (got: ${received})`,
        );
        assert.match(received, /site1\/edge1\/Press1\/force \{.*"value":12.5/);
        await nc.close();

        // The UNS topic tree has it.
        const unsUrl = first.ready.services.uns!.url.replace('localhost', '127.0.0.1');
        const pw = /UNS administrator: user "admin", password "([^"]+)"/.exec(out)![1]!;
        const tok = await http(`${unsUrl}/auth/realms/standalone/protocol/openid-connect/token`, {
          form: { grant_type: 'password', client_id: 'ide-ui', username: 'admin', password: pw },
        });
        assert.equal(tok.status, 200, tok.text);
        const tree = await http(`${unsUrl}/mqtt/gql`, {
          headers: { authorization: `Bearer ${tok.body.access_token}` },
          json: { query: '{ topics(parent: "site1/edge1/Press1") { items { name } } }' },
        });
        assert.match(tree.text, /force/, tree.text);
      } finally {
        sub?.kill();
        assert.equal(await first.proc.stop(), 0);
      }

      // Once: the second start keeps the instance (no new account, no password line).
      const second = await up(dataDir, ['--uns-feed-prefix', 'site1/edge1']);
      try {
        const out = second.proc.output();
        assert.match(
          out,
          /UNS feed {7}every tag on site1\/edge1\/<device>\/<tag> \(integration "uns-feed"; /,
        );
        assert.doesNotMatch(out, /watch it/);
        const url = second.ready.services.edge!.url.replace('localhost', '127.0.0.1');
        const t = {
          url,
          call: (p: string, o?: Parameters<typeof http>[1]) => http(`${url}${p}`, o),
        } as unknown as TestEdge;
        const { token } = await clientToken(t, await bootstrapAdmin(t));
        const list = await graphql(
          t,
          '/cc/v2',
          `Bearer ${token}`,
          '{ ListInstances { Total Items { Name InstanceState } } }',
        );
        assert.equal(list.body.data.ListInstances.Total, 1);
        assert.equal(list.body.data.ListInstances.Items[0].Name, 'uns-feed');
      } finally {
        assert.equal(await second.proc.stop(), 0);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

test('MILLWRIGHT_EDGE_UNS_FEED=false millwright up: no feed', { skip, timeout: 60_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mw-unsfeed-off-'));
  try {
    const { proc } = await up(dataDir, [], { MILLWRIGHT_EDGE_UNS_FEED: 'false' });
    try {
      assert.doesNotMatch(proc.output(), /UNS feed/);
    } finally {
      assert.equal(await proc.stop(), 0);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
