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

/** The filters and time bounds of a read; all combine. */
export interface LogRowFilter {
  minLevel?: number;
  component?: string;
  search?: string;
  after?: number;
  atOrBefore?: number;
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

  /** The entries matching `q`'s filters and bounds (no order, no limit). */
  #filtered(q: LogRowFilter) {
    let query = this.#db.selectFrom('log_entry');
    if (q.minLevel !== undefined) query = query.where('level', '>=', q.minLevel);
    if (q.component !== undefined) query = query.where('component', '=', q.component);
    if (q.search) {
      // SQLite's LIKE is case-insensitive for ASCII letters; % and _ of the text are literal.
      const pattern = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query = query.where(sql<boolean>`message like ${pattern} escape '\\'`);
    }
    if (q.after !== undefined) query = query.where('time_us', '>', q.after);
    if (q.atOrBefore !== undefined) query = query.where('time_us', '<=', q.atOrBefore);
    return query;
  }

  find(q: LogRowQuery): Promise<LogEntryRow[]> {
    let query = this.#filtered(q).selectAll().orderBy('time_us', q.order).limit(q.limit);
    if (q.offset !== undefined) query = query.offset(q.offset);
    return query.execute();
  }

  /** Counts of the matching entries per time bucket (`floor(time_us / bucketUs)`) and level. */
  async buckets(q: LogRowFilter, bucketUs: number): Promise<{ bucket: number; level: number; n: number }[]> {
    const rows = await this.#filtered(q)
      .select((eb) => [
        sql<number>`time_us / ${bucketUs}`.as('bucket'),
        'level',
        eb.fn.countAll<number>().as('n'),
      ])
      .groupBy([sql`time_us / ${bucketUs}`, 'level'])
      .orderBy('bucket')
      .execute();
    return rows.map((r) => ({ bucket: Number(r.bucket), level: Number(r.level), n: Number(r.n) }));
  }

  /** Counts, oldest and newest time per level, and the `top` components by count. */
  async statistics(q: LogRowFilter, top: number) {
    const levels = await this.#filtered(q)
      .select((eb) => [
        'level',
        eb.fn.countAll<number>().as('n'),
        eb.fn.min('time_us').as('oldest'),
        eb.fn.max('time_us').as('newest'),
      ])
      .groupBy('level')
      .execute();
    const components = await this.#filtered(q)
      .select((eb) => ['component', eb.fn.countAll<number>().as('n')])
      .groupBy('component')
      .orderBy('n', 'desc')
      .limit(top)
      .execute();
    return {
      levels: levels.map((r) => ({
        level: Number(r.level),
        n: Number(r.n),
        oldest: Number(r.oldest),
        newest: Number(r.newest),
      })),
      components: components.map((r) => ({ component: r.component, n: Number(r.n) })),
    };
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
