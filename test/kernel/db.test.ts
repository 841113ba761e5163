import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database, sql, typed, type Kysely, type ModuleMigrations } from '../../src/kernel/db/index.js';
import { forEachDialect, pgTestDatabase } from '../helpers/postgres.js';
import { sleep } from '../helpers/util.js';

async function tableExists(database: Database, table: string): Promise<boolean> {
  const tables = await database.db.introspection.getTables();
  return tables.some((t) => t.name === table);
}

async function recorded(database: Database): Promise<string[]> {
  const rows = await database
    .typed<any>()
    .selectFrom('mw_migration')
    .select(['module', 'name'])
    .orderBy('module')
    .orderBy('name')
    .execute();
  return rows.map((r) => `${r.module}/${r.name}`);
}

const createThing = (name: string, table: string) => ({
  name,
  up: (db: Kysely<any>) =>
    db.schema
      .createTable(table)
      .addColumn('id', 'text', (c) => c.primaryKey())
      .execute(),
});

forEachDialect('kernel database', (ctx) => {
  describe('migrations', () => {
    test('apply in name order, module by module, are recorded, and are not re-applied', async () => {
      const database = await ctx.fresh();
      const ran: string[] = [];
      const step = (name: string) => ({
        name,
        up: async (db: Kysely<any>) => {
          ran.push(name);
          await db.schema
            .createTable(`t_${name.replace(/-/g, '_')}`)
            .addColumn('id', 'text')
            .execute();
        },
      });
      const modules: ModuleMigrations[] = [
        { module: 'edge.b', migrations: [step('0002-b2'), step('0001-b1'), step('0010-b10')] },
        { module: 'edge.a', migrations: [step('0001-a1')] },
      ];

      const applied = await database.migrate(modules);
      assert.deepEqual(applied, ['edge.b/0001-b1', 'edge.b/0002-b2', 'edge.b/0010-b10', 'edge.a/0001-a1']);
      assert.deepEqual(ran, ['0001-b1', '0002-b2', '0010-b10', '0001-a1']);
      assert.deepEqual(await recorded(database), [
        'edge.a/0001-a1',
        'edge.b/0001-b1',
        'edge.b/0002-b2',
        'edge.b/0010-b10',
      ]);
      const at = await database
        .typed<any>()
        .selectFrom('mw_migration')
        .select('applied_at')
        .executeTakeFirstOrThrow();
      assert.equal(typeof at.applied_at, 'number');
      assert.ok(Math.abs((at.applied_at as number) - Date.now()) < 60_000);

      assert.deepEqual(await database.migrate(modules), []);
      assert.equal(ran.length, 4);

      // A later version adds one migration: only that one runs.
      modules[1]!.migrations.push(step('0002-a2'));
      assert.deepEqual(await database.migrate(modules), ['edge.a/0002-a2']);
      assert.deepEqual(ran.slice(4), ['0002-a2']);
    });

    test('a failing migration rolls back entirely and its error propagates', async () => {
      const database = await ctx.fresh();
      const boom = new Error('boom in migration');
      const failing = {
        name: '0002-fails',
        up: async (db: Kysely<any>) => {
          await db.schema.createTable('half_done').addColumn('id', 'text').execute();
          await db.insertInto('half_done').values({ id: 'x' }).execute();
          await db.insertInto('first').values({ id: 'written-by-0002' }).execute();
          throw boom;
        },
      };
      const mod = { module: 'edge.x', migrations: [createThing('0001-first', 'first'), failing] };

      await assert.rejects(database.migrate([mod]), (err) => err === boom);
      assert.deepEqual(await recorded(database), ['edge.x/0001-first']);
      assert.equal(await tableExists(database, 'first'), true);
      assert.equal(await tableExists(database, 'half_done'), false);
      assert.deepEqual(await database.typed<any>().selectFrom('first').selectAll().execute(), []);

      // Fixed in the next release: it applies cleanly.
      mod.migrations[1] = createThing('0002-fails', 'half_done');
      assert.deepEqual(await database.migrate([mod]), ['edge.x/0002-fails']);
    });

    test('a migration failing in SQL rolls back too, and the database stays usable', async () => {
      const database = await ctx.fresh();
      const bad = {
        name: '0001-bad-sql',
        up: async (db: Kysely<any>) => {
          await db.schema.createTable('made').addColumn('id', 'text').execute();
          await sql`insert into no_such_table values (1)`.execute(db);
        },
      };
      await assert.rejects(database.migrate([{ module: 'edge.y', migrations: [bad] }]), /no_such_table/);
      assert.equal(await tableExists(database, 'made'), false);
      assert.deepEqual(await recorded(database), []);
      assert.deepEqual(
        await database.migrate([{ module: 'edge.y', migrations: [createThing('0001-ok', 'made')] }]),
        ['edge.y/0001-ok'],
      );
    });

    test('a recorded migration the code does not know stops with a clear error, applying nothing', async () => {
      const database = await ctx.fresh();
      const newer = [createThing('0001-one', 'one'), createThing('0002-two', 'two')];
      await database.migrate([{ module: 'edge.z', migrations: newer }]);

      // An older release: knows only 0001 of edge.z, and has a pending migration in another module.
      const pending = createThing('0001-other', 'other');
      await assert.rejects(
        database.migrate([
          { module: 'edge.a', migrations: [pending] },
          { module: 'edge.z', migrations: [newer[0]!] },
        ]),
        (err: Error) => {
          assert.match(err.message, /"edge\.z\/0002-two"/);
          assert.match(err.message, /newer version/);
          return true;
        },
      );
      assert.equal(await tableExists(database, 'other'), false);
      assert.deepEqual(await recorded(database), ['edge.z/0001-one', 'edge.z/0002-two']);
    });

    test('migrate works with a pool of one connection', async () => {
      const database = ctx.reopen(await ctx.fresh(), { poolSize: 1 });
      const result = await Promise.race([
        database.migrate([{ module: 'edge.p', migrations: [createThing('0001-p', 'p')] }]),
        // A bound on the wait, not a wait: the migration must not hang.
        sleep(5000).then(() => 'timed out'),
      ]);
      assert.deepEqual(result, ['edge.p/0001-p']);
    });
  });

  describe('data', () => {
    before(async () => {
      await ctx.database.migrate([
        {
          module: 'test.data',
          migrations: [
            {
              name: '0001-create-item',
              up: async (db) => {
                await db.schema
                  .createTable('item')
                  .addColumn('id', 'text', (c) => c.primaryKey())
                  .addColumn('name', 'text', (c) => c.notNull().unique())
                  .addColumn('created_at', 'bigint', (c) => c.notNull())
                  .addColumn('enabled', 'integer', (c) => c.notNull())
                  .addColumn('meta', 'text')
                  .execute();
              },
            },
          ],
        },
      ]);
    });

    const item = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      name: `name-${id}`,
      created_at: 1_700_000_000_000,
      enabled: 1,
      meta: null,
      ...extra,
    });

    test('a transaction commits what it writes and returns its value', async () => {
      const db = ctx.database;
      const result = await db.transaction(async (untyped) => {
        const trx = typed<any>(untyped);
        await trx.insertInto('item').values(item('tx-1')).execute();
        await trx.insertInto('item').values(item('tx-2')).execute();
        return 'done';
      });
      assert.equal(result, 'done');
      const rows = await db
        .typed<any>()
        .selectFrom('item')
        .select('id')
        .where('id', 'like', 'tx-%')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        ['tx-1', 'tx-2'],
      );
    });

    test('a transaction that throws leaves no rows and rethrows', async () => {
      const db = ctx.database;
      const oops = new Error('oops');
      await assert.rejects(
        db.transaction(async (untyped) => {
          const trx = typed<any>(untyped);
          await trx.insertInto('item').values(item('rb-1')).execute();
          await trx.updateTable('item').set({ name: 'renamed' }).where('id', '=', 'tx-1').execute();
          throw oops;
        }),
        (err) => err === oops,
      );
      assert.equal(
        await db.typed<any>().selectFrom('item').select('id').where('id', '=', 'rb-1').executeTakeFirst(),
        undefined,
      );
      const kept = await db
        .typed<any>()
        .selectFrom('item')
        .select('name')
        .where('id', '=', 'tx-1')
        .executeTakeFirstOrThrow();
      assert.equal(kept.name, 'name-tx-1');
    });

    test('isUniqueViolation recognises primary-key and unique-index violations, and nothing else', async () => {
      const db = ctx.database;
      await db.typed<any>().insertInto('item').values(item('u-1')).execute();
      const failure = async (values: Record<string, unknown>) => {
        try {
          await db.typed<any>().insertInto('item').values(values).execute();
        } catch (err) {
          return err;
        }
        assert.fail('insert should have failed');
      };
      assert.equal(
        Database.isUniqueViolation(await failure(item('u-1', { name: 'other' }))),
        true,
        'primary key',
      );
      assert.equal(
        Database.isUniqueViolation(await failure(item('u-2', { name: 'name-u-1' }))),
        true,
        'unique',
      );
      assert.equal(Database.isUniqueViolation(await failure(item('u-3', { name: null }))), false, 'not null');
      assert.equal(Database.isUniqueViolation(new Error('duplicate')), false);
      assert.equal(Database.isUniqueViolation(undefined), false);
      // Inside a transaction the driver's error reaches the caller unchanged.
      const inTrx = await db
        .transaction((trx) => typed<any>(trx).insertInto('item').values(item('u-1')).execute())
        .catch((err: unknown) => err);
      assert.equal(Database.isUniqueViolation(inTrx), true);
    });

    test('bigint epoch-ms columns and counts read back as numbers', async () => {
      const db = ctx.database;
      const at = 4_102_444_800_123; // 2100-01-01, well past 2^32
      await db
        .typed<any>()
        .insertInto('item')
        .values(item('big', { created_at: at }))
        .execute();
      const row = await db
        .typed<any>()
        .selectFrom('item')
        .select('created_at')
        .where('id', '=', 'big')
        .executeTakeFirstOrThrow();
      assert.equal(row.created_at, at);
      const agg = await db
        .typed<any>()
        .selectFrom('item')
        .select((eb) => [eb.fn.countAll().as('n'), eb.fn.max('created_at').as('latest')])
        .executeTakeFirstOrThrow();
      assert.equal(typeof agg.n, 'number');
      assert.equal(agg.latest, at);
    });

    test('integer 0/1 booleans and JSON text round-trip', async () => {
      const db = ctx.database;
      const meta = { unit: '°C', tags: ['a', 'b'], nested: { n: 1.5, ok: true, none: null } };
      await db
        .typed<any>()
        .insertInto('item')
        .values([
          item('b-on', { enabled: 1, meta: JSON.stringify(meta) }),
          item('b-off', { enabled: 0, meta: null }),
        ])
        .execute();
      const rows = await db
        .typed<any>()
        .selectFrom('item')
        .select(['id', 'enabled', 'meta'])
        .where('id', 'in', ['b-on', 'b-off'])
        .orderBy('id')
        .execute();
      assert.deepEqual(rows, [
        { id: 'b-off', enabled: 0, meta: null },
        { id: 'b-on', enabled: 1, meta: JSON.stringify(meta) },
      ]);
      assert.deepEqual(JSON.parse(rows[1]!.meta as string), meta);
      const enabled = await db
        .typed<any>()
        .selectFrom('item')
        .select('id')
        .where('enabled', '=', 0)
        .execute();
      assert.deepEqual(
        enabled.map((r) => r.id),
        ['b-off'],
      );
    });

    test('ilike makes Contains search case-insensitive', async () => {
      const db = ctx.database;
      await db
        .typed<any>()
        .insertInto('item')
        .values([
          item('s-1', { name: 'Feed PUMP 1' }),
          item('s-2', { name: 'feed pump 2' }),
          item('s-3', { name: 'Valve' }),
        ])
        .execute();
      const rows = await db
        .typed<any>()
        .selectFrom('item')
        .select('id')
        .where('id', 'like', 's-%')
        .where('name', db.ilike, '%Pump%')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        rows.map((r) => r.id),
        ['s-1', 's-2'],
      );
    });

    test('a second handle on the same database (another process) sees committed writes only', async () => {
      const first = ctx.database;
      const second = ctx.reopen(first);
      await first.typed<any>().insertInto('item').values(item('p-1')).execute();
      assert.ok(
        await second.typed<any>().selectFrom('item').where('id', '=', 'p-1').select('id').executeTakeFirst(),
      );

      await second.typed<any>().insertInto('item').values(item('p-2')).execute();
      assert.ok(
        await first.typed<any>().selectFrom('item').where('id', '=', 'p-2').select('id').executeTakeFirst(),
      );

      // While a transaction of `first` is open its write is invisible to `second`.
      let release!: () => void;
      const hold = new Promise<void>((resolve) => (release = resolve));
      let inserted!: () => void;
      const wrote = new Promise<void>((resolve) => (inserted = resolve));
      const trx = first.transaction(async (t) => {
        await typed<any>(t).insertInto('item').values(item('p-3')).execute();
        inserted();
        await hold;
      });
      await wrote;
      assert.equal(
        await second.typed<any>().selectFrom('item').where('id', '=', 'p-3').select('id').executeTakeFirst(),
        undefined,
      );
      release();
      await trx;
      assert.ok(
        await second.typed<any>().selectFrom('item').where('id', '=', 'p-3').select('id').executeTakeFirst(),
      );
    });
  });
});

