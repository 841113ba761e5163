/**
 * A request-scoped transaction: while a scope is entered (`Database.runInScope`), every query of
 * that asynchronous context, through any repository built on `database.db`, runs in one
 * transaction of the scope, and a repository's own `transaction()` becomes a savepoint in it. The
 * scope's owner ends it (`finish`): it commits everything (with a last write of its own, such as
 * the manager's audit record) or rolls everything back. Repositories need no change to join it.
 *
 * The transaction begins lazily, at the scope's first write (or first nested transaction): reads
 * before it run on the pool as usual, so a handler that only reads holds no connection (on
 * SQLite, no lock). Nested transactions of one scope take turns (a savepoint at a time).
 * Background work started inside a scope and meant to outlive it runs `Database.outsideScope`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

const storage = new AsyncLocalStorage<RequestScope>();
/**
 * Scopes made and not yet ended. While an `AsyncLocalStorage` is enabled (from its first `run`),
 * Node runs its hooks on every promise and async resource of the process: on the manager, about
 * 55 µs of CPU per request of any kind (docs/performance.md). So the storage is disabled once no
 * scope has been open for `IDLE_DISABLE_MS` (a read-only request, a bridged read, never opens
 * one); the next `run` enables it again. Nothing is lost: with no open scope there is no store
 * anyone may read (`currentScope` answers only an active one), and a scope's `run` enables the
 * storage before its context begins.
 *
 * Not at once when the last scope ends: under a steady load of changes the count touches zero
 * between most requests, and disabling and enabling the storage each time (its hook and V8's
 * promise hooks set anew) cost the manager about a tenth of the trail's CPU per change (issue 27,
 * docs/performance.md). A timer checks instead, at most once per `IDLE_DISABLE_MS`.
 */
let open = 0;
/** Scopes made so far: the idle timer disables only if none was made since it was set. */
let made = 0;
const IDLE_DISABLE_MS = 200;
let idleCheck: NodeJS.Timeout | undefined;
let madeWhenArmed = 0;

/** Disables the storage now if no scope is open (the tests call it; the idle timer's end). */
export function disableScopeTrackingIfIdle(): void {
  if (idleCheck) clearTimeout(idleCheck);
  idleCheck = undefined;
  if (open === 0) storage.disable();
}

function armIdleCheck(): void {
  madeWhenArmed = made;
  idleCheck = setTimeout(() => {
    idleCheck = undefined;
    if (open > 0) return; // the last scope to end arms it again
    if (made !== madeWhenArmed) armIdleCheck();
    else storage.disable();
  }, IDLE_DISABLE_MS);
  idleCheck.unref();
}

function scopeEnded(): void {
  if (--open === 0 && !idleCheck) armIdleCheck();
}

/** Whether the scopes' storage currently runs its hooks (for the tests). */
export function scopeTracking(): boolean {
  return (storage as unknown as { enabled?: boolean }).enabled === true;
}

/** Whether a compiled query only reads (it may then run outside the scope's transaction). */
function readsOnly(q: CompiledQuery): boolean {
  const kind = q.query.kind;
  if (kind === 'SelectQueryNode') return true;
  if (kind === 'RawNode') return /^\s*select\b/i.test(q.sql);
  return false;
}

export class RequestScope {
  readonly driver: ScopedDriver;
  readonly handle: ScopedConnection;
  #begin: Promise<DatabaseConnection> | undefined;
  #conn: DatabaseConnection | undefined;
  #active = true;
  #savepoints: string[] = [];
  #n = 0;
  #turn: Promise<void> = Promise.resolve();
  #release: (() => void)[] = [];
  /** What runs after the commit, with the depth of savepoints it was registered at. */
  #afterCommit: { depth: number; fn: () => void }[] = [];

  constructor(driver: ScopedDriver) {
    this.driver = driver;
    this.handle = new ScopedConnection(this);
    open++;
    made++;
  }

  /** True until `finish`: queries of the scope's context go to its transaction. */
  get active(): boolean {
    return this.#active;
  }

  /** Whether the transaction has begun (something was written). */
  get begun(): boolean {
    return this.#begin !== undefined;
  }

