/**
 * Test helpers for code that must work on both database dialects.
 *
 * - `pgTestDatabase()` creates a fresh, uniquely named PostgreSQL database (`mw_test_<random>`) on
 *   the server at `MILLWRIGHT_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`)
 *   and returns its URL and a `drop()`. When the server is unreachable it prints why and returns
 *   null, so the caller can skip; with `CI=true` it throws instead, since CI must run these tests.
 * - `forEachDialect(name, body)` declares the same suite twice, on SQLite and on PostgreSQL, and
 *   hands the body a context with a fresh `Database`:
 *
 *       forEachDialect('devices repository', (ctx) => {
 *         before(() => ctx.database.migrate(deviceMigrations));
 *         test('creates a device', async () => { ... ctx.database.db ... });
 *       });
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { Database, redactUrl, type DatabaseOptions, type DialectName } from '../../src/kernel/db/index.js';

const adminUrl = process.env.MILLWRIGHT_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface PgTestDatabase {
  /** URL of the new, empty database. */
  url: string;
  /** Ends every connection to the database and drops it; safe to call twice. */
  drop(): Promise<void>;
}

/** What `pgTestDatabase` may use of a test context: skip the test, and drop the database after it. */
interface SkippableContext {
  skip(message?: string): void;
  after?(fn: () => Promise<void>): void;
}

/**
 * Creates a fresh PostgreSQL database for a test. Returns null (after printing the reason, and
 * calling `t.skip` when a test context is given) if PostgreSQL is unreachable; throws in CI.
 * With a test context, the database is also dropped when the test ends.
 */
export async function pgTestDatabase(t?: SkippableContext): Promise<PgTestDatabase | null> {
  const reason = await pgUnreachableReason();
  if (reason) {
    t?.skip(reason);
    return null;
  }
  const name = `mw_test_${randomBytes(6).toString('hex')}`;
  await withAdmin((admin) => admin.query(`create database "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await withAdmin(async (admin) => {
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
      await admin.query(`drop database if exists "${name}"`);
    });
  };
  t?.after?.(drop);
  return { url: url.toString(), drop };
}

let probe: Promise<string | null> | undefined;

/** Null when PostgreSQL answers; otherwise the reason to skip (printed once). Throws in CI. */
function pgUnreachableReason(): Promise<string | null> {
  probe ??= withAdmin(async () => null).catch((err: unknown) => {
    const detail = err instanceof Error ? err.message || err.name : String(err);
    const where = redactUrl(adminUrl);
    if (process.env.CI === 'true') {
      throw new Error(`PostgreSQL is required in CI but is unreachable at ${where}: ${detail}`);
    }
    const reason = `PostgreSQL unreachable at ${where} (${detail}); set MILLWRIGHT_TEST_PG_URL to run it`;
    console.log(`# skipping PostgreSQL suite: ${reason}`);
    return reason;
  });
  return probe;
}

async function withAdmin<T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

export interface DialectContext {
  readonly dialect: DialectName;
  /** The suite's database: fresh and empty when the suite starts (use it from hooks and tests). */
  readonly database: Database;
  /** Another fresh, empty database. */
  fresh(): Promise<Database>;
  /**
   * A second handle on the same storage as `database` (its own connection pool, or its own
   * connection to the same SQLite file), as another process would open it.
   */
  reopen(database: Database, options?: Partial<DatabaseOptions>): Database;
}

/**
 * Declares `describe(name)` with the body run twice: `sqlite` (a file in a temp folder) and
 * `postgres` (skipped with the printed reason when PostgreSQL is unreachable, failing in CI).
 * Every database the context opens is closed, and dropped or deleted, when the suite ends.
 */
export function forEachDialect(name: string, body: (ctx: DialectContext) => void): void {
  describe(name, () => {
    describe('sqlite', () => {
      const dir = mkdtempSync(join(tmpdir(), 'mw-test-'));
      let n = 0;
      dialectSuite('sqlite', async () => ({ sqlitePath: join(dir, `db-${++n}.sqlite`) }), body);
      after(() => rmSync(dir, { recursive: true, force: true }));
    });
    describe('postgres', async () => {
      const reason = await pgUnreachableReason();
      if (reason) {
        test('PostgreSQL cases', { skip: reason }, () => undefined);
        return;
      }
      const drops: Array<() => Promise<void>> = [];
      dialectSuite(
        'postgres',
        async () => {
          const created = (await pgTestDatabase())!;
          drops.push(created.drop);
          return { url: created.url, sqlitePath: ':memory:' };
        },
        body,
      );
      after(async () => {
        for (const drop of drops) await drop();
      });
    });
  });
}

function dialectSuite(
  dialect: DialectName,
  create: () => Promise<DatabaseOptions>,
  body: (ctx: DialectContext) => void,
): void {
  const open: Database[] = [];
  const optionsOf = new WeakMap<Database, DatabaseOptions>();
  let main: Database | undefined;
  const track = (options: DatabaseOptions) => {
    const database = Database.open(options);
    open.push(database);
    optionsOf.set(database, options);
    return database;
  };
  const ctx: DialectContext = {
    dialect,
    get database() {
      if (!main) throw new Error('ctx.database is available from before() hooks and tests on');
      return main;
    },
    fresh: async () => track(await create()),
    reopen(database, options) {
      const base = optionsOf.get(database);
      if (!base) throw new Error('reopen() takes a database this context opened');
      return track({ ...base, ...options });
    },
  };
  before(async () => {
    main = await ctx.fresh();
  });
  body(ctx);
  // Registered after the body's own hooks, so it runs after them. Bounded, so that a test that
  // leaves a connection stuck fails instead of hanging the run.
  after(
    async () => {
      for (const database of open.reverse()) await database.close();
    },
    { timeout: 10_000 },
  );
}
