/**
 * docs/configuration.md lists every option of every service, generated from the option schemas:
 * an option added to a module's `options.ts` and not documented fails here (`npm run docs:config`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { envName } from '../../src/kernel/config.js';
import { DOCUMENTED_SERVICES } from '../../src/cli/config-docs.js';
import { CONFIGURATION_PAGE, expectedConfigurationPage } from '../../scripts/config-docs.js';

test('docs/configuration.md has the option tables the schemas make (run `npm run docs:config`)', async () => {
  const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
  assert.equal(
    page,
    await expectedConfigurationPage(),
    'docs/configuration.md is out of date: npm run docs:config',
  );
});

test('every option of every service is on the page with its flag and environment variable', () => {
  const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
  for (const { service, specs } of DOCUMENTED_SERVICES) {
    assert.ok(specs.length > 10, `${service} has its options`);
    for (const spec of specs) {
      assert.ok(page.includes(`\`--${spec.name}\``), `--${spec.name} of ${service} is documented`);
      assert.ok(
        page.includes(`\`${envName(service, spec.name)}\``),
        `${envName(service, spec.name)} is documented`,
      );
    }
  }
});

test('the GraphQL limits exist only on the services that mount GraphQL', () => {
  const names = (service: string) =>
    DOCUMENTED_SERVICES.find((s) => s.service === service)!.specs.map((s) => s.name);
  assert.ok(names('edge').includes('graphql-max-query-bytes'));
  assert.ok(names('uns').includes('graphql-max-query-bytes'));
  assert.ok(!names('manager').some((n) => n.startsWith('graphql-')));
});