  /** The scope's connection, its transaction begun on first need. */
  connection(): Promise<DatabaseConnection> {
    this.#begin ??= (async () => {
      await this.driver.init();
      const c = await this.driver.inner.acquireConnection();
      try {
        await this.driver.inner.beginTransaction(c, {});
      } catch (err) {
        await this.driver.inner.releaseConnection(c);
        throw err;
      }
      this.#conn = c;
      return c;
    })();
    return this.#begin;
  }

  /**
   * Ends the scope: with `commit`, runs `last` (in the scope, so in its transaction) and commits;
   * otherwise rolls back. A scope that never wrote has nothing to commit (`last` still runs, in
   * a transaction of its own making: it begins the scope's).
   */
  async finish(commit: boolean, last?: () => Promise<void>): Promise<void> {
    if (!this.#active) return;
    let ok = commit;
    try {
      if (commit && last) await storage.run(this, last);
    } catch (err) {
      ok = false;
      await this.#end(false);
      throw err;
    }
    await this.#end(ok);
  }

  async #end(commit: boolean): Promise<void> {
    // Counted once, even when two `finish` calls overlap (both past `#active` during `last`).
    if (this.#active) scopeEnded();
    this.#active = false;
    if (!this.#begin) return;
    let conn: DatabaseConnection;
    try {
      conn = await this.#begin;
    } catch {
      return;
    }
    try {
      if (commit) await this.driver.inner.commitTransaction(conn);
      else await this.driver.inner.rollbackTransaction(conn);
    } finally {
      this.#conn = undefined;
      await this.driver.inner.releaseConnection(conn);
    }
    if (commit) for (const a of this.#afterCommit) a.fn();
  }

  /**
   * A nested transaction: a savepoint, one at a time per scope. The first write of a scope that
   * is a nested transaction needs none: its transaction begins there, so undoing the nested one
   * is rolling the whole back (the scope then begins afresh at its next write); two statements
   * fewer for the common handler, whose one write is its repository's transaction.
   */
  async savepoint(): Promise<void> {
    const before = this.#turn;
    let done!: () => void;
    this.#turn = new Promise<void>((r) => (done = r));
    await before;
    try {
      const outermost = !this.#begin;
      const c = await this.connection();
      const name = outermost ? '' : `mw_sp${++this.#n}`;
      if (!outermost) await c.executeQuery(CompiledQuery.raw(`savepoint ${name}`));
      this.#savepoints.push(name);
      this.#release.push(done);
    } catch (err) {
      done();
      throw err;
    }
  }

  async endSavepoint(commit: boolean): Promise<void> {
    const name = this.#savepoints.pop();
    const done = this.#release.pop();
    try {
      if (name === undefined || !this.#conn) return;
      if (!commit) this.#dropAfterCommit(this.#savepoints.length + 1);
      if (name === '') {
        if (!commit) await this.#restart();
        return;
      }
      if (!commit) await this.#conn.executeQuery(CompiledQuery.raw(`rollback to savepoint ${name}`));
      await this.#conn.executeQuery(CompiledQuery.raw(`release savepoint ${name}`));
    } finally {
      done?.();
    }
  }

  /** Rolls the transaction back to the scope's start: as if nothing had been written yet. */
  async #restart(): Promise<void> {
    const conn = this.#conn!;
    this.#begin = undefined;
    this.#conn = undefined;
    try {
      await this.driver.inner.rollbackTransaction(conn);
    } finally {
      await this.driver.inner.releaseConnection(conn);
    }
  }

  /** Runs `fn` once the scope has committed (not after a rollback, its savepoint's included). */
  afterCommit(fn: () => void): void {
    this.#afterCommit.push({ depth: this.#savepoints.length, fn });
  }

  #dropAfterCommit(depth: number): void {
    this.#afterCommit = this.#afterCommit.filter((a) => a.depth < depth);
  }
}

/** The connection Kysely holds inside a scope: reads before the first write go to the pool. */
export class ScopedConnection implements DatabaseConnection {
  constructor(readonly scope: RequestScope) {}

  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    if (!this.scope.begun && readsOnly(q)) {
      const inner = this.scope.driver.inner;
      const c = await inner.acquireConnection();
      try {
        return await c.executeQuery<R>(q);
      } finally {
        await inner.releaseConnection(c);
      }
    }
    return (await this.scope.connection()).executeQuery<R>(q);
  }

  async *streamQuery<R>(q: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    const c = await this.scope.connection();
    yield* c.streamQuery<R>(q, chunkSize);
  }
}

/** The dialect's driver, routing the queries of an entered scope to the scope's transaction. */
export class ScopedDriver implements Driver {
  readonly inner: Driver;
  #init: Promise<void> | undefined;

  constructor(inner: Driver) {
    this.inner = inner;
  }

  init(): Promise<void> {
    return (this.#init ??= this.inner.init());
  }

  acquireConnection(): Promise<DatabaseConnection> {
    const scope = storage.getStore();
    if (scope?.active && scope.driver === this) return Promise.resolve(scope.handle);
    return this.inner.acquireConnection();
  }

  beginTransaction(conn: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (conn instanceof ScopedConnection) return conn.scope.savepoint();
    return this.inner.beginTransaction(conn, settings);
  }

  commitTransaction(conn: DatabaseConnection): Promise<void> {
    if (conn instanceof ScopedConnection) return conn.scope.endSavepoint(true);
    return this.inner.commitTransaction(conn);
  }

  rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    if (conn instanceof ScopedConnection) return conn.scope.endSavepoint(false);
    return this.inner.rollbackTransaction(conn);
  }

  async savepoint(
    conn: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    const c = conn instanceof ScopedConnection ? await conn.scope.connection() : conn;
    await this.inner.savepoint?.(c, name, compile);
  }

  async rollbackToSavepoint(
    conn: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    const c = conn instanceof ScopedConnection ? await conn.scope.connection() : conn;
    await this.inner.rollbackToSavepoint?.(c, name, compile);
  }

  async releaseSavepoint(
    conn: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    const c = conn instanceof ScopedConnection ? await conn.scope.connection() : conn;
    await this.inner.releaseSavepoint?.(c, name, compile);
  }

  releaseConnection(conn: DatabaseConnection): Promise<void> {
    if (conn instanceof ScopedConnection) return Promise.resolve();
    return this.inner.releaseConnection(conn);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** `inner` with its driver wrapped (see the file comment); `driverOf` answers the wrapper. */
export function scopedDialect(inner: Dialect): { dialect: Dialect; driver: () => ScopedDriver } {
  let driver: ScopedDriver | undefined;
  return {
    dialect: {
      createDriver: () => (driver = new ScopedDriver(inner.createDriver())),
      createQueryCompiler: () => inner.createQueryCompiler(),
      createAdapter: () => inner.createAdapter(),
      createIntrospector: (db) => inner.createIntrospector(db),
    },
    driver: () => {
      if (!driver) throw new Error('the database has no driver yet');
      return driver;
    },
  };
}

/** Runs `fn` with `scope` entered: its queries (and what they start) join the scope's transaction. */
export function runInScope<T>(scope: RequestScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** Runs `fn` outside any scope (background work started by a request that outlives it). */
export function outsideScope<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** The scope of the current context, if one is entered and active. */
export function currentScope(): RequestScope | undefined {
  const s = storage.getStore();
  return s?.active ? s : undefined;
}
