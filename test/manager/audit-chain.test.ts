/**
 * The audit chain and the request-scoped transaction on SQLite and PostgreSQL: records chain by
 * hash; concurrent appends never fork the chain; verify names a changed or removed row; a scope
 * commits the change with its record or rolls both back; nested transactions are savepoints.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import pino from 'pino';
import { currentScope, disableScopeTrackingIfIdle, scopeTracking, sql } from '../../src/kernel/db/index.js';
import { AuditRepository, AuditService } from '../../src/manager/audit/index.js';
import { HEAD_MARK_EVERY } from '../../src/manager/audit/repository.js';
import { auditMigrations } from '../../src/manager/audit/migrations/index.js';
import { forEachDialect } from '../helpers/postgres.js';

const input = (action: string) => ({
  actor: 'token:t',
  module: 'test',
  action,
  origin: 'API' as const,
  outcome: 'success' as const,
});

forEachDialect('audit chain', (ctx) => {
  let audit: AuditService;
  before(async () => {
    await ctx.database.migrate([auditMigrations]);
    await sql`create table scratch (id text primary key)`.execute(ctx.database.db);
    audit = new AuditService(new AuditRepository(ctx.database), pino({ level: 'silent' }));
  });

  test('appends chain by hash, concurrent appends included', async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => audit.record(input(`a.${i}`))));
    const v = await audit.verify();
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.equal(v.checked, 40);
    assert.equal(v.head.seq, 40);
  });

  test('a scope commits the change and its record together, or neither', async () => {
    const db = ctx.database.db;
    const before = await audit.repo.count({});
    const ok = ctx.database.openScope();
    await ctx.database.runInScope(ok, async () => {
      await sql`insert into scratch (id) values ('kept')`.execute(db);
      // A repository's own transaction inside the scope is a savepoint; its rollback undoes only it.
      await db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into scratch (id) values ('undone')`.execute(trx);
          throw new Error('undo');
        })
        .catch(() => undefined);
    });
    await ok.finish(true, async () => {
      await audit.record(input('scratch.create'));
    });
    const failed = ctx.database.openScope();
    await ctx.database.runInScope(failed, () =>
      sql`insert into scratch (id) values ('rolled-back')`.execute(db),
    );
    await failed.finish(false);
    const rows = await sql<{ id: string }>`select id from scratch order by id`.execute(db);
    assert.deepEqual(
      rows.rows.map((r) => r.id),
      ['kept'],
    );
    assert.equal((await audit.repo.count({})) - before, 1);
    assert.equal((await audit.verify()).ok, true);
  });

  test('a reader outside the scope never sees a change without its record (one transaction)', async () => {
    const db = ctx.database.db;
    // The change and the record counted by one reader, in one statement (one snapshot, also under
    // PostgreSQL's read committed).
    const look = () =>
      ctx.database.outsideScope(async () => {
        const row = (
          await sql<{
            c: number;
            r: number;
          }>`select (select count(*) from scratch where id = 'paired') as c, (select count(*) from audit_record where action = 'scratch.paired') as r`.execute(
            db,
          )
        ).rows[0]!;
        return [Number(row.c), Number(row.r)];
      });
    const scope = ctx.database.openScope();
    await ctx.database.runInScope(scope, () => sql`insert into scratch (id) values ('paired')`.execute(db));
    // Readers queued while the change is written but its record not yet: were the record written
    // in a transaction of its own after the change's commit, one would see the change alone.
    const looks = [look()];
    await scope.finish(true, async () => {
      looks.push(look());
      await audit.record(input('scratch.paired'));
      looks.push(look());
    });
    looks.push(look());
    for (const seen of await Promise.all(looks))
      assert.ok(seen[0] === seen[1], `seen ${JSON.stringify(seen)}`);
    assert.deepEqual(await look(), [1, 1]);
  });

  test('two appenders on one database (two managers), and an append rolled back, keep one chain', async () => {
    // Each repository guesses the head from its own last append; the other's appends and a
    // rolled-back one make the guess wrong, and the append then reads the head (no fork, no gap).
    const other = new AuditService(new AuditRepository(ctx.database), pino({ level: 'silent' }));
    const start = (await audit.verify()).head.seq;
    for (let i = 0; i < 10; i++) {
      await audit.record(input(`one.${i}`));
      if (i % 3 === 0) await other.record(input(`two.${i}`));
      await audit.record(input(`one.${i}.b`));
    }
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? audit : other).record(input(`mix.${i}`))),
    );
    // In a request scope too: the other's append makes this one's guess stale, its insert does
    // nothing, and the append seals again from the chain's end (in the scope's transaction).
    await other.record(input('two.before.scoped'));
    const scoped = ctx.database.openScope();
    await ctx.database.runInScope(scoped, () => audit.record(input('scoped.stale.guess')));
    await scoped.finish(true);
    const failed = ctx.database.openScope();
    await ctx.database.runInScope(failed, () => audit.record(input('rolled.back')));
    await failed.finish(false);
    await audit.record(input('after.rollback'));
    await other.record(input('after.rollback.other'));
    const v = await audit.verify();
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.equal(v.head.seq - start, 20 + 4 + 10 + 2 + 2);
    const scopedRows = await sql`select seq from audit_record where action = 'scoped.stale.guess'`.execute(
      ctx.database.db,
    );
    assert.equal(scopedRows.rows.length, 1);
    const rolled = await sql`select seq from audit_record where action = 'rolled.back'`.execute(
      ctx.database.db,
    );
    assert.equal(rolled.rows.length, 0);
  });

  test('verify names a changed row and a removed row', async () => {
    const db = ctx.database.db;
    const orig = await sql<{ action: string }>`select action from audit_record where seq = 7`.execute(db);
    await sql`update audit_record set action = 'forged' where seq = 7`.execute(db);
    let v = await audit.verify();
    assert.equal(v.ok, false);
    assert.equal(v.broken?.seq, 7);
    assert.match(v.broken!.reason, /was changed/);
    await sql`update audit_record set action = ${orig.rows[0]!.action} where seq = 7`.execute(db);
    assert.equal((await audit.verify()).ok, true);
    await sql`delete from audit_record where seq = 12`.execute(db);
    v = await audit.verify();
    assert.equal(v.ok, false);
    assert.equal(v.broken?.seq, 13);
    assert.match(v.broken!.reason, /record 12 is missing/);
  });

  /** A database of its own (the tests above leave the suite's chain broken on purpose). */
  async function freshTrail() {
    const database = await ctx.fresh();
    await database.migrate([auditMigrations]);
    await sql`create table scratch (id text primary key)`.execute(database.db);
    return { database, audit: new AuditService(new AuditRepository(database), pino({ level: 'silent' })) };
  }

  test('a scope whose first write is a nested transaction: its rollback undoes only it', async () => {
    // No savepoint is taken for it (the scope's transaction begins there); undoing it rolls the
    // scope back to its start, and the scope's later writes and its record still commit.
    const { database, audit } = await freshTrail();
    const db = database.db;
    const before = await audit.repo.count({});
    const scope = database.openScope();
    await database.runInScope(scope, async () => {
      await db
        .transaction()
        .execute(async (trx) => {
          await sql`insert into scratch (id) values ('first-undone')`.execute(trx);
          throw new Error('undo');
        })
        .catch(() => undefined);
      await db.transaction().execute(async (trx) => {
        await sql`insert into scratch (id) values ('second-kept')`.execute(trx);
      });
      // An append in a savepoint that is rolled back leaves no guess behind.
      await db
        .transaction()
        .execute(async () => {
          await audit.record(input('in.rolled.back.savepoint'));
          throw new Error('undo');
        })
        .catch(() => undefined);
    });
    await scope.finish(true, async () => {
      await audit.record(input('scratch.second'));
    });
    const rows = await sql<{
      id: string;
    }>`select id from scratch where id in ('first-undone', 'second-kept')`.execute(db);
    assert.deepEqual(
      rows.rows.map((r) => r.id),
      ['second-kept'],
    );
    assert.equal((await audit.repo.count({})) - before, 1);
    await audit.record(input('after.scope'));
    const v = await audit.verify();
    assert.equal(v.ok, true, JSON.stringify(v));
  });

  test("records removed from the end are named, up to the head row's mark", async () => {
    const { database, audit } = await freshTrail();
    const db = database.db;
    // Past the next mark, then a few more.
    const start = (await audit.verify()).head.seq;
    const mark = (Math.floor(start / HEAD_MARK_EVERY) + 1) * HEAD_MARK_EVERY;
    for (let seq = start + 1; seq <= mark + 3; seq++) await audit.record(input(`to.mark.${seq}`));
    assert.equal((await audit.verify()).ok, true);
    await sql`delete from audit_record where seq >= ${mark - 1}`.execute(db);
    const v = await audit.verify();
    assert.equal(v.ok, false);
    assert.equal(v.broken?.seq, mark - 1);
    assert.match(v.broken!.reason, new RegExp(`reached record ${mark} \\(records removed at the end\\)`));
  });
});

