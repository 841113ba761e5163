/**
 * `npm run build` (scripts/build.mjs) on a small project of its own in a temporary folder: after
 * a source is deleted, dist/ is what a clean build gives (no output without a source); with
 * `--if-changed`, nothing is built again when nothing changed; `noCheck` (the test runner's build,
 * whose own compile type-checks src/) emits what a checked build emits, and leaves the check to
 * the next build without it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { after, test } from 'node:test';
import { tempDirs } from '../helpers/cli.js';

const repo = join(import.meta.dirname, '../..');
const dirs = tempDirs('mw-build-');
after(() => dirs.removeAll());

const SOURCES: Record<string, string> = {
  'src/cli/main.ts': `import { twice } from '../lib/twice.js';\nconsole.log(twice(2));\n`,
  'src/lib/twice.ts': `export const twice = (n: number): number => n * 2;\n`,
  'src/gone/old.ts': `export const old = 1;\n`,
  'src/gone/schema.graphql': `type Query { old: Int }\n`,
  'src/lib/schema.graphql': `type Query { twice: Int }\n`,
};

/** A project with the repository's build script and configuration, and the sources above. */
function project(): string {
  const root = dirs.make();
  for (const f of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs']) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    copyFileSync(join(repo, f), join(root, f));
  }
  symlinkSync(join(repo, 'node_modules'), join(root, 'node_modules'));
  for (const [f, text] of Object.entries(SOURCES)) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), text);
  }
  return root;
}

const build = (root: string, ...args: string[]) =>
  execFileSync(process.execPath, [join(root, 'scripts/build.mjs'), ...args], { cwd: root, encoding: 'utf8' });

/** dist/ as file → content, without the build's own state (tsc's and the stamp). */
function tree(root: string): Map<string, string> {
  const dist = join(root, 'dist');
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (!['.tsbuildinfo', '.millwright-built'].includes(name))
        out.set(relative(dist, p), readFileSync(p, 'utf8'));
    }
  };
  walk(dist);
  return out;
}

test('a build after a source is deleted gives the dist/ of a clean build', () => {
  const root = project();
  build(root);
  const first = tree(root);
  assert.ok(first.has('gone/old.js') && first.has('gone/old.js.map') && first.has('gone/schema.graphql'));
  assert.equal(execFileSync(process.execPath, [join(root, 'dist/cli/main.js')], { encoding: 'utf8' }), '4\n');

  rmSync(join(root, 'src/gone'), { recursive: true });
  build(root);
  const clean = project();
  rmSync(join(clean, 'src/gone'), { recursive: true });
  build(clean);
  assert.deepEqual([...tree(root)].sort(), [...tree(clean)].sort());
  assert.deepEqual(readdirSync(join(root, 'dist')).sort(), [
    '.millwright-built',
    '.tsbuildinfo',
    'cli',
    'lib',
  ]);
});

test('--if-changed builds only after a source change; an output removed by hand comes back', () => {
  const root = project();
  build(root, '--if-changed');
  const stamp = join(root, 'dist/.millwright-built');
  const builtAt = statSync(stamp).mtimeMs;
  build(root, '--if-changed');
  assert.equal(statSync(stamp).mtimeMs, builtAt, 'nothing changed: no build');

  rmSync(join(root, 'dist/lib/twice.js'));
  build(root);
  assert.equal(execFileSync(process.execPath, [join(root, 'dist/cli/main.js')], { encoding: 'utf8' }), '4\n');
});

test('noCheck emits the dist/ of a checked build, and the next build without it still fails on a type error', () => {
  const root = project();
  const buildNoCheck = () =>
    execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { build } from ${JSON.stringify(join(root, 'scripts/build.mjs'))}; build({ noCheck: true, stdio: 'pipe' });`,
      ],
      { cwd: root, encoding: 'utf8' },
    );
  buildNoCheck();
  const unchecked = tree(root);
  const checked = project();
  build(checked);
  assert.deepEqual([...unchecked].sort(), [...tree(checked)].sort());

  // A type error: the unchecked build emits; the checked one after it reports the error.
  writeFileSync(
    join(root, 'src/lib/twice.ts'),
    `export const twice = (n: number): number => String(n * 2);\n`,
  );
  buildNoCheck();
  assert.match(readFileSync(join(root, 'dist/lib/twice.js'), 'utf8'), /String\(n \* 2\)/);
  assert.throws(
    () => execFileSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'pipe' }),
    (err: { status: number; stdout: Buffer }) => {
      assert.notEqual(err.status, 0);
      assert.match(err.stdout.toString(), /TS2322/);
      return true;
    },
  );
});