describe('kernel database on PostgreSQL', () => {
  let pg: Awaited<ReturnType<typeof pgTestDatabase>> = null;
  const open: Database[] = [];
  before(async () => {
    pg = await pgTestDatabase();
  });
  after(async () => {
    for (const database of open) await database.close();
    await pg?.drop();
  });

  test('two migrate() calls at once on one database take turns (advisory lock)', async (t) => {
    if (!pg) return t.skip('PostgreSQL unreachable');
    const a = Database.open({ url: pg.url, sqlitePath: ':memory:' });
    const b = Database.open({ url: pg.url, sqlitePath: ':memory:' });
    open.push(a, b);
    let runs = 0;
    let running = 0;
    const slow = {
      name: '0001-slow',
      up: async (db: Kysely<any>) => {
        runs++;
        running++;
        assert.equal(running, 1, 'two migrations ran at the same time');
        // A slow migration: the other process must wait for it.
        await sleep(200);
        await db.schema.createTable('slow').addColumn('id', 'text').execute();
        running--;
      },
    };
    const modules = [{ module: 'edge.lock', migrations: [slow] }];
    const [fromA, fromB] = await Promise.all([a.migrate(modules), b.migrate(modules)]);
    assert.equal(runs, 1);
    assert.deepEqual([...fromA, ...fromB], ['edge.lock/0001-slow']);
    assert.deepEqual(await recorded(a), ['edge.lock/0001-slow']);
  });

  test('two migrate() calls at once on one SQLite file take turns (lock file)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mw-db-lock-'));
    const file = join(dir, 'x.db');
    const a = Database.open({ sqlitePath: file });
    const b = Database.open({ sqlitePath: file });
    open.push(a, b);
    let runs = 0;
    let running = 0;
    const slow = {
      name: '0001-slow',
      up: async (db: Kysely<any>) => {
        runs++;
        running++;
        assert.equal(running, 1, 'two migrations ran at the same time');
        // A slow migration: the other process must wait for it.
        await sleep(200);
        await db.schema.createTable('slow').addColumn('id', 'text').execute();
        running--;
      },
    };
    const modules = [{ module: 'edge.lock', migrations: [slow] }];
    const [fromA, fromB] = await Promise.all([a.migrate(modules), b.migrate(modules)]);
    assert.equal(runs, 1);
    assert.deepEqual([...fromA, ...fromB], ['edge.lock/0001-slow']);
    assert.deepEqual(await recorded(b), ['edge.lock/0001-slow']);
    assert.ok(!existsSync(`${file}.migrate-lock`), 'the lock file is removed');
  });

  test('pgTestDatabase gives a fresh database and drop() removes it', async (t) => {
    const created = await pgTestDatabase(t);
    if (!created || !pg) return;
    const database = Database.open({ url: created.url, sqlitePath: ':memory:' });
    const tables = await database.db.introspection.getTables();
    assert.deepEqual(tables, []);
    await database.close();
    const name = new URL(created.url).pathname.slice(1);
    assert.match(name, /^mw_test_[0-9a-f]+$/);
    await created.drop();
    await created.drop();
    const other = Database.open({ url: pg.url, sqlitePath: ':memory:' });
    open.push(other);
    const { rows } = await sql`select 1 from pg_database where datname = ${name}`.execute(other.db);
    assert.deepEqual(rows, []);
  });
});
