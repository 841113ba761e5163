/**
 * The audit trail's table rebuilt by migration 0002 (issue 27: fewer B-trees per record), on
 * SQLite and PostgreSQL: records written under 0001's table (its head row moved per record, as the
 * code of that time did) survive with every field, the chain verifies across the migration and
 * new records follow the old ones; a legacy id stays unique, a plain record's id need not be
 * looked up; on SQLite `seq` is the table's rowid.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import pino from 'pino';
import { sql, type Database } from '../../src/kernel/db/index.js';
import { AuditRepository, AuditService, hashOf } from '../../src/manager/audit/index.js';
import { auditMigrations } from '../../src/manager/audit/migrations/index.js';
import { forEachDialect } from '../helpers/postgres.js';

const OLD_ROWS = 150;

/** Writes `n` chained records the way 0001's code did (the head row moved to each). */
async function writeOldRecords(database: Database, n: number): Promise<string[]> {
  const db = database.db;
  let prev = '0'.repeat(64);
  const hashes: string[] = [];
  for (let seq = 1; seq <= n; seq++) {
    const row = {
      seq,
      id: `old-${seq}`,
      at: 1_700_000_000_000 + seq,
      actor: 'token:old',
      actor_name: seq % 2 ? 'old' : null,
      company_id: null,
      project_id: seq % 3 ? 'p1' : null,
      module: 'fleet',
      action: `company.create`,
      origin: 'API',
      target: `companyName=c${seq}`,
      outcome: seq % 5 ? 'success' : 'failure',
      status: seq % 5 ? 201 : 409,
      request_id: `req-${seq}`,
      details: JSON.stringify({ method: 'POST', n: seq }),
      legacy_id: seq % 10 === 0 ? `legacy-${seq}` : null,
      prev_hash: prev,
    };
    const hash = hashOf(row);
    await sql`insert into audit_record (seq, id, at, actor, actor_name, company_id, project_id, module, action, origin, target, outcome, status, request_id, details, legacy_id, prev_hash, hash) values (${row.seq}, ${row.id}, ${row.at}, ${row.actor}, ${row.actor_name}, ${row.company_id}, ${row.project_id}, ${row.module}, ${row.action}, ${row.origin}, ${row.target}, ${row.outcome}, ${row.status}, ${row.request_id}, ${row.details}, ${row.legacy_id}, ${row.prev_hash}, ${hash})`.execute(
      db,
    );
    await sql`update audit_head set seq = ${seq}, hash = ${hash} where id = 1`.execute(db);
    hashes.push(hash);
    prev = hash;
  }
  return hashes;
}

const input = (action: string) => ({
  actor: 'token:new',
  module: 'test',
  action,
  origin: 'API' as const,
  outcome: 'success' as const,
});

forEachDialect('audit migration 0002 (the lean record table)', (ctx) => {
  let hashes: string[];
  let before0002: unknown[];
  before(async () => {
    const [create, ...rest] = auditMigrations.migrations;
    assert.ok(rest.some((m) => m.name === '0002-lean-record-table'));
    await ctx.database.migrate([{ module: auditMigrations.module, migrations: [create!] }]);
    hashes = await writeOldRecords(ctx.database, OLD_ROWS);
    before0002 = (await sql`select * from audit_record order by seq`.execute(ctx.database.db)).rows;
    const applied = await ctx.database.migrate([auditMigrations]);
    assert.deepEqual(applied, ['manager.audit/0002-lean-record-table']);
  });

  test('the old records survive, field for field, and verify', async () => {
    const after = (await sql`select * from audit_record order by seq`.execute(ctx.database.db)).rows;
    const norm = (rows: unknown[]) =>
      rows.map((r) =>
        Object.fromEntries(
          Object.entries(r as Record<string, unknown>).map(([k, v]) => [
            k,
            typeof v === 'bigint' ? Number(v) : v,
          ]),
        ),
      );
    assert.deepEqual(norm(after), norm(before0002));
    const audit = new AuditService(new AuditRepository(ctx.database), pino({ level: 'silent' }));
    const v = await audit.verify();
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.equal(v.checked, OLD_ROWS);
    assert.deepEqual(v.head, { seq: OLD_ROWS, hash: hashes[OLD_ROWS - 1] });
  });

  test('new records follow the old ones, and the chain verifies', async () => {
    const audit = new AuditService(new AuditRepository(ctx.database), pino({ level: 'silent' }));
    const first = await audit.record(input('after.migration'));
    assert.equal(first.seq, OLD_ROWS + 1);
    assert.equal(first.prev_hash, hashes[OLD_ROWS - 1]);
    await Promise.all(Array.from({ length: 20 }, (_, i) => audit.record(input(`more.${i}`))));
    const v = await audit.verify();
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.equal(v.checked, OLD_ROWS + 21);
  });

  test('a legacy id stays unique; a record id is not indexed any more', async () => {
    const db = ctx.database.db;
    const copy = (await sql<Record<string, unknown>>`select * from audit_record where seq = 10`.execute(db))
      .rows[0]!;
    assert.equal(copy.legacy_id, 'legacy-10');
    await assert.rejects(
      sql`insert into audit_record (seq, id, at, actor, module, action, origin, outcome, details, legacy_id, prev_hash, hash) values (${1_000_000}, ${'dup'}, ${1}, ${'a'}, ${'m'}, ${'a'}, ${'API'}, ${'success'}, ${'{}'}, ${'legacy-10'}, ${'x'}, ${'y'})`.execute(
        db,
      ),
    );
    const indexes =
      ctx.dialect === 'sqlite'
        ? (
            await sql<{
              name: string;
            }>`select name from sqlite_master where type = 'index' and tbl_name = 'audit_record'`.execute(db)
          ).rows.map((r) => r.name)
        : (
            await sql<{
              name: string;
            }>`select indexname as name from pg_indexes where tablename = 'audit_record'`.execute(db)
          ).rows.map((r) => r.name);
    // SQLite: seq is the rowid (no index of its own); PostgreSQL: its primary key's index.
    const expected = ['audit_record_action', 'audit_record_at', 'audit_record_legacy_id'];
    if (ctx.dialect === 'postgres') expected.push('audit_record_pkey');
    assert.deepEqual(indexes.sort(), expected.sort());
  });
});
