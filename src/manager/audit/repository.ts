/** The audit trail's tables; no other module reads or writes them. */
import {
  CompiledQuery,
  currentScope,
  sql,
  type Database,
  type DialectName,
  type Kysely,
} from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';
import { runList, type ListDefinition, type ListPage, type ListSpec } from '../../kernel/paging.js';

export interface AuditRow {
  seq: number;
  id: string;
  at: number;
  actor: string;
  actor_name: string | null;
  company_id: string | null;
  project_id: string | null;
  module: string;
  action: string;
  origin: string;
  target: string | null;
  outcome: string;
  status: number | null;
  request_id: string | null;
  details: string;
  legacy_id: string | null;
  prev_hash: string;
  hash: string;
}

/**
 * The head row: the retention's base (the seq and hash the oldest record kept follows) and a
 * mark (`seq`, `hash`: a record the chain reached, moved every `HEAD_MARK_EVERY` records).
 */
export interface HeadRow {
  id: number;
  seq: number;
  hash: string;
  base_seq: number;
  base_hash: string;
}

export interface ChainHead {
  seq: number;
  hash: string;
  baseSeq: number;
  baseHash: string;
  markSeq: number;
  markHash: string;
}

export interface ActivityRow {
  id: string;
  at: number;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  actor: string | null;
  request_id: string | null;
}

export interface LegacyRow {
  id: string;
  at: number;
  username: string | null;
  context: string;
  message: string;
}

export interface AuditTables {
  audit_record: AuditRow;
  audit_head: HeadRow;
  audit_setting: { key: string; value: string };
  audit_api_activity: ActivityRow;
  audit_legacy_log: LegacyRow;
}

/** The filters of the record lists and exports (all optional, ANDed). */
export interface AuditFilter {
  from?: number | undefined;
  to?: number | undefined;
  action?: string | undefined;
  module?: string | undefined;
  origin?: string | undefined;
  actor?: string | undefined;
  projectId?: string | undefined;
  companyId?: string | undefined;
  outcome?: string | undefined;
  /** Contained (ignoring case) in the action, target, actor or details. */
  text?: string | undefined;
}

export const AUDIT_LIST: ListDefinition = {
  fields: {
    time: { column: 'at', type: 'integer' },
    seq: { column: 'seq', type: 'integer' },
    action: 'action',
    module: 'module',
    origin: 'origin',
    actor: 'actor',
    outcome: 'outcome',
    projectId: 'project_id',
    companyId: 'company_id',
    target: 'target',
  },
  tiebreak: 'seq',
  defaultSort: [{ field: 'seq', order: 'desc' }],
  maxLimit: 1000,
};

export const ACTIVITY_LIST: ListDefinition = {
  fields: {
    time: { column: 'at', type: 'integer' },
    method: 'method',
    path: 'path',
    status: { column: 'status', type: 'integer' },
    actor: 'actor',
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'time', order: 'desc' }],
  maxLimit: 1000,
};

/** A new record as the service seals it, given its place in the chain. */
export type Sealer = (seq: number, prevHash: string) => AuditRow;

/** The chain's end as an append left it: `seq` and `hash` of the last record. */
interface ChainEnd {
  seq: number;
  hash: string;
}

/** One record in 64 moves the head row's mark (see `appendIn`). */
export const HEAD_MARK_EVERY = 64;

/**
 * The transaction-scoped advisory lock PostgreSQL appenders take in turn (released by their commit
 * or rollback; it writes no page). SQLite's write lock does the same there.
 */
const APPEND_LOCK = 27_000_027;

/** Places tried for one record before the append gives up (each a record another appender took). */
const APPEND_TRIES = 100;

/** The columns of a record, in the order of its insert's parameters. */
const RECORD_COLUMNS = [
  'seq',
  'id',
  'at',
  'actor',
  'actor_name',
  'company_id',
  'project_id',
  'module',
  'action',
  'origin',
  'target',
  'outcome',
  'status',
  'request_id',
  'details',
  'legacy_id',
  'prev_hash',
  'hash',
] as const;

