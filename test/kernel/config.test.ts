/** Configuration: flags over environment over file over defaults; bad values name the key. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, envName, loadConfig, type OptionSpec } from '../../src/kernel/config.js';

const specs: OptionSpec[] = [
  { name: 'port', type: 'int', min: 0, max: 65535, default: 8443, description: '' },
  { name: 'http', type: 'bool', default: false, description: '' },
  { name: 'log-level', type: 'enum', values: ['info', 'warn'], default: 'info', description: '' },
  { name: 'database-url', type: 'url', secret: true, description: '' },
  { name: 'data-dir', type: 'path', default: '/var/lib/x', description: '' },
];
const dir = mkdtempSync(join(tmpdir(), 'mw-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('environment names', () => {
  assert.equal(envName('edge', 'data-dir'), 'MILLWRIGHT_EDGE_DATA_DIR');
  assert.equal(envName('uns', 'mqtt-port'), 'MILLWRIGHT_UNS_MQTT_PORT');
});

test('precedence: flag, environment, file, default; and where each came from', () => {
  const file = join(dir, 'c.json');
  writeFileSync(file, JSON.stringify({ port: 1000, http: true, 'log-level': 'warn' }));
  const sources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {};
  const v = loadConfig(
    'edge',
    specs,
    { port: '3000', config: file },
    { MILLWRIGHT_EDGE_PORT: '2000', MILLWRIGHT_EDGE_HTTP: 'no' },
    sources,
  );
  assert.equal(v.port, 3000);
  assert.equal(v.http, false);
  assert.equal(v['log-level'], 'warn');
  assert.equal(v['data-dir'], '/var/lib/x');
  assert.deepEqual(sources, {
    port: 'flag',
    http: 'env',
    'log-level': 'file',
    'database-url': 'default',
    'data-dir': 'default',
  });
  const fromEnv = loadConfig(
    'edge',
    specs,
    {},
    { MILLWRIGHT_EDGE_PORT: '2000', MILLWRIGHT_EDGE_CONFIG: file },
  );
  assert.equal(fromEnv.port, 2000);
  assert.equal(fromEnv.http, true);
});

test('bad values stop with a message naming the key and its source; secrets are not echoed', () => {
  const cases: [Record<string, unknown>, NodeJS.ProcessEnv, RegExp][] = [
    [
      { port: '70000' },
      {},
      /invalid value for "port" \(flag --port\): expected an integer from 0 to 65535, got "70000"/,
    ],
    [{}, { MILLWRIGHT_EDGE_PORT: '1.5' }, /"port" \(environment variable MILLWRIGHT_EDGE_PORT\)/],
    [{}, { MILLWRIGHT_EDGE_HTTP: 'maybe' }, /"http" .* expected true or false/],
    [{ 'log-level': 'loud' }, {}, /"log-level" .* expected one of info, warn/],
    [{ 'database-url': 'not a url with password' }, {}, /"database-url" .* expected a URL, got \(hidden\)/],
  ];
  for (const [flags, env, message] of cases) {
    assert.throws(
      () => loadConfig('edge', specs, flags, env),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, message);
        assert.doesNotMatch(err.message, /password/);
        return true;
      },
    );
  }
});

test('config file errors: unreadable, not JSON, unknown key', () => {
  assert.throws(
    () => loadConfig('edge', specs, { config: join(dir, 'missing.json') }, {}),
    /cannot read config file/,
  );
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{ port: ');
  assert.throws(() => loadConfig('edge', specs, { config: bad }, {}), /is not valid/);
  const unknown = join(dir, 'unknown.json');
  writeFileSync(unknown, JSON.stringify({ prot: 1 }));
  assert.throws(
    () => loadConfig('edge', specs, { config: unknown }, {}),
    /unknown key "prot" .* known keys: data-dir, database-url, http, log-level, port/,
  );
});

test('resolved options become a camelCase config object; configWith starts from the defaults', async () => {
  const { toConfigObject, configWith } = await import('../../src/kernel/config.js');
  assert.deepEqual(toConfigObject({ 'data-dir': '/d', port: 1, 'log-retention-days': 7 }), {
    dataDir: '/d',
    port: 1,
    logRetentionDays: 7,
  });
  assert.deepEqual(configWith<{ port: number; http: boolean; logLevel: string }>(specs, { port: 1 }), {
    port: 1,
    http: false,
    logLevel: 'info',
    databaseUrl: undefined,
    dataDir: '/var/lib/x',
  });
});
