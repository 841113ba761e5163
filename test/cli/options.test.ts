/** Service flags: every boolean option can be switched on and off on the command line. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { addServiceOptions, resolveOptions } from '../../src/cli/options.js';
import { EDGE_OPTIONS } from '../../src/edge/option-specs.js';
import { ConfigError } from '../../src/kernel/config.js';

function parse(args: string[], env: NodeJS.ProcessEnv = {}) {
  const cmd = addServiceOptions(new Command('edge').exitOverride(), 'edge', EDGE_OPTIONS).action(
    () => undefined,
  );
  cmd.parse(args, { from: 'user' });
  const saved = process.env;
  process.env = env;
  try {
    return resolveOptions(cmd, 'edge', EDGE_OPTIONS);
  } finally {
    process.env = saved;
  }
}

test('a boolean option takes --x, --x=false, --x false, --x true and --no-x', () => {
  assert.equal(parse([])['datahub-trust-local'], true, 'the default');
  assert.equal(parse(['--no-datahub-trust-local'])['datahub-trust-local'], false);
  assert.equal(parse(['--datahub-trust-local=false'])['datahub-trust-local'], false);
  assert.equal(parse(['--datahub-trust-local', 'false'])['datahub-trust-local'], false);
  assert.equal(parse(['--datahub-trust-local', 'off', '--port', '1'])['datahub-trust-local'], false);
  assert.equal(parse(['--http'])['http'], true);
  assert.equal(parse(['--http=true'])['http'], true);
  assert.equal(parse(['--http', '--port', '9'])['http'], true);
  assert.equal(parse(['--http', '--port', '9'])['port'], 9);
  // A flag wins over the environment, in both directions.
  assert.equal(parse(['--no-http'], { MILLWRIGHT_EDGE_HTTP: 'true' })['http'], false);
  assert.equal(parse([], { MILLWRIGHT_EDGE_HTTP: 'true' })['http'], true);
});

test('a boolean option with a value that is not one is refused, naming the option', () => {
  assert.throws(
    () => parse(['--http=maybe']),
    (err: unknown) =>
      err instanceof ConfigError &&
      /invalid value for "http" \(flag --http\): expected true or false/.test(err.message),
  );
});
