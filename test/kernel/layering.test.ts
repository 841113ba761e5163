/**
 * Repositories own their tables: no query builder call outside a `repository.ts` file. Read from
 * the syntax tree of every source file under `src/` (comments and strings do not count):
 * - Kysely's statement builders: `.selectFrom(`, `.insertInto(`, `.updateTable(`, `.deleteFrom(`,
 *   `.replaceInto(`, `.mergeInto(`, `.selectNoFrom(`;
 * - raw SQL: a `sql` template or `sql.raw`/`sql.ref`/`sql.join`/... ;
 * - Kysely's transaction and connection builders, `.transaction()` and `.connection()` (no
 *   argument). The kernel's unit of work, `Database.transaction(fn)`, is allowed: it hands an
 *   untyped `Tx` to the repositories that do the writing (the configuration apply does that).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

const ROOT = join(import.meta.dirname, '..', '..');
const SRC = join(ROOT, 'src');

/** Where SQL is at home. */
const EXEMPT: readonly RegExp[] = [
  /\/repository\.ts$/,
  // The kernel's database layer: the dialect, the migration runner, the settings tables.
  /^src\/kernel\/db\//,
  // Migrations build the schema (a folder of them, or a module's `migrations.ts`).
  /\/migrations\//,
  /\/migrations\.ts$/,
  // The kernel's list query (filters, sort, paging), which every repository's list runs on its
  // own base query: SQL fragments of no table.
  /^src\/kernel\/paging\/query\.ts$/,
];

/**
 * PENDING (issue 24, item 3): files whose SQL is being moved into their module's repository in
 * parallel work. Each entry must still have a query builder call (the test fails when one has
 * none left: delete the line). Empty this list once that work is merged.
 */
const PENDING: readonly string[] = [];

const BUILDERS = new Set([
  'selectFrom',
  'insertInto',
  'updateTable',
  'deleteFrom',
  'replaceInto',
  'mergeInto',
  'selectNoFrom',
]);

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The query builder calls of a source text, as `line: text`. */
export function queryCalls(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const report = (node: ts.Node, what: string) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push(`${line + 1}: ${what}`);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const name = node.expression.name.text;
      if (BUILDERS.has(name)) report(node, `.${name}(...)`);
      else if ((name === 'transaction' || name === 'connection') && node.arguments.length === 0)
        report(node, `.${name}()`);
    }
    if (ts.isTaggedTemplateExpression(node) && ts.isIdentifier(node.tag) && node.tag.text === 'sql')
      report(node, 'sql`...`');
    if (
      ts.isPropertyAccessExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'sql'
    )
      report(node, `sql.${node.name.text}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const files = walk(SRC).map((f) => relative(ROOT, f).split(sep).join('/'));

test('no query builder call outside repository.ts files (the kernel database layer and migrations aside)', () => {
  const offenders: string[] = [];
  for (const file of files) {
    if (EXEMPT.some((re) => re.test(file)) || PENDING.includes(file)) continue;
    for (const call of queryCalls(file, readFileSync(join(ROOT, file), 'utf8')))
      offenders.push(`${file}:${call}`);
  }
  assert.deepEqual(offenders, [], "move these into the module's repository.ts");
});

test('every pending file still exists and still has a query builder call (else: delete its line)', () => {
  for (const file of PENDING) {
    assert.ok(files.includes(file), `${file} no longer exists: delete it from PENDING`);
    assert.notDeepEqual(
      queryCalls(file, readFileSync(join(ROOT, file), 'utf8')),
      [],
      `${file} has no query builder call left: delete it from PENDING`,
    );
  }
});

test('the check sees builder calls, raw SQL and Kysely transactions, not comments or strings', () => {
  const text = [
    '// db.selectFrom("x") in a comment',
    'const s = "db.deleteFrom(x)";',
    'await db.selectFrom("a").selectAll().execute();',
    'await trx.insertInto("a").values(v).execute();',
    'await sql<number>`select 1`.execute(db);',
    'const r = sql.ref("a.b");',
    'await db.transaction().execute(fn);',
    'await database.transaction(async (trx) => repo.save(trx));',
    'await repo.transaction(async (r) => r.save());',
  ].join('\n');
  assert.deepEqual(queryCalls('x.ts', text), [
    '3: .selectFrom(...)',
    '4: .insertInto(...)',
    '5: sql`...`',
    '6: sql.ref',
    '7: .transaction()',
  ]);
});
