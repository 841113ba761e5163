/**
 * The embedded log store: every service's log entries in their own SQLite file
 * (`<data-dir>/logs.db`), so that the edge can answer `GET /logs/query` without a system journal.
 *
 * - Times are integer microseconds since the epoch, made strictly increasing by the store: an entry
 *   whose time is not after the previous one gets the previous time + 1 µs. Every entry therefore
 *   has a unique time, which is what makes a timestamp usable as a paging cursor. (This file keeps
 *   its own convention, microseconds, instead of the kernel's epoch milliseconds: it is always
 *   SQLite and the time is the row's key.)
 * - Writes are buffered and land in one transaction per batch: every `flushIntervalMs` (200 ms), as
 *   soon as `batchSize` (500) entries are waiting, on `flush()` and on `close()`. Batches commit in
 *   time order, so a reader always sees every entry up to some time and none after it: a client
 *   that tails with "entries after T" never misses one.
 * - Retention is bounded by entry count and by age, enforced after every flush and on a timer;
 *   both deletions are ranges of the primary key, so they stay cheap.
 */
import { join } from 'node:path';
import { Database, type Migration } from '../db/index.js';
import { LogRepository, type LogEntryRow } from './repository.js';

/** pino's numeric levels. */
export const LOG_LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 } as const;
export type LogLevelName = keyof typeof LOG_LEVELS;
export const LOG_LEVEL_NAMES = Object.keys(LOG_LEVELS) as LogLevelName[];

/** The name of a numeric level; a non-standard number takes the name of the standard level below it. */
export function levelName(level: number): LogLevelName {
  let name: LogLevelName = 'trace';
  for (const n of LOG_LEVEL_NAMES) if (level >= LOG_LEVELS[n]) name = n;
  return name;
}

/** A level name, case-insensitively, or undefined when it is not one. */
export function parseLevelName(text: string): LogLevelName | undefined {
  const lower = text.toLowerCase();
  return (LOG_LEVEL_NAMES as string[]).includes(lower) ? (lower as LogLevelName) : undefined;
}

/** An entry to store. */
export interface NewLogEntry {
  /** When it happened: a Date or epoch milliseconds (a fraction keeps microseconds); default now. */
  time?: Date | number;
  /** pino numeric level or level name. */
  level: number | LogLevelName;
  message: string;
  /** Exact service or module name: `edge`, `edge.auth`, `edge.http`. */
  component: string;
  /** The remaining structured fields. */
  fields?: Record<string, unknown>;
}

/** A stored entry. */
export interface LogRecord {
  /** Microseconds since the epoch, unique in the store. */
  timestamp: number;
  level: LogLevelName;
  message: string;
  component: string;
  fields: Record<string, unknown>;
}

/**
 * A query; all filters combine. Without `start` and `cursor`: the newest `limit` matching
 * entries. `start` (µs) tails forward: the oldest `limit` matching entries after `start`.
 * `cursor` (µs) pages backwards: it names the page whose newest entry is at `cursor`, i.e. the
 * `limit` newest matching entries at or before `cursor`; those are skipped and the `limit`
 * matching entries before them are answered. Sending back the answered cursor with the same
 * `limit` and filters walks through history without overlap or gap.
 */
export interface LogQueryParams {
  /** Page size, 1..1000 (default 100). */
  limit?: number;
  /** Minimum severity: `warn` matches warn, error and fatal. */
  level?: LogLevelName;
  /** Exact component. */
  component?: string;
  /** Case-insensitive substring of the message (ASCII case folding). */
  search?: string;
  start?: number;
  cursor?: number;
}

/** The filters of `hits` and `statistics`: `from` exclusive, `to` inclusive (µs). */
export interface LogAggregateParams {
  level?: LogLevelName;
  component?: string;
  search?: string;
  from?: number;
  to?: number;
}

function aggregateFilter(p: LogAggregateParams) {
  return {
    ...(p.level !== undefined ? { minLevel: LOG_LEVELS[p.level] } : {}),
    ...(p.component !== undefined ? { component: p.component } : {}),
    ...(p.search ? { search: p.search } : {}),
    ...(p.from !== undefined ? { after: p.from } : {}),
    ...(p.to !== undefined ? { atOrBefore: p.to } : {}),
  };
}

export interface LogQueryResult {
  /** Oldest first. */
  entries: LogRecord[];
  /** Time (µs) of the newest entry of the page; on an empty page `start` or `cursor` as given, else null. */
  cursor: number | null;
}

