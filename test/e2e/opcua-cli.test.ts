/**
 * `millwright edge` with its OPC UA server: the ready line and the banner name the endpoint, which
 * a node-opcua client reaches; a taken `--opcua-port` stops the start naming the option before the
 * first-run password is made (a later start still shows it).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer } from 'node:net';
import { OPCUAClient } from 'node-opcua';
import { cleanEnv, runCli, startCli, tempDirs } from '../helpers/cli.js';
import { eventually } from '../helpers/util.js';

const dirs = tempDirs('mw-opcua-cli-');
after(() => dirs.removeAll());
const env = cleanEnv({ MILLWRIGHT_EDGE_OPCUA_ENABLED: 'true' });
const base = (dir: string) => [
  'edge',
  '--port',
  '0',
  '--datahub-port',
  '0',
  '--host',
  '127.0.0.1',
  '--opcua-host',
  '127.0.0.1',
  '--data-dir',
  dir,
];

test('a taken --opcua-port stops the edge naming the option, before the first-run password; a free one serves', async () => {
  const dir = dirs.make();
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const taken = (blocker.address() as { port: number }).port;
  try {
    const res = await runCli([...base(dir), '--opcua-port', String(taken)], env);
    assert.equal(res.code, 2, res.stderr);
    assert.match(
      res.stderr,
      new RegExp(
        `port ${taken} is already in use; choose another with --opcua-port or MILLWRIGHT_EDGE_OPCUA_PORT`,
      ),
    );
    assert.doesNotMatch(res.stdout, /first-run login/);
  } finally {
    blocker.close();
  }

  const svc = await startCli([...base(dir), '--opcua-port', '0'], { env, timeoutMs: 90_000 });
  try {
    const edge = svc.ready.services.edge!;
    const port = edge.ports['opcua-port']!;
    assert.ok(port > 0);
    assert.equal(edge.opcuaUrl, `opc.tcp://127.0.0.1:${port}`);
    assert.match(svc.output(), new RegExp(`OPC UA server  opc\\.tcp://127\\.0\\.0\\.1:${port}`));
    // The failed start made no admin: this one shows the first-run password.
    assert.match(svc.output(), /first-run login: user "admin", password "[^"]+"/);
    // The OPC UA server starts in its worker thread after the ready line (state `starting`).
    // A client that connects before the server binds (and waits for an answer) is closed at once
    // and does not hold up the start (it used to keep the reserved port from being released).
    const early = connect(port, '127.0.0.1');
    early.on('error', () => undefined);
    // Until then the port is only reserved (a connection is closed at once): wait for the log line.
    await eventually(() => /opcua server listening/.test(svc.output()), 60_000, 'the OPC UA server listens');
    early.destroy();
    const client = OPCUAClient.create({ endpointMustExist: false, connectionStrategy: { maxRetry: 0 } });
    await client.connect(`opc.tcp://127.0.0.1:${port}`);
    const endpoints = await client.getEndpoints();
    await client.disconnect();
    const policies = new Set(endpoints.map((e) => (e.securityPolicyUri ?? '').split('#')[1]));
    assert.deepEqual([...policies].sort(), [
      'Aes128_Sha256_RsaOaep',
      'Aes256_Sha256_RsaPss',
      'Basic256Sha256',
      'None',
    ]);
    const tokens = new Set(endpoints.flatMap((e) => (e.userIdentityTokens ?? []).map((t) => t.tokenType)));
    assert.ok(!tokens.has(0), 'no anonymous token policy while anonymous is off');
  } finally {
    assert.equal(await svc.stop(), 0);
  }
});