/**
 * The record's insert, written once per dialect (`?` or `$n` placeholders): built from a `sql`
 * template and compiled on every change, it cost five times the statement's JavaScript.
 */
export const INSERT_RECORD: Record<DialectName, string> = {
  sqlite: insertText(() => '?'),
  postgres: insertText((i) => `$${i + 1}`),
};

function insertText(placeholder: (i: number) => string): string {
  return `insert into audit_record (${RECORD_COLUMNS.join(', ')}) values (${RECORD_COLUMNS.map((_, i) =>
    placeholder(i),
  ).join(', ')}) on conflict (seq) do nothing`;
}

/** Inserts `r` unless its seq is taken (another appender's record): whether it was inserted. */
async function insertRecord(db: Kysely<AuditTables>, dialect: DialectName, r: AuditRow): Promise<boolean> {
  const res = await db.executeQuery(
    CompiledQuery.raw(
      INSERT_RECORD[dialect],
      RECORD_COLUMNS.map((c) => r[c]),
    ),
  );
  return Number(res.numAffectedRows ?? 0) === 1;
}

/** The chain's end as the database has it: the last record, or the base when none is left. */
async function chainEnd(db: Kysely<AuditTables>): Promise<ChainEnd> {
  const last = (await sql<ChainEnd>`select seq, hash from audit_record order by seq desc limit 1`.execute(db))
    .rows[0];
  if (last) return { seq: Number(last.seq), hash: last.hash };
  const head = (
    await sql<{
      base_seq: number;
      base_hash: string;
    }>`select base_seq, base_hash from audit_head where id = 1`.execute(db)
  ).rows[0];
  if (!head) throw new Error('the audit chain has no head row');
  return { seq: Number(head.base_seq), hash: head.base_hash };
}

/**
 * The statements of an append, on `db` (a transaction already). Written as plain SQL: they run on
 * every change the manager makes, and the query builder cost as much as the statements.
 *
 * The chain's end is the last record (no head row written per record: it was one more B-tree
 * page in every commit). With `guess` (where this process's last committed append left the
 * chain) the record is sealed and inserted in one statement; when its seq is taken (another
 * manager on the same PostgreSQL appended, or another transaction of this one did) the insert
 * does nothing, and the end is read and the record sealed again. The primary key on `seq` keeps
 * one record per place, so the chain never forks: on PostgreSQL a second insert of one seq waits
 * for the first transaction and does nothing if it commits. A guess is only ever a committed
 * record (`append` moves it after the commit), so a record never follows one rolled back.
 * On PostgreSQL appenders first take an advisory lock until their commit (`lock`): without it,
 * concurrent transactions all tried the same seq and tried again one after another (a manager on
 * PostgreSQL spent three times the CPU per request); with it, at most one retry each.
 *
 * One record in `HEAD_MARK_EVERY` also moves the head row's mark (its `seq` and `hash`), in the
 * same transaction: verify then names records removed from the end, up to the last mark.
 */
async function appendIn(
  db: Kysely<AuditTables>,
  dialect: DialectName,
  seal: Sealer,
  guess: () => ChainEnd | undefined,
  lock: boolean,
): Promise<AuditRow> {
  if (lock) await sql`select pg_advisory_xact_lock(${APPEND_LOCK})`.execute(db);
  // Guessed once the lock is held: the appender before has committed and moved the guess.
  let end = guess();
  for (let tries = 0; tries < APPEND_TRIES; tries++) {
    end ??= await chainEnd(db);
    const r = seal(end.seq + 1, end.hash);
    if (await insertRecord(db, dialect, r)) {
      if (r.seq % HEAD_MARK_EVERY === 0)
        await sql`update audit_head set seq = ${r.seq}, hash = ${r.hash} where id = 1 and seq < ${r.seq}`.execute(
          db,
        );
      return r;
    }
    end = undefined;
  }
  throw new Error(`no place in the audit chain after ${APPEND_TRIES} tries (other appenders took each)`);
}