/** What the log routes need of a store. */
export interface LogReader {
  query(params: LogQueryParams): Promise<LogQueryResult>;
}

export interface LogStoreOptions {
  /** Data directory: the store is `<dataDir>/logs.db`. */
  dataDir?: string;
  /** The database file itself (`:memory:` in tests); takes precedence over `dataDir`. */
  sqlitePath?: string;
  /** Most entries kept (default 100,000). */
  maxEntries?: number;
  /** Oldest entry kept, in milliseconds (default 7 days). */
  maxAgeMs?: number;
  /** Longest time an entry waits in the buffer (default 200 ms); 0: only full batches, `flush()`, `close()`. */
  flushIntervalMs?: number;
  /** Entries per transaction; a full batch is written at once (default 500). */
  batchSize?: number;
  /** Retention timer (default 60 s); 0: only after flushes. */
  retentionIntervalMs?: number;
  /** Most entries waiting in the buffer (default 20 batches); beyond, new entries are dropped and counted. */
  maxBuffered?: number;
  /** The clock of age retention, epoch milliseconds (tests). */
  now?: () => number;
  /** Failures of background writes; default one line on stderr. Never the logger: it writes here. */
  onError?: (err: unknown) => void;
}

const MIGRATIONS: Migration[] = [
  {
    name: '0001-create-log-entry',
    async up(db) {
      // `integer primary key` makes the time the SQLite rowid: the table is ordered by it, and
      // range deletions and "newest first" scans need no other index.
      await db.schema
        .createTable('log_entry')
        .addColumn('time_us', 'integer', (c) => c.primaryKey())
        .addColumn('level', 'integer', (c) => c.notNull())
        .addColumn('component', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('fields', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('log_entry_component_time')
        .on('log_entry')
        .columns(['component', 'time_us'])
        .execute();
    },
  },
];

export const LOG_STORE_MODULE = 'kernel.logs';
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

export class LogStore implements LogReader {
  readonly #database: Database;
  readonly #repo: LogRepository;
  readonly #maxEntries: number;
  readonly #maxAgeUs: number;
  readonly #flushIntervalMs: number;
  readonly #batchSize: number;
  readonly #maxBuffered: number;
  readonly #now: () => number;
  readonly #onError: (err: unknown) => void;
  #buffer: LogEntryRow[] = [];
  #lastTime: number;
  #oldestTime: number | null;
  #count: number;
  #dropped = 0;
  #chain: Promise<void> = Promise.resolve();
  #flushTimer: NodeJS.Timeout | null = null;
  #retentionTimer: NodeJS.Timeout | null = null;
  #closed = false;

  private constructor(
    database: Database,
    options: LogStoreOptions,
    stats: { last: number; oldest: number | null; count: number },
  ) {
    this.#database = database;
    this.#repo = new LogRepository(database);
    this.#maxEntries = positive('maxEntries', options.maxEntries ?? 100_000);
    this.#maxAgeUs = positive('maxAgeMs', options.maxAgeMs ?? 7 * 24 * 3600 * 1000) * 1000;
    this.#flushIntervalMs = options.flushIntervalMs ?? 200;
    this.#batchSize = positive('batchSize', options.batchSize ?? 500);
    this.#maxBuffered = Math.max(this.#batchSize, options.maxBuffered ?? 20 * this.#batchSize);
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? defaultOnError();
    this.#lastTime = stats.last;
    this.#oldestTime = stats.oldest;
    this.#count = stats.count;
    const every = options.retentionIntervalMs ?? 60_000;
    if (every > 0) {
      this.#retentionTimer = setInterval(() => {
        this.enforceRetention().catch((err: unknown) => this.#onError(err));
      }, every);
      this.#retentionTimer.unref();
    }
  }

  /** Opens (creating and migrating when needed) the store. */
  static async open(options: LogStoreOptions): Promise<LogStore> {
    const sqlitePath = options.sqlitePath ?? (options.dataDir ? join(options.dataDir, 'logs.db') : undefined);
    if (!sqlitePath) throw new Error('log store: dataDir or sqlitePath is required');
    const database = Database.open({ sqlitePath });
    try {
      await database.migrate([{ module: LOG_STORE_MODULE, migrations: MIGRATIONS }]);
      const { last, oldest, count } = await new LogRepository(database).stats();
      return new LogStore(database, options, { last: last ?? 0, oldest, count });
    } catch (err) {
      await database.close();
      throw err;
    }
  }

  /** Entries waiting in the buffer. */
  get pending(): number {
    return this.#buffer.length;
  }

  /** Entries refused because the buffer was full or their batch failed to write. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Buffers an entry; answers its stored time (µs), or undefined when the store is closed or the
   * buffer is full.
   */
  append(entry: NewLogEntry): number | undefined {
    if (this.#closed) return undefined;
    if (this.#buffer.length >= this.#maxBuffered) {
      this.#dropped++;
      return undefined;
    }
    const t = entry.time;
    const wanted =
      t === undefined ? Date.now() * 1000 : Math.round((typeof t === 'number' ? t : t.getTime()) * 1000);
    const time = Number.isFinite(wanted) && wanted > this.#lastTime ? wanted : this.#lastTime + 1;
    this.#lastTime = time;
    this.#buffer.push({
      time_us: time,
      level: typeof entry.level === 'number' ? Math.trunc(entry.level) : LOG_LEVELS[entry.level],
      component: entry.component,
      message: entry.message,
      fields: safeJson(entry.fields ?? {}),
    });
    if (this.#buffer.length === this.#batchSize) {
      this.#flushInBackground();
    } else if (this.#flushTimer === null && this.#flushIntervalMs > 0) {
      this.#flushTimer = setTimeout(() => this.#flushInBackground(), this.#flushIntervalMs);
      this.#flushTimer.unref();
    }
    return time;
  }

  /**
   * Writes every buffered entry, one transaction per batch, then applies retention. Rejects when
   * a batch failed (its entries are dropped and counted); later flushes still run.
   */
  flush(): Promise<void> {
    return this.#enqueue(() => this.#drain());
  }

  /** Deletes what is beyond the count and age bounds; answers the number of entries deleted. */
  enforceRetention(): Promise<number> {
    let deleted = 0;
    return this.#enqueue(async () => {
      deleted = await this.#retain();
    }).then(() => deleted);
  }

  async query(params: LogQueryParams): Promise<LogQueryResult> {
    const limit = params.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new RangeError(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    if (params.start !== undefined && params.cursor !== undefined) {
      throw new RangeError('start and cursor cannot be combined');
    }
    const filter = {
      ...(params.level !== undefined ? { minLevel: LOG_LEVELS[params.level] } : {}),
      ...(params.component !== undefined ? { component: params.component } : {}),
      ...(params.search ? { search: params.search } : {}),
    };
    let rows: LogEntryRow[];
    if (params.start !== undefined) {
      rows = await this.#repo.find({ ...filter, after: params.start, order: 'asc', limit });
    } else if (params.cursor !== undefined) {
      rows = await this.#repo.find({
        ...filter,
        atOrBefore: params.cursor,
        order: 'desc',
        limit,
        offset: limit,
      });
      rows.reverse();
    } else {
      rows = await this.#repo.find({ ...filter, order: 'desc', limit });
      rows.reverse();
    }
    const entries = rows.map(toRecord);
    const newest = entries[entries.length - 1];
    return { entries, cursor: newest ? newest.timestamp : (params.start ?? params.cursor ?? null) };
  }

  /**
   * Counts of the matching entries in `(from, to]` (µs) per bucket of `bucketUs` and per level:
   * `{ start (µs), counts: { level: n } }`, oldest bucket first, empty buckets left out.
   */
  async hits(params: LogAggregateParams & { bucketUs: number }) {
    const rows = await this.#repo.buckets(aggregateFilter(params), params.bucketUs);
    const out: { start: number; counts: Partial<Record<LogLevelName, number>> }[] = [];
    for (const r of rows) {
      const start = r.bucket * params.bucketUs;
      let last = out[out.length - 1];
      if (!last || last.start !== start) out.push((last = { start, counts: {} }));
      const name = levelName(r.level);
      last.counts[name] = (last.counts[name] ?? 0) + r.n;
    }
    return out;
  }

  /** Counts per level (with the oldest and newest time, µs) and the `top` components by count. */
  async statistics(params: LogAggregateParams, top = 50) {
    const { levels, components } = await this.#repo.statistics(aggregateFilter(params), top);
    const byLevel: Partial<Record<LogLevelName, number>> = {};
    let count = 0;
    let oldest: number | null = null;
    let newest: number | null = null;
    for (const l of levels) {
      const name = levelName(l.level);
      byLevel[name] = (byLevel[name] ?? 0) + l.n;
      count += l.n;
      oldest = oldest === null ? l.oldest : Math.min(oldest, l.oldest);
      newest = newest === null ? l.newest : Math.max(newest, l.newest);
    }
    return { count, oldest, newest, byLevel, components };
  }

  /** Stops the timers, writes what is buffered and closes the database. Appends after it are ignored. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#retentionTimer) clearInterval(this.#retentionTimer);
    this.#retentionTimer = null;
    try {
      await this.flush();
    } finally {
      await this.#chain;
      await this.#database.close();
    }
  }

  #enqueue(job: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(job);
    this.#chain = run.catch(() => undefined);
    return run;
  }

  #flushInBackground(): void {
    this.flush().catch((err: unknown) => this.#onError(err));
  }

  async #drain(): Promise<void> {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    let failure: unknown;
    while (this.#buffer.length > 0) {
      const batch = this.#buffer.splice(0, this.#batchSize);
      try {
        await this.#repo.insertBatch(batch);
        this.#count += batch.length;
        if (this.#oldestTime === null) this.#oldestTime = batch[0]!.time_us;
      } catch (err) {
        this.#dropped += batch.length;
        failure ??= err;
      }
    }
    await this.#retain();
    if (failure !== undefined)
      throw new Error('log store: a batch of entries could not be written', { cause: failure });
  }

  async #retain(): Promise<number> {
    let deleted = 0;
    const cutoff = this.#now() * 1000 - this.#maxAgeUs;
    if (this.#oldestTime !== null && this.#oldestTime < cutoff) {
      deleted += await this.#repo.deleteBefore(cutoff);
    }
    const excess = this.#count - deleted - this.#maxEntries;
    if (excess > 0) {
      deleted += await this.#repo.deleteOldest(excess);
    }
    if (deleted > 0) {
      this.#count -= deleted;
      this.#oldestTime = await this.#repo.oldest();
    }
    return deleted;
  }
}

function toRecord(row: LogEntryRow): LogRecord {
  let fields: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(row.fields);
    fields =
      parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : {};
  } catch {
    fields = {};
  }
  return {
    timestamp: Number(row.time_us),
    level: levelName(Number(row.level)),
    message: row.message,
    component: row.component,
    fields,
  };
}

function safeJson(fields: Record<string, unknown>): string {
  try {
    return JSON.stringify(fields) ?? '{}';
  } catch {
    return '{"fieldsError":"not serialisable"}';
  }
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`log store: ${name} must be a positive number`);
  return value;
}

function defaultOnError(): (err: unknown) => void {
  let lastReport = 0;
  return (err) => {
    // At most one line a minute: a failing disk must not flood the console.
    const now = Date.now();
    if (now - lastReport < 60_000) return;
    lastReport = now;
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    process.stderr.write(
      `millwright: log store: ${err instanceof Error ? err.message : String(err)}${cause}\n`,
    );
  };
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+\- ])(\d{2}):(\d{2}))$/;

/**
 * Microseconds since the epoch of an RFC 3339 timestamp (any fraction length, `Z` or an offset),
 * or undefined when the text is not one. Digits beyond the microsecond are dropped, which keeps
 * "after T" and "at or before T" exact for times stored in whole microseconds. A space in place of
 * the offset's `+` is read as `+`: it is what an unencoded `+` in a query string becomes.
 */
export function parseLogTime(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, z, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  let second = Number(s);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  let micros = Number((frac ?? '').slice(0, 6).padEnd(6, '0'));
  if (second === 60) {
    // A leap second: the last microsecond of the minute.
    second = 59;
    micros = 999_999;
  }
  let offsetMinutes = 0;
  if (!z) {
    const oHours = Number(oh);
    const oMinutes = Number(om);
    if (oHours > 23 || oMinutes > 59) return undefined;
    offsetMinutes = (sign === '-' ? -1 : 1) * (oHours * 60 + oMinutes);
  }
  date.setUTCHours(hour, minute - offsetMinutes, second, 0);
  return date.getTime() * 1000 + micros;
}

/** RFC 3339 in UTC with microseconds: `2026-11-25T22:10:01.123456Z`. */
export function formatLogTime(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const rest = micros - ms * 1000;
  return `${new Date(ms).toISOString().slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}
