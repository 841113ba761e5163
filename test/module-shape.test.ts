/**
 * One shape for every module (docs/development.md): a module of the edge, the UNS or the manager
 * is a folder named after the module, with `module.ts` (the wiring) and `index.ts` (the public
 * surface, which exports the module); its migrations are a folder; `module.ts` imports the
 * folder's own files, never its `index.ts`; and other modules, the service and the CLI import a
 * module only through its `index.ts` (its `options.ts` is read by the service's option list
 * alone, `src/<service>/option-specs.ts`, and its `migrations/index.ts` by the service's migration
 * list, `src/<service>/migration-list.ts`; its `service.ts` and `repository.ts` by the service's
 * offline stores, `src/<service>/offline-stores.ts`). Read from the sources, no service started.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const SERVICES = ['edge', 'uns', 'manager'];

/**
 * Folders not in the shape yet, each with the work that brings it there: the bridge gets a
 * service (issue 24, item 2), and fleet, tasks and templates an `index.ts`, in the same issue.
 * Remove a line when its folder has the shape; the test then holds it there.
 */
const PENDING = new Set<string>([]);
/** Files that reach into a module for a reason of their own, each said. */
const ALLOWED: Record<string, string> = {
  'src/cli/uns-admin.ts -> src/uns/accounts/rules.ts':
    "the permission words of `uns account create --rule`, checked while parsing: the module's index would load the UNS for the help",
  'src/cli/manager.ts -> src/manager/auth/roles.ts':
    "the roles of `manager token create --role`, the option's choices: the module's index would load the manager for the help",
  'src/cli/uns-admin.ts -> src/uns/identity/roles.ts':
    "the roles of `uns user create --role`, the option's choices: the module's index would load the UNS for the help",
};

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const rel = (p: string) => relative(ROOT, p).split('\\').join('/');
const modules = SERVICES.flatMap((s) =>
  readdirSync(join(ROOT, 'src', s))
    .filter((name) => statSync(join(ROOT, 'src', s, name)).isDirectory())
    .map((name) => `${s}/${name}`),
);
const shaped = modules.filter((m) => !PENDING.has(m));

/** The module (`edge/datahub`) a path under src/ belongs to, or null. */
function moduleOf(path: string): string | null {
  const m = /^src\/(edge|uns|manager)\/([^/]+)\//.exec(path);
  return m ? `${m[1]}/${m[2]}` : null;
}

/** Relative imports of a file (static, dynamic, re-exports), resolved to `src/...ts` paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    out.push(rel(resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
  }
  return out;
}

describe('one shape for every module', () => {
  test('every module folder has module.ts and index.ts; index.ts exports the module', () => {
    const problems: string[] = [];
    for (const m of shaped) {
      const dir = join(ROOT, 'src', m);
      if (!existsSync(join(dir, 'module.ts'))) problems.push(`${m}: no module.ts`);
      if (!existsSync(join(dir, 'index.ts'))) {
        problems.push(`${m}: no index.ts`);
        continue;
      }
      const index = readFileSync(join(dir, 'index.ts'), 'utf8');
      if (!/export \{[^}]*\b\w+Module\b[^}]*\} from '\.\/module\.js'/s.test(index))
        problems.push(`${m}: index.ts does not export the module from ./module.js`);
    }
    assert.deepEqual(problems, []);
  });

  test('the module object is named after its folder', () => {
    const problems: string[] = [];
    for (const m of shaped) {
      const text = readFileSync(join(ROOT, 'src', m, 'module.ts'), 'utf8');
      const name = /^ {2}name: '([a-z-]+)'/m.exec(text)?.[1];
      if (name !== m.split('/')[1]) problems.push(`${m}: module named ${name ?? '(none found)'}`);
    }
    assert.deepEqual(problems, []);
  });

  test('migrations are a folder (index.ts + 0001-...ts), never a migrations.ts', () => {
    const problems: string[] = [];
    for (const m of modules) {
      const dir = join(ROOT, 'src', m);
      if (existsSync(join(dir, 'migrations.ts'))) problems.push(`${m}: migrations.ts`);
      const mig = join(dir, 'migrations');
      if (!existsSync(mig)) continue;
      const files = readdirSync(mig).filter((f) => f.endsWith('.ts'));
      if (!files.includes('index.ts')) problems.push(`${m}: migrations/ has no index.ts`);
      for (const f of files)
        if (f !== 'index.ts' && !/^\d{4}-[a-z0-9-]+\.ts$/.test(f)) problems.push(`${m}: migrations/${f}`);
      if (!files.some((f) => /^\d{4}-/.test(f))) problems.push(`${m}: migrations/ has no 0001-...ts`);
      const index = readFileSync(join(mig, 'index.ts'), 'utf8');
      if (/: Migration = /.test(index)) problems.push(`${m}: a migration is declared in migrations/index.ts`);
    }
    assert.deepEqual(problems, []);
  });

  test("module.ts imports its folder's own files, not its index.ts", () => {
    const problems: string[] = [];
    for (const m of shaped) {
      const file = join(ROOT, 'src', m, 'module.ts');
      if (importsOf(file).includes(`src/${m}/index.ts`)) problems.push(`${m}/module.ts imports ./index.js`);
    }
    assert.deepEqual(problems, []);
  });

  test('outside a module, its files are reached only through its index.ts', () => {
    const problems: string[] = [];
    for (const file of walk(join(ROOT, 'src'))) {
      const from = rel(file);
      const own = moduleOf(from);
      for (const target of importsOf(file)) {
        const to = moduleOf(target);
        if (!to || to === own || PENDING.has(to) || (own && PENDING.has(own))) continue;
        if (target === `src/${to}/index.ts`) continue;
        // A service's option list (src/<service>/option-specs.ts) reads each module's options.ts,
        // pure TypeBox data, so that the CLI's help needs no module loaded.
        if (target === `src/${to}/options.ts` && from === `src/${to.split('/')[0]}/option-specs.ts`) continue;
        // Its migration list (src/<service>/migration-list.ts) reads each module's migrations, so
        // that the CLI's offline commands open the store without loading the modules.
        if (
          target === `src/${to}/migrations/index.ts` &&
          from === `src/${to.split('/')[0]}/migration-list.ts`
        )
          continue;
        // Its offline stores (src/<service>/offline-stores.ts) build a module's service on its
        // repository, so that the CLI's offline commands load no module's wiring.
        if (
          (target === `src/${to}/service.ts` || target === `src/${to}/repository.ts`) &&
          from === `src/${to.split('/')[0]}/offline-stores.ts`
        )
          continue;
        if (ALLOWED[`${from} -> ${target}`]) continue;
        problems.push(`${from} -> ${target}`);
      }
    }
    assert.deepEqual(problems, []);
  });
});
