/**
 * The module seam, as a contributor uses it: the worked example of docs/development.md
 * (test/fixtures/bookmarks/: one option, one migration, one route, a configuration section) joins
 * the edge by one line in the module list and nothing else. Its option is a flag in `--help`, an
 * environment variable and a row of docs/configuration.md; its table is migrated, its route is
 * guarded, its section travels in templates. The page's example code is these files.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Command } from 'commander';
import { loadConfig, ConfigError } from '../../src/kernel/config.js';
import { ServiceShell, serviceConfigWith, serviceOptionSpecs } from '../../src/kernel/service/index.js';
import { EDGE_MODULES, EDGE_SERVICE, toEdgeConfig, type EdgeConfig } from '../../src/edge/service.js';
import { addServiceOptions } from '../../src/cli/options.js';
import { renderConfigurationPage } from '../../src/cli/config-docs.js';
import { bookmarksModule } from '../fixtures/bookmarks/index.js';
import { ADMIN_PASSWORD, bootstrapAdmin, http, type TestEdge } from '../helpers/edge.js';
import { applyTemplate, currentSections, templateOf } from '../helpers/config.js';
import { TEST_LOG_FORMAT } from '../helpers/log-format.js';

// The one line: the edge's list of modules with the new one.
const WITH_BOOKMARKS = { ...EDGE_SERVICE, modules: [...EDGE_MODULES, bookmarksModule] };

const specs = serviceOptionSpecs(WITH_BOOKMARKS);
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test('the option of a new module is a flag in --help, under its module', () => {
  const help = addServiceOptions(new Command('edge'), 'edge', specs).helpInformation().replace(/\s+/g, ' ');
  assert.ok(
    help.includes(
      'Edge service, bookmarks module: --bookmarks-max <n> bookmarks kept at most (default: 1000) [MILLWRIGHT_EDGE_BOOKMARKS_MAX]',
    ),
    help,
  );
  const flagged = loadConfig('edge', specs, { 'bookmarks-max': '7' }, {});
  assert.equal(flagged['bookmarks-max'], 7);
  assert.equal(toEdgeConfig(flagged).dataDir, specs.find((s) => s.name === 'data-dir')!.default);
});

test('the option of a new module is an environment variable and a config-file key, validated', () => {
  const values = loadConfig('edge', specs, {}, { MILLWRIGHT_EDGE_BOOKMARKS_MAX: '12' });
  assert.equal(values['bookmarks-max'], 12);
  assert.throws(
    () => loadConfig('edge', specs, {}, { MILLWRIGHT_EDGE_BOOKMARKS_MAX: '0' }),
    (err: unknown) =>
      err instanceof ConfigError &&
      err.message ===
        'invalid value for "bookmarks-max" (environment variable MILLWRIGHT_EDGE_BOOKMARKS_MAX): expected an integer from 1 to 100000, got "0"',
  );
  // Without the module, the edge knows no such option.
  assert.ok(!serviceOptionSpecs(EDGE_SERVICE).some((s) => s.name === 'bookmarks-max'));
});

test('the option of a new module is a row of docs/configuration.md', () => {
  const page = renderConfigurationPage(
    readFileSync(join(import.meta.dirname, '../../docs/configuration.md'), 'utf8'),
    [{ service: 'edge', specs }],
  );
  assert.match(
    page,
    /#### Edge service, bookmarks module\n\n\| flag .*\n\| --- .*\n\| `--bookmarks-max` \| `MILLWRIGHT_EDGE_BOOKMARKS_MAX` \| `1000` \| bookmarks kept at most \(1 to 100000\) \|/,
  );
});

test('a new module runs: its table is migrated, its route guarded and bounded by its option, its section in templates', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mw-bookmarks-'));
  dirs.push(dataDir);
  const config = serviceConfigWith<EdgeConfig & { bookmarksMax: number }>(WITH_BOOKMARKS, {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    datahubHost: '127.0.0.1',
    datahubPort: 0,
    opcuaEnabled: false,
    adminPassword: ADMIN_PASSWORD,
    logLevel: 'warn',
    logFormat: TEST_LOG_FORMAT,
    bookmarksMax: 2,
  });
  const shell = await ServiceShell.build(WITH_BOOKMARKS, config);
  const url = await shell.listen();
  try {
    const t = {
      url,
      call: (path: string, options?: Parameters<typeof http>[1]) => http(`${url}${path}`, options),
    };
    const edge = t as unknown as TestEdge;
    // Guarded like every route: anonymous calls get 401.
    assert.equal((await t.call('/bookmarks/v1/bookmarks')).status, 401);
    const anonymous = await t.call('/bookmarks/v1/bookmarks', {
      json: { name: 'a', url: 'https://a.example' },
    });
    assert.equal(anonymous.status, 401);
    const auth = { authorization: `Bearer ${await bootstrapAdmin(edge)}` };

    const made = await t.call('/bookmarks/v1/bookmarks', {
      headers: auth,
      json: { name: 'docs', url: 'https://example.org/docs' },
    });
    assert.equal(made.status, 201, made.text);
    assert.equal(
      (await t.call('/bookmarks/v1/bookmarks', { headers: auth, json: { name: 'bad', url: 'not a url' } }))
        .status,
      400,
    );
    const second = await t.call('/bookmarks/v1/bookmarks', {
      headers: auth,
      json: { name: 'wiki', url: 'https://example.org/wiki' },
    });
    assert.equal(second.status, 201, second.text);
    const third = await t.call('/bookmarks/v1/bookmarks', {
      headers: auth,
      json: { name: 'x', url: 'https://example.org/x' },
    });
    assert.equal(third.status, 409, 'bookmarksMax: 2 holds');
    assert.match(third.body.message, /at most 2 bookmarks/);

    // The section is exported with the others and applied from a template, in one transaction.
    const sections = await currentSections(edge, auth);
    assert.deepEqual(sections.bookmarks, {
      bookmarks: [
        { name: 'docs', url: 'https://example.org/docs' },
        { name: 'wiki', url: 'https://example.org/wiki' },
      ],
    });
    const applied = await applyTemplate(
      edge,
      auth,
      templateOf({ bookmarks: { bookmarks: [{ name: 'plant', url: 'https://example.org/plant' }] } }),
      { mode: 'use' },
    );
    assert.ok(applied.status < 300, applied.text);
    const listed = await t.call('/bookmarks/v1/bookmarks', { headers: auth });
    assert.deepEqual(listed.body, [{ name: 'plant', url: 'https://example.org/plant' }]);
    const invalid = await applyTemplate(
      edge,
      auth,
      templateOf({ bookmarks: { bookmarks: [{ name: 'y', url: 'no' }] } }),
      { mode: 'use' },
    );
    assert.equal(invalid.status, 400, invalid.text);
    assert.match(invalid.text, /bookmarks\[0\]\.url/);
  } finally {
    await shell.close();
  }
});

test('docs/development.md shows the example module as it is compiled here', () => {
  const page = readFileSync(join(import.meta.dirname, '../../docs/development.md'), 'utf8');
  const root = join(import.meta.dirname, '../fixtures/bookmarks');
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.ts')) files.push(relative(root, p));
    }
  };
  walk(root);
  assert.ok(files.length >= 9, `the example has its parts (${files.join(', ')})`);
  for (const file of files) {
    // In the page the module lives in src/edge/bookmarks/: one folder up less to the kernel.
    const text = readFileSync(join(root, file), 'utf8').replace(/((?:\.\.\/)+)\.\.\/src\//g, '$1');
    const block = `\`\`\`ts\n// src/edge/bookmarks/${file}\n${text}\`\`\``;
    assert.ok(
      page.includes(block),
      `docs/development.md shows src/edge/bookmarks/${file} as test/fixtures/bookmarks/${file}`,
    );
  }
});