forEachDialect('request scopes', (ctx) => {
  before(async () => {
    await sql`create table scratch_scopes (id text primary key)`.execute(ctx.database.db);
  });

  test("the scopes' storage runs its hooks only while a scope is open; later scopes work alike", async () => {
    const db = ctx.database.db;
    const insert = (id: string) => sql`insert into scratch_scopes (id) values (${id})`.execute(db);
    const a = ctx.database.openScope();
    const b = ctx.database.openScope();
    await ctx.database.runInScope(a, () => insert('a'));
    assert.equal(scopeTracking(), true);
    await a.finish(true);
    assert.equal(scopeTracking(), true, 'b is still open');
    await ctx.database.runInScope(b, async () => {
      await new Promise((r) => setImmediate(r));
      assert.equal(currentScope(), b);
      await insert('b');
    });
    await b.finish(false);
    // No scope open: the hooks stay until no scope was made for a while (a steady load of changes
    // touches zero open scopes between most requests), then no hooks on every promise.
    assert.equal(scopeTracking(), true, 'kept on for the next scope');
    assert.equal(currentScope(), undefined);
    disableScopeTrackingIfIdle();
    assert.equal(scopeTracking(), false);
    const c = ctx.database.openScope();
    await ctx.database.runInScope(c, async () => {
      await new Promise((r) => setImmediate(r));
      assert.equal(currentScope(), c);
      await insert('c');
    });
    await c.finish(true);
    // The idle timer disables the storage by itself.
    for (let i = 0; i < 100 && scopeTracking(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(scopeTracking(), false);
    const rows = await sql<{ id: string }>`select id from scratch_scopes order by id`.execute(db);
    assert.deepEqual(
      rows.rows.map((r) => r.id),
      ['a', 'c'],
    );
  });
});
