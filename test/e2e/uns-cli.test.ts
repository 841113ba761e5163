/** `millwright uns`, its administration commands, and `millwright up` starting the UNS beside the edge. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { closed, connectMqtt, end, gql, unsToken } from '../helpers/uns.js';
import { UP_PORTS_FREE, cleanEnv, runCli, startCli, tempDirs } from '../helpers/cli.js';

const dirs = tempDirs('mw-uns-cli-');
const tmp = () => dirs.make();
after(() => dirs.removeAll());
const cli = runCli;

/** Starts a long-running command and waits for its ready line; `url` is the UNS's address. */
async function startService(args: string[], env: NodeJS.ProcessEnv = cleanEnv()) {
  const p = await startCli(args, { env, timeoutMs: args[0] === 'up' ? 120_000 : 60_000 });
  return { url: p.ready.services.uns!.url, ready: p.ready, output: p.output, stop: p.stop };
}

test('`millwright uns` starts from flags and MILLWRIGHT_UNS_*; users and accounts made by the CLI work at once on the running service', async () => {
  const dir = tmp();
  const svc = await startService(
    ['uns', '--host', '127.0.0.1', '--data-dir', dir, '--mqtts-port', '0'],
    cleanEnv({ MILLWRIGHT_UNS_PORT: '0', MILLWRIGHT_UNS_MQTT_PORT: '0', MILLWRIGHT_UNS_LOG_LEVEL: 'warn' }),
  );
  try {
    assert.match(svc.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const mqttUrl = /MQTT\s+(mqtt:\/\/\S+)\s+(mqtts:\/\/\S+)\s+(wss:\/\/\S+)/.exec(svc.output());
    assert.ok(mqttUrl, svc.output());
    const pw = /UNS administrator: user "admin", password "([^"]+)"/.exec(svc.output());
    assert.ok(pw, svc.output());
    const admin = await unsToken(svc, 'admin', pw[1]);
    assert.equal((await gql(svc, admin, '{ me { role } }')).me.role, 'admin');

    const created = await cli([
      'uns',
      'user',
      'create',
      '--data-dir',
      dir,
      '--username',
      'ops',
      '--password',
      'ops-password',
      '--role',
      'operator',
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).role, 'operator');
    const ops = await unsToken(svc, 'ops', 'ops-password');
    assert.equal((await gql(svc, ops, '{ me { username role } }')).me.role, 'operator');
    const listed = await cli(['uns', 'user', 'list', '--data-dir', dir]);
    assert.deepEqual(
      JSON.parse(listed.stdout).map((u: { username: string }) => u.username),
      ['admin', 'ops'],
    );

    const acct = await cli([
      'uns',
      'account',
      'create',
      '--data-dir',
      dir,
      '--username',
      'plc1',
      '--password',
      'plc1-password',
      '--rule',
      'plant/#:PubSub',
    ]);
    assert.equal(acct.code, 0, acct.stderr);
    const account = JSON.parse(acct.stdout);
    assert.deepEqual(
      account.rules.map((r: { path: string; perm: string }) => [r.path, r.perm]),
      [['plant/#', 'PubSub']],
    );
    const client = await connectMqtt(mqttUrl[1]!, { username: 'plc1', password: 'plc1-password' });
    const disabled = await cli(['uns', 'account', 'disable', '--data-dir', dir, '--id', account.id]);
    assert.equal(disabled.code, 0, disabled.stderr);
    // The running service notices the change within its 1 s refresh and closes the connection.
    await closed(client, 5000);
    await end(client);
    const bad = await cli([
      'uns',
      'account',
      'create',
      '--data-dir',
      dir,
      '--username',
      'x',
      '--password',
      'xxxxxxxxxx',
      '--rule',
      'a/#/b:Pub',
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /"#" must be a whole level/);
  } finally {
    assert.equal(await svc.stop(), 0);
  }
});

test('a taken MQTT port stops `uns` naming the option', async () => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    const res = await cli([
      'uns',
      '--port',
      '0',
      '--mqtt-port',
      String(port),
      '--mqtts-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      tmp(),
    ]);
    assert.equal(res.code, 2);
    assert.match(
      res.stderr,
      new RegExp(
        `port ${port} is already in use; choose another with --mqtt-port or MILLWRIGHT_UNS_MQTT_PORT`,
      ),
    );
  } finally {
    blocker.close();
  }
});

test('`millwright up` starts the UNS beside the edge and prints its addresses, taking free ports for taken defaults', async () => {
  // 1883 is Mosquitto's on this machine; take it here if it happens to be free.
  const taker = createServer();
  const took = await new Promise<boolean>((r) => {
    taker.once('error', () => r(false));
    taker.listen(1883, '127.0.0.1', () => r(true));
  });
  try {
    const svc = await startService(
      ['up', '--host', '127.0.0.1', '--port', '0', '--datahub-port', '0', '--data-dir', tmp()],
      // The MQTT port stays the default (the point of the test); no other default is bound.
      cleanEnv({
        ...Object.fromEntries(
          Object.entries(UP_PORTS_FREE).filter(([k]) => k !== 'MILLWRIGHT_UNS_MQTT_PORT'),
        ),
        MILLWRIGHT_UNS_LOG_LEVEL: 'warn',
      }),
    );
    try {
      const out = svc.output();
      assert.match(out, /edge service\s+https:\/\/127\.0\.0\.1:\d+/);
      assert.match(
        out,
        /mqtt-port 1883 is taken by another program; the unified namespace service takes \d+ instead/,
      );
      const mqttPort = svc.ready.services.uns!.ports['mqtt-port']!;
      assert.notEqual(mqttPort, 1883, out);
      assert.match(out, new RegExp(`MQTT\\s+mqtt://127\\.0\\.0\\.1:${mqttPort}`));
      assert.match(svc.ready.services.edge!.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const pw = /UNS administrator: user "admin", password "([^"]+)"/.exec(out)!;
      const token = await unsToken(svc, 'admin', pw[1]);
      assert.equal((await gql(svc, token, '{ broker { mqttPort } }')).broker.mqttPort, mqttPort);
    } finally {
      assert.equal(await svc.stop(), 0);
    }
  } finally {
    if (took) taker.close();
  }
});
