/**
 * The database layer: one query layer (Kysely) over SQLite (better-sqlite3, the embedded default)
 * or PostgreSQL (when a database URL is configured), and one forward-only migration runner.
 *
 * This folder is the only place in the code base that knows which dialect it talks to.
 * Conventions that keep module code dialect-neutral:
 * - identifiers are text (UUIDs or other strings), never auto-increment columns;
 * - times are epoch milliseconds in `bigint` columns (read back as JavaScript numbers on both);
 * - booleans are `integer` 0/1 columns;
 * - structured values are JSON in `text` columns.
 */
import { closeSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { createRequire } from 'node:module';
import type PgModule from 'pg';
import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  sql,
  type Dialect,
  type Transaction,
} from 'kysely';
import { RequestScope, outsideScope, runInScope, scopedDialect, type ScopedDriver } from './request-scope.js';
import { wantsArrays } from './array-rows.js';

export { sql, CompiledQuery };
export { eachArray, selectArrays } from './array-rows.js';
export {
  RequestScope,
  currentScope,
  disableScopeTrackingIfIdle,
  outsideScope,
  scopeTracking,
} from './request-scope.js';
export type { Kysely, Transaction };

/**
 * No module's tables: the database as the kernel hands it out (`Database.db`, the transaction of
 * `Database.transaction`). It answers no query by itself; a module's repository views it through
 * the module's own interface of tables with `typed<XTables>(db)` (or `database.typed<XTables>()`).
 */
export type NoTables = Record<never, never>;
/** The database of no module in particular (see `NoTables`). */
export type Db = Kysely<NoTables>;
/** A transaction of no module in particular, handed from module to module (see `NoTables`). */
export type Tx = Transaction<NoTables>;

/**
 * `db` (the database or a transaction, of any module) seen through the tables `T`: the one place
 * where a table type is put on the database. Kysely's own `withTables` would need `T` to have an
 * index signature, which the modules' table interfaces (rightly) do not have.
 */
export function typed<T>(db: Transaction<NoTables>): Transaction<T>;
export function typed<T>(db: Kysely<NoTables>): Kysely<T>;
export function typed<T>(db: Kysely<NoTables>): Kysely<T> {
  return db as unknown as Kysely<T>;
}

export type DialectName = 'sqlite' | 'postgres';

/**
 * The dialect of `db` (the database or a transaction): for a migration, which is handed no
 * `Database`, when the two dialects need different statements (a table rebuilt on SQLite only).
 */
export function dialectOf(db: Kysely<NoTables>): DialectName {
  return db.getExecutor().adapter instanceof SqliteAdapter ? 'sqlite' : 'postgres';
}

export interface DatabaseOptions {
  /** `postgres://...` to use PostgreSQL; when absent, SQLite at `sqlitePath`. */
  url?: string | undefined;
  /** File of the embedded SQLite database (`:memory:` for tests). */
  sqlitePath: string;
  /** Pool size for PostgreSQL (default 10). */
  poolSize?: number;
}

/** One migration of one module. Names sort in the order they run (`0001-create-device`). */
export interface Migration {
  name: string;
  /**
   * `db` has no table types: a migration builds the schema as it was at its time; a data
   * statement names the tables of that time (`typed<{ ... }>(db)`), never a repository's.
   */
  up(db: Db): Promise<void>;
}

export interface ModuleMigrations {
  /** The owning module, e.g. `edge.auth`. */
  module: string;
  migrations: Migration[];
}

let pgLoaded: typeof PgModule | undefined;

/**
 * The pg driver, loaded with the first PostgreSQL database (a service on SQLite never loads it:
 * it costs memory). PostgreSQL returns int8 and numeric as strings by default; Millwright stores
 * epoch milliseconds and counters in bigint columns, all well inside Number.MAX_SAFE_INTEGER.
 */
export function pgDriver(): typeof PgModule {
  if (pgLoaded) return pgLoaded;
  const pg = createRequire(import.meta.url)('pg') as typeof PgModule;
  pg.types.setTypeParser(20, (v) => Number(v));
  pg.types.setTypeParser(1700, (v) => Number(v));
  return (pgLoaded = pg);
}