export class AuditRepository {
  readonly database: Database;
  readonly #db: Kysely<AuditTables>;
  readonly settings: SettingsTable;
  /** Where this process's last committed append left the chain: a guess, checked by the insert. */
  #end: ChainEnd | undefined;

  constructor(database: Database) {
    this.database = database;
    this.#db = database.typed<AuditTables>();
    this.settings = new SettingsTable(database.db, 'audit_setting');
  }

  /**
   * Appends one record at the chain's end, in one transaction: the request's when one is entered
   * (its commit or rollback covers the record with the change; no savepoint of its own, two
   * statements fewer per call), else its own. See `appendIn` for how two appenders (two managers
   * on one PostgreSQL) keep one chain.
   */
  async append(seal: Sealer): Promise<AuditRow> {
    const scope = currentScope();
    const lock = this.database.dialect === 'postgres';
    if (scope) {
      // The lock must be taken in the scope's transaction: begin it (a read would go to the pool).
      if (lock) await scope.connection();
      const r = await appendIn(this.#db, this.database.dialect, seal, () => this.#end, lock);
      scope.afterCommit(() => this.#moved(r));
      return r;
    }
    const r = await this.#db
      .transaction()
      .execute((trx) => appendIn(trx, this.database.dialect, seal, () => this.#end, lock));
    this.#moved(r);
    return r;
  }

  /** A committed append: the next one guesses the chain ends there (never moving the guess back). */
  #moved(r: AuditRow): void {
    if (!this.#end || r.seq > this.#end.seq) this.#end = { seq: r.seq, hash: r.hash };
  }

  /**
   * The chain's head (its last record, or the retention's base when none is left), the base, and
   * the head row's mark: a record the chain must still reach (see `appendIn`).
   */
  async head(): Promise<ChainHead> {
    const row = await this.#db
      .selectFrom('audit_head')
      .selectAll()
      .where('id', '=', 1)
      .executeTakeFirstOrThrow();
    const last = await this.#db
      .selectFrom('audit_record')
      .select(['seq', 'hash'])
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    return {
      seq: last ? Number(last.seq) : Number(row.base_seq),
      hash: last ? last.hash : row.base_hash,
      baseSeq: Number(row.base_seq),
      baseHash: row.base_hash,
      markSeq: Number(row.seq),
      markHash: row.hash,
    };
  }

  #filtered(f: AuditFilter) {
    let q = this.#db.selectFrom('audit_record').selectAll();
    if (f.from !== undefined) q = q.where('at', '>=', f.from);
    if (f.to !== undefined) q = q.where('at', '<=', f.to);
    if (f.action !== undefined) q = q.where('action', '=', f.action);
    if (f.module !== undefined) q = q.where('module', '=', f.module);
    if (f.origin !== undefined) q = q.where('origin', '=', f.origin);
    if (f.actor !== undefined)
      q = q.where((eb) => eb.or([eb('actor', '=', f.actor!), eb('actor_name', '=', f.actor!)]));
    if (f.projectId !== undefined) q = q.where('project_id', '=', f.projectId);
    if (f.companyId !== undefined) q = q.where('company_id', '=', f.companyId);
    if (f.outcome !== undefined) q = q.where('outcome', '=', f.outcome);
    if (f.text !== undefined && f.text !== '') {
      const pattern = `%${f.text.replace(/[!%_]/g, (c) => `!${c}`)}%`;
      const op = sql.raw(this.database.ilike);
      q = q.where(
        (eb) =>
          sql<boolean>`(${eb.ref('action')} ${op} ${pattern} escape '!' or ${eb.ref('target')} ${op} ${pattern} escape '!' or ${eb.ref('actor_name')} ${op} ${pattern} escape '!' or ${eb.ref('details')} ${op} ${pattern} escape '!')`,
      );
    }
    return q;
  }

  list(filter: AuditFilter, spec: ListSpec): Promise<ListPage<AuditRow>> {
    return runList(this.database, this.#filtered(filter), AUDIT_LIST, spec);
  }

  /**
   * The matching records in chain order, `batch` at a time (keyset on `seq`: constant memory
   * however many match).
   */
  async *scan(filter: AuditFilter, batch = 1000, limit = Number.MAX_SAFE_INTEGER): AsyncGenerator<AuditRow> {
    let after = -1;
    let left = limit;
    while (left > 0) {
      const rows = await this.#filtered(filter)
        .where('seq', '>', after)
        .orderBy('seq')
        .limit(Math.min(batch, left))
        .execute();
      for (const r of rows) yield r;
      if (rows.length < Math.min(batch, left)) return;
      left -= rows.length;
      after = Number(rows[rows.length - 1]!.seq);
    }
  }

  async count(filter: AuditFilter): Promise<number> {
    const r = await this.#filtered(filter)
      .clearSelect()
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Modules and their actions, with how many records each has. */
  categories(): Promise<{ module: string; action: string; n: number }[]> {
    return this.#db
      .selectFrom('audit_record')
      .select(['module', 'action', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy(['module', 'action'])
      .orderBy('module')
      .orderBy('action')
      .limit(10_000)
      .execute();
  }

  /**
   * Removes the records older than `before` (retention), oldest first, at most `max`; the head
   * keeps the seq and hash the oldest kept record follows, so that verify still checks it.
   */
  prune(before: number, max: number): Promise<number> {
    return this.#db.transaction().execute(async (trx) => {
      const last = await trx
        .selectFrom('audit_record')
        .select(['seq', 'hash'])
        .where('at', '<', before)
        .orderBy('seq')
        .limit(1)
        .offset(Math.max(0, max - 1))
        .executeTakeFirst();
      const cut =
        last ??
        (await trx
          .selectFrom('audit_record')
          .select(['seq', 'hash'])
          .where('at', '<', before)
          .orderBy('seq', 'desc')
          .limit(1)
          .executeTakeFirst());
      if (!cut) return 0;
      const gone = await trx.deleteFrom('audit_record').where('seq', '<=', cut.seq).executeTakeFirst();
      await trx
        .updateTable('audit_head')
        .set({ base_seq: cut.seq, base_hash: cut.hash })
        .where('id', '=', 1)
        .execute();
      return Number(gone.numDeletedRows);
    });
  }

  // --- the request log ------------------------------------------------------------------------

  async addActivity(rows: ActivityRow[]): Promise<void> {
    if (rows.length > 0) await this.#db.insertInto('audit_api_activity').values(rows).execute();
  }

  listActivity(spec: ListSpec): Promise<ListPage<ActivityRow>> {
    return runList(this.database, this.#db.selectFrom('audit_api_activity').selectAll(), ACTIVITY_LIST, spec);
  }

  async pruneActivity(before: number): Promise<number> {
    const r = await this.#db.deleteFrom('audit_api_activity').where('at', '<', before).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  // --- the older store --------------------------------------------------------------------------

  /** Rows of the older action log after `afterId` (by time, then id), `limit` at most. */
  legacyAfter(after: { at: number; id: string } | null, limit: number): Promise<LegacyRow[]> {
    let q = this.#db.selectFrom('audit_legacy_log').selectAll();
    if (after)
      q = q.where((eb) =>
        eb.or([eb('at', '>', after.at), eb.and([eb('at', '=', after.at), eb('id', '>', after.id)])]),
      );
    return q.orderBy('at').orderBy('id').limit(limit).execute();
  }

  async legacyCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('audit_legacy_log')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async migratedCount(): Promise<number> {
    const r = await this.#db
      .selectFrom('audit_record')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('legacy_id', 'is not', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async hasLegacy(id: string): Promise<boolean> {
    const r = await this.#db
      .selectFrom('audit_record')
      .select('seq')
      .where('legacy_id', '=', id)
      .executeTakeFirst();
    return r !== undefined;
  }

  /** For tests and `millwright manager` imports of an older store: rows of the older action log. */
  async addLegacy(rows: LegacyRow[]): Promise<void> {
    if (rows.length > 0) await this.#db.insertInto('audit_legacy_log').values(rows).execute();
  }
}
