/** The log store's table (`log_entry`, see `log-store.ts` for its conventions), through the query layer. */
import { sql, type Database, type Kysely } from '../db/index.js';

export interface LogEntryRow {
  time_us: number;
  level: number;
  component: string;
  message: string;
  fields: string;
}

/** The log store's tables as Kysely sees them (`MIGRATIONS` of log-store.ts). */
export interface LogTables {
  log_entry: LogEntryRow;
}

/** A read of entries: all filters combine; `order` and the bounds are the store's paging. */
export interface LogRowQuery {
  minLevel?: number;
  component?: string;
  /** Case-insensitive substring of the message (ASCII case folding). */
  search?: string;
  /** Only entries after this time (µs), oldest first. */
  after?: number;
  /** Only entries at or before this time (µs), newest first, skipping `offset` of them. */
  atOrBefore?: number;
  order: 'asc' | 'desc';
  limit: number;
  offset?: number;
}

export class LogRepository {
  readonly #db: Kysely<LogTables>;

  constructor(database: Database) {
    this.#db = database.typed<LogTables>();
  }

  /** The newest and oldest times (µs) and the count of entries. */
  async stats(): Promise<{ last: number | null; oldest: number | null; count: number }> {
    const row = await this.#db
      .selectFrom('log_entry')
      .select((eb) => [
        eb.fn.max('time_us').as('last'),
        eb.fn.min('time_us').as('oldest'),
        eb.fn.countAll().as('count'),
      ])
      .executeTakeFirstOrThrow();
    return {
      last: row.last === null ? null : Number(row.last),
      oldest: row.oldest === null ? null : Number(row.oldest),
      count: Number(row.count),
    };
  }

  /** Writes `batch` in one transaction. */
  async insertBatch(batch: LogEntryRow[]): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.insertInto('log_entry').values(batch).execute();
    });
  }

  find(q: LogRowQuery): Promise<LogEntryRow[]> {
    let query = this.#db.selectFrom('log_entry').selectAll();
    if (q.minLevel !== undefined) query = query.where('level', '>=', q.minLevel);
    if (q.component !== undefined) query = query.where('component', '=', q.component);
    if (q.search) {
      // SQLite's LIKE is case-insensitive for ASCII letters; % and _ of the text are literal.
      const pattern = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where(sql<boolean>`message like ${pattern} escape '\\'`);
    }
    if (q.after !== undefined) query = query.where('time_us', '>', q.after);
    if (q.atOrBefore !== undefined) query = query.where('time_us', '<=', q.atOrBefore);
    query = query.orderBy('time_us', q.order).limit(q.limit);
    if (q.offset !== undefined) query = query.offset(q.offset);
    return query.execute();
  }

  /** Deletes the entries older than `cutoff` (µs); answers how many. */
  async deleteBefore(cutoff: number): Promise<number> {
    const r = await this.#db.deleteFrom('log_entry').where('time_us', '<', cutoff).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** Deletes the `count` oldest entries; answers how many. */
  async deleteOldest(count: number): Promise<number> {
    // The time of the newest entry to delete: `count` steps along the primary key from the oldest.
    const r = await this.#db
      .deleteFrom('log_entry')
      .where('time_us', '<=', (eb) =>
        eb
          .selectFrom('log_entry')
          .select('time_us')
          .orderBy('time_us', 'asc')
          .limit(1)
          .offset(count - 1),
      )
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** The time (µs) of the oldest entry, or null when there is none. */
  async oldest(): Promise<number | null> {
    const row = await this.#db
      .selectFrom('log_entry')
      .select((eb) => eb.fn.min('time_us').as('oldest'))
      .executeTakeFirst();
    return row?.oldest == null ? null : Number(row.oldest);
  }
}
