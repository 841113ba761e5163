/**
 * Configuration sections hold no SQL: every read and write of a section goes through its module's
 * repository, with the apply's transaction passed in (docs/configuration-templates.md, "For module
 * authors"). This test fails when a query builder call or an `sql` template appears in a
 * section's files (`config-section.ts` and the `config-*.ts` files beside it) or in the kernel's
 * keyed-collection helper.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const QUERY =
  /\.(selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\s*\(|\bsql\s*`|\bsql\.(raw|ref|table|lit)\s*\(/;

function sectionFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sectionFiles(path));
    else if (/^config-[a-z-]+\.ts$/.test(name)) out.push(path);
  }
  return out;
}

test('no query builder call or sql template in a configuration section', () => {
  const files = [...sectionFiles('src/edge'), 'src/kernel/service/keyed-section.ts'];
  assert.ok(files.length >= 8, `sections found: ${files.join(', ')}`);
  const offending = files.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .map((line, i) => ({ where: `${f}:${i + 1}`, line }))
      .filter(({ line }) => QUERY.test(line))
      .map(({ where, line }) => `${where}: ${line.trim()}`),
  );
  assert.deepEqual(offending, [], 'move these into the module repository (a method taking the transaction)');
});

test('the pattern finds what it is meant to find', () => {
  for (const line of [
    "await trx.selectFrom('dh_device').selectAll().execute();",
    "    .deleteFrom('x')",
    'await sql`savepoint ${sql.raw(name)}`.execute(trx);',
  ])
    assert.ok(QUERY.test(line), line);
  for (const line of [
    'const selectFromList = 1;',
    'repo.deleteKeys(ids, trx)',
    '// sql is in the repository',
  ])
    assert.ok(!QUERY.test(line), line);
});
