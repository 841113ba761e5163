/** `millwright edge access-key create|list|revoke` next to a running edge, as an operator uses them. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, ErrorCode, StringCodec } from 'nats';
import { startTestEdge, type TestEdge } from '../helpers/edge.js';
import { runCli } from '../helpers/cli.js';
import { join } from 'node:path';

const cli = (args: string[]) => runCli(args);

let t: TestEdge;
before(async () => {
  t = await startTestEdge({ datahubTrustLocal: false });
});
after(() => t.stop());

test('a key made with the CLI works at once on the running edge; revoking it with the CLI cuts its connection', async () => {
  const dir = t.dataDir;
  const created = await cli([
    'edge',
    'access-key',
    'create',
    '--data-dir',
    dir,
    '--name',
    'historian',
    '--subscribe',
    'devicehub.>, _INBOX.>',
  ]);
  assert.equal(created.code, 0, created.stderr);
  const key = JSON.parse(created.stdout);
  assert.match(key.key, /^mwk_/);
  assert.deepEqual(key.subscribe, ['devicehub.>', '_INBOX.>']);
  assert.equal(key.publish, null);

  const listed = await cli(['edge', 'access-key', 'list', '--data-dir', dir]);
  assert.equal(listed.code, 0, listed.stderr);
  const list = JSON.parse(listed.stdout);
  assert.deepEqual(
    list.map((k: { name: string }) => k.name),
    ['historian'],
  );
  assert.ok(!listed.stdout.includes(key.key), 'the key itself is never listed');

  const nc = await connect({
    servers: t.edge.datahub.gateway!.url,
    user: 'admin',
    pass: key.key,
    tls: { caFile: join(dir, 'tls', 'server.crt') },
    reconnect: false,
  });
  const sc = StringCodec();
  const got = new Promise<string>((resolve) =>
    nc.subscribe('devicehub.raw.>', { callback: (_e, m) => resolve(sc.decode(m.data)) }),
  );
  await nc.flush();
  t.edge.datahub.hub.publish('devicehub.raw.G.S', '1.5');
  assert.equal(await got, '1.5');

  const revoked = await cli(['edge', 'access-key', 'revoke', '--data-dir', dir, '--id', key.id]);
  assert.equal(revoked.code, 0, revoked.stderr);
  // The running edge notices within its refresh interval (5 s) and closes the connection.
  const err = (await nc.closed()) as (Error & { code?: string }) | undefined;
  assert.equal(err?.code, ErrorCode.AuthorizationViolation);

  const bad = await cli([
    'edge',
    'access-key',
    'create',
    '--data-dir',
    dir,
    '--name',
    'x',
    '--publish',
    'a..b',
  ]);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /"a\.\.b" is not a valid subject pattern/);
  const missing = await cli(['edge', 'access-key', 'revoke', '--data-dir', dir, '--id', 'nope']);
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /access key "nope" not found/);
});