/**
 * Has a client answer a query marked by `selectArrays` with arrays of values (Kysely calls
 * `query(text, values)` and reads `rows`).
 */
function answerArrays(client: PgModule.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const patched = (...args: unknown[]) =>
    args.length === 2 && typeof args[0] === 'string' && wantsArrays(args[0])
      ? query({ text: args[0], values: args[1], rowMode: 'array' })
      : query(...args);
  client.query = patched as typeof client.query;
}

/** The kernel's own table (the migrations applied). */
interface KernelTables {
  mw_migration: { module: string; name: string; applied_at: number };
}

/** Prepared statements kept per SQLite connection, by SQL text (the least recently used go). */
export const SQLITE_STATEMENT_CACHE = 256;

/**
 * The connection as Kysely sees it, with its prepared statements kept: Kysely prepares every query
 * anew, which costs as much as running a small one. A kept statement busy in an iteration (a
 * streamed query) is not handed out again; a fresh one is prepared instead. SQLite recompiles a
 * kept statement by itself after a schema change.
 */
function cachedStatements(db: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const prepare = (source: string): SQLite.Statement => {
    const kept = cache.get(source);
    if (kept && !kept.busy) {
      cache.delete(source);
      cache.set(source, kept);
      return kept;
    }
    const stmt = db.prepare(source);
    if (wantsArrays(source)) stmt.raw(true);
    if (!kept) {
      if (cache.size >= SQLITE_STATEMENT_CACHE) cache.delete(cache.keys().next().value!);
      cache.set(source, stmt);
    }
    return stmt;
  };
  return new Proxy(db, {
    get(target, key) {
      if (key === 'prepare') return prepare;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

export class Database {
  readonly db: Db;
  readonly dialect: DialectName;
  #closed = false;

  /** The SQLite file (not for `:memory:`), for the cross-process migration lock. */
  readonly #sqliteFile: string | undefined;
  readonly #driver: () => ScopedDriver;

  private constructor(inner: Dialect, dialect: DialectName, sqliteFile?: string) {
    const scoped = scopedDialect(inner);
    this.db = new Kysely<NoTables>({ dialect: scoped.dialect });
    this.#driver = scoped.driver;
    this.dialect = dialect;
    this.#sqliteFile = sqliteFile;
  }

  static open(options: DatabaseOptions): Database {
    if (options.url) {
      if (!/^postgres(ql)?:\/\//.test(options.url)) {
        throw new Error(`unsupported database URL "${redactUrl(options.url)}": expected postgres://...`);
      }
      const pool = new (pgDriver().Pool)({ connectionString: options.url, max: options.poolSize ?? 10 });
      // An idle client that loses its server must not crash the process; the next query fails instead.
      pool.on('error', () => undefined);
      pool.on('connect', answerArrays);
      return new Database(new PostgresDialect({ pool }), 'postgres');
    }
    if (options.sqlitePath !== ':memory:') mkdirSync(dirname(options.sqlitePath), { recursive: true });
    const sqlite = new SQLite(options.sqlitePath);
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    // Another process (the CLI while the service runs) may hold the write lock for a moment.
    sqlite.pragma('busy_timeout = 5000');
    return new Database(
      new SqliteDialect({ database: cachedStatements(sqlite) }),
      'sqlite',
      options.sqlitePath === ':memory:' ? undefined : options.sqlitePath,
    );
  }

  /** The database seen through the tables `T` (a module's repository; see `typed`). */
  typed<T>(): Kysely<T> {
    return typed<T>(this.db);
  }

  /**
   * Runs `fn` in one transaction: everything it writes lands, or nothing does. The transaction has
   * no table types; each repository it is handed to views it through its own (`typed`).
   */
  transaction<T>(fn: (trx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  /**
   * A request-scoped transaction (`request-scope.ts`): enter it with `runInScope`, end it with
   * `scope.finish(commit, last)`. Every query of the entered context joins it.
   */
  openScope(): RequestScope {
    return new RequestScope(this.#driver());
  }

  /** Runs `fn` with `scope` entered (see `openScope`). */
  runInScope<T>(scope: RequestScope, fn: () => T): T {
    return runInScope(scope, fn);
  }

  /** Runs `fn` outside any request scope: background work that must not join a request's transaction. */
  outsideScope<T>(fn: () => T): T {
    return outsideScope(fn);
  }

  /**
   * Applies the migrations not yet applied, module by module, each in its own transaction
   * together with its bookkeeping row. Forward only: a recorded migration that no longer exists
   * in the code stops the start before anything is applied, since the database is newer than
   * the code.
   */
  async migrate(modules: ModuleMigrations[]): Promise<string[]> {
    const applied: string[] = [];
    await this.withMigrationLock(async (untyped) => {
      const db = typed<KernelTables>(untyped);
      await db.schema
        .createTable('mw_migration')
        .ifNotExists()
        .addColumn('module', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('applied_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('mw_migration_pk', ['module', 'name'])
        .execute();
      const rows = await db.selectFrom('mw_migration').select(['module', 'name']).execute();
      const done = new Set(rows.map((r) => `${r.module}/${r.name}`));
      for (const mod of modules) {
        const known = new Set(mod.migrations.map((m) => `${mod.module}/${m.name}`));
        for (const row of rows) {
          const id = `${row.module}/${row.name}`;
          if (row.module === mod.module && !known.has(id)) {
            throw new Error(
              `database has migration "${id}" that this version of Millwright does not know; ` +
                'it was written by a newer version',
            );
          }
        }
      }
      for (const mod of modules) {
        const sorted = [...mod.migrations].sort((a, b) => a.name.localeCompare(b.name));
        for (const m of sorted) {
          if (done.has(`${mod.module}/${m.name}`)) continue;
          await untyped.transaction().execute(async (trx) => {
            await m.up(trx);
            await typed<KernelTables>(trx)
              .insertInto('mw_migration')
              .values({ module: mod.module, name: m.name, applied_at: Date.now() })
              .execute();
          });
          applied.push(`${mod.module}/${m.name}`);
        }
      }
    });
    return applied;
  }

  /**
   * Runs `fn` while holding the migration lock, handing it the connection to use. On PostgreSQL
   * that is the one connection holding the advisory lock (so a pool of one cannot deadlock).
   */
  private async withMigrationLock(fn: (db: Db) => Promise<void>): Promise<void> {
    if (this.dialect === 'postgres') {
      // Two processes starting at once against one PostgreSQL database take turns.
      await this.db.connection().execute(async (conn) => {
        await sql`select pg_advisory_lock(7405812)`.execute(conn);
        try {
          await fn(conn);
        } finally {
          await sql`select pg_advisory_unlock(7405812)`.execute(conn);
        }
      });
      return;
    }
    if (!this.#sqliteFile) {
      await fn(this.db);
      return;
    }
    // Two processes opening one SQLite file at once (the service and the CLI on a fresh data
    // directory) take turns through a lock file beside it; a lock older than a minute is stale.
    const lock = `${this.#sqliteFile}.migrate-lock`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        closeSync(openSync(lock, 'wx'));
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        try {
          if (Date.now() - statSync(lock).mtimeMs > 60_000) rmSync(lock, { force: true });
        } catch {
          // removed by its owner in the meantime
        }
        if (Date.now() > deadline) throw new Error(`timed out waiting for the migration lock ${lock}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    try {
      await fn(this.db);
    } finally {
      rmSync(lock, { force: true });
    }
  }

  /** Whether an error is a unique-constraint violation, on either dialect. */
  static isUniqueViolation(err: unknown): boolean {
    const e = err as { code?: string; message?: string } | undefined;
    return (
      e?.code === '23505' ||
      e?.code === 'SQLITE_CONSTRAINT_UNIQUE' ||
      e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
    );
  }

  /** Case-insensitive LIKE operator of the dialect, for `Contains` filters. */
  get ilike(): 'ilike' | 'like' {
    return this.dialect === 'postgres' ? 'ilike' : 'like';
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.db.destroy();
  }
}

/** A database URL with its password replaced, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
