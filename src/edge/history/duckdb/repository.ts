/**
 * The embedded history store: one DuckDB file in the data directory (SQL of the store lives here).
 *
 * Two tables. `hot` takes every flush as it comes (the appender, committed to DuckDB's write-ahead
 * log at once, so a crash loses nothing that was flushed). Once a minute, the minutes that are over
 * move to `cold` sorted by (segment, tag, time), where DuckDB's compression sees each tag's values
 * as one run (RLE of slowly changing values, bit-packed deltas of the times). The time of a cold
 * row is stored as `k = (ts - seg) + tag * SEG_MS`, which grows steadily over a sorted segment
 * even where one tag ends and the next begins, so its deltas pack into a few bits; `ts` is
 * `seg + k - tag * SEG_MS` again on the way out.
 *
 * The same move writes `minute`: per tag and minute, partial aggregates that merge (first and last
 * with their times, min, max, sum, count, and the sums of the time-weighted mean). Aggregates in
 * buckets of whole minutes read those (1,440 rows for a tag's day) and the values still in `hot`;
 * narrower buckets read the values.
 *
 * Retention deletes whole segments of `cold` and `minute` (the oldest first), then checkpoints:
 * DuckDB reuses the freed blocks, so the file stops growing once it reaches the cap.
 */
import { statSync } from 'node:fs';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type {
  AggregateQuery,
  AggregateRow,
  HistoryStore,
  RawQuery,
  Retention,
  Sample,
  SampleBatch,
  ScanQuery,
  StoreStats,
} from '../store.js';
import { tagList } from '../store.js';

/** One segment of `cold`: a minute. */
export const SEG_MS = 60_000;
/** A minute moves to `cold` this long after it ended (late values still land in `hot`). */
const GRACE_MS = 5_000;

const int = (n: number): string => String(Math.trunc(n));

export interface DuckStoreOptions {
  path: string;
  /** DuckDB's memory limit (MB). */
  memoryMb: number;
}

export class DuckStore implements HistoryStore {
  readonly #opts: DuckStoreOptions;
  #instance: DuckDBInstance | undefined;
  #con: DuckDBConnection | undefined;
  /** Appends have a connection of their own: they go on while a minute is moved or a query runs. */
  #appendCon: DuckDBConnection | undefined;
  #deletedByAge = 0;
  #deletedBySize = 0;

  constructor(opts: DuckStoreOptions) {
    this.#opts = opts;
  }

  get #c(): DuckDBConnection {
    if (!this.#con) throw new Error('the history store is closed');
    return this.#con;
  }

  async open(): Promise<Map<string, number>> {
    this.#instance = await DuckDBInstance.create(this.#opts.path, {
      threads: '1',
      memory_limit: `${this.#opts.memoryMb}MB`,
      preserve_insertion_order: 'false',
      // The write-ahead log is folded into the file at 8 MB (and after each minute's move).
      checkpoint_threshold: '8MB',
    });
    this.#con = await this.#instance.connect();
    this.#appendCon = await this.#instance.connect();
    await this.#c.run(
      'create table if not exists tags (id INTEGER primary key, name VARCHAR not null unique)',
    );
    await this.#c.run(
      'create table if not exists hot (tag INTEGER not null, ts BIGINT not null, v DOUBLE, s VARCHAR)',
    );
    await this.#c.run(
      'create table if not exists cold (tag INTEGER not null, seg BIGINT not null, k BIGINT not null, v DOUBLE, s VARCHAR)',
    );
    await this.#c.run(
      'create table if not exists minute (tag INTEGER not null, seg BIGINT not null, first_ts BIGINT, first DOUBLE, ' +
        'last_ts BIGINT, last DOUBLE, min DOUBLE, max DOUBLE, sum DOUBLE, n INTEGER, tw_sum DOUBLE, tw_dt BIGINT)',
    );
    const rows = (await this.#c.runAndReadAll('select id, name from tags')).getRows();
    return new Map(rows.map((r) => [String(r[1]), Number(r[0])]));
  }

  async append(b: SampleBatch): Promise<void> {
    const c = this.#appendCon;
    if (!c) throw new Error('the history store is closed');
    if (b.newTags.length > 0) {
      const app = await c.createAppender('tags');
      for (const [id, name] of b.newTags) {
        app.appendInteger(id);
        app.appendVarchar(name);
        app.endRow();
      }
      app.closeSync();
    }
    if (b.n === 0) return;
    const app = await c.createAppender('hot');
    const s = b.s;
    for (let i = 0; i < b.n; i++) {
      app.appendInteger(b.tag[i]!);
      app.appendBigInt(BigInt(b.ts[i]!));
      const text = s?.[i];
      if (text != null) {
        app.appendNull();
        app.appendVarchar(text);
      } else {
        app.appendDouble(b.v[i]!);
        app.appendNull();
      }
      app.endRow();
    }
    app.closeSync();
  }

  /** Both tables as `(tag, ts, v, s)` over a range of tags and times. */
  #source(tags: number[], from: number, to: number): string {
    const t = tagList(tags);
    const segFrom = Math.floor(from / SEG_MS) * SEG_MS;
    return (
      `select tag, ts, v, s from hot where tag in ${t} and ts >= ${int(from)} and ts < ${int(to)} ` +
      `union all select tag, seg + k - tag * ${SEG_MS} as ts, v, s from cold where tag in ${t} ` +
      `and seg >= ${int(segFrom)} and seg < ${int(to)} and seg + k - tag * ${SEG_MS} >= ${int(from)} ` +
      `and seg + k - tag * ${SEG_MS} < ${int(to)}`
    );
  }

  async raw(q: RawQuery): Promise<{ items: Sample[]; total: number }> {
    const src = this.#source(q.tags, q.from, q.to);
    const total = (await this.#c.runAndReadAll(`select count(*)::DOUBLE from (${src})`)).getRows()[0]![0];
    const rows = (
      await this.#c.runAndReadAll(
        `select tag, ts::DOUBLE, v, s from (${src}) order by ts, tag limit ${int(q.limit)} offset ${int(q.offset)}`,
      )
    ).getRows();
    return { items: rows.map(sampleOf), total: Number(total) };
  }

  async scan(q: ScanQuery): Promise<Sample[]> {
    const src = this.#source([q.tag], q.from, q.to);
    const rows = (
      await this.#c.runAndReadAll(
        `select tag, ts::DOUBLE, v, s from (${src}) order by ts limit ${int(q.limit)} offset ${int(q.skip)}`,
      )
    ).getRows();
    return rows.map(sampleOf);
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    if (q.bucketMs % SEG_MS === 0) return this.#aggregateMinutes(q);
    const w = int(q.bucketMs);
    const end = int(q.end);
    const sql =
      `with b as (select tag, ts, v, (ts // ${w}) * ${w} as bucket, ` +
      `lead(ts) over (partition by tag order by ts) as nts from (${this.#source(q.tags, q.from, q.to)}) where v is not null), ` +
      `d as (select *, greatest(0, least(coalesce(nts, ${end}), bucket + ${w}, ${end}) - ts) as dt from b) ` +
      `select tag, bucket::DOUBLE, arg_min(v, ts), arg_max(v, ts), min(v), max(v), avg(v), count(*)::DOUBLE, ` +
      `sum(v * dt) / nullif(sum(dt), 0) from d group by tag, bucket order by tag, bucket`;
    const rows = (await this.#c.runAndReadAll(sql)).getRows();
    return rows.map((r) => ({
      tag: Number(r[0]),
      bucket: Number(r[1]),
      first: Number(r[2]),
      last: Number(r[3]),
      min: Number(r[4]),
      max: Number(r[5]),
      mean: Number(r[6]),
      count: Number(r[7]),
      twa: r[8] === null ? null : Number(r[8]),
    }));
  }

  /**
   * Partial aggregates per (tag, minute) of `src` rows `(tag, ts, v)`: each value holds until the
   * next one or the end of its minute (capped at `end`).
   */
  static minutePartials(src: string, end: string): string {
    return (
      `select tag, seg, min(ts) as first_ts, arg_min(v, ts) as first, max(ts) as last_ts, arg_max(v, ts) as last, ` +
      `min(v) as min, max(v) as max, sum(v) as sum, count(*)::INTEGER as n, sum(v * dt) as tw_sum, sum(dt)::BIGINT as tw_dt ` +
      `from (select tag, ts, v, seg, greatest(0, least(coalesce(nts, ${end}), seg + ${SEG_MS}, ${end}) - ts) as dt from (` +
      `select tag, ts, v, (ts // ${SEG_MS}) * ${SEG_MS} as seg, lead(ts) over (partition by tag order by ts) as nts from (${src}) where v is not null)) ` +
      `group by tag, seg`
    );
  }

  /** Aggregates in buckets of whole minutes: `minute` rows, and the values still in `hot`. */
  async #aggregateMinutes(q: AggregateQuery): Promise<AggregateRow[]> {
    const w = int(q.bucketMs);
    const t = tagList(q.tags);
    const from = int(Math.floor(q.from / SEG_MS) * SEG_MS);
    const to = int(q.to);
    const hot = `select tag, ts, v from hot where tag in ${t} and ts >= ${from} and ts < ${to}`;
    const sql =
      `with p as (select * from minute where tag in ${t} and seg >= ${from} and seg < ${to} ` +
      `union all ${DuckStore.minutePartials(hot, int(q.end))}) ` +
      `select tag, ((seg // ${w}) * ${w})::DOUBLE as bucket, arg_min(first, first_ts), arg_max(last, last_ts), min(min), max(max), ` +
      `sum(sum) / sum(n), sum(n)::DOUBLE, sum(tw_sum) / nullif(sum(tw_dt), 0) from p group by tag, bucket order by tag, bucket`;
    const rows = (await this.#c.runAndReadAll(sql)).getRows();
    return rows.map((r) => ({
      tag: Number(r[0]),
      bucket: Number(r[1]),
      first: Number(r[2]),
      last: Number(r[3]),
      min: Number(r[4]),
      max: Number(r[5]),
      mean: Number(r[6]),
      count: Number(r[7]),
      twa: r[8] === null ? null : Number(r[8]),
    }));
  }

  async last(tags: number[], at: number): Promise<Sample[]> {
    const t = tagList(tags);
    const a = int(at);
    const sql =
      `select tag, arg_max(ts, ts)::DOUBLE, arg_max(v, ts), arg_max(s, ts) from (` +
      `select tag, ts, v, s from hot where tag in ${t} and ts <= ${a} union all ` +
      `select tag, seg + k - tag * ${SEG_MS}, v, s from cold where tag in ${t} and seg <= ${a} ` +
      `and seg + k - tag * ${SEG_MS} <= ${a}) group by tag order by tag`;
    return (await this.#c.runAndReadAll(sql)).getRows().map(sampleOf);
  }

  async maintain(now: number, retention: Retention): Promise<void> {
    await this.#compact(now);
    if (retention.maxAgeMs > 0) await this.#deleteByAge(now - retention.maxAgeMs);
    if (retention.maxBytes > 0) await this.#deleteBySize(retention.maxBytes);
  }

  /** Moves the minutes that are over from `hot` to `cold`, sorted, in one transaction. */
  async #compact(now: number): Promise<void> {
    const cut = int(Math.floor((now - GRACE_MS) / SEG_MS) * SEG_MS);
    const c = this.#c;
    const n = Number(
      (await c.runAndReadAll(`select count(*)::DOUBLE from hot where ts < ${cut}`)).getRows()[0]![0],
    );
    if (n === 0) return;
    await c.run('begin');
    try {
      await c.run(
        `insert into cold select tag, (ts // ${SEG_MS}) * ${SEG_MS} as seg, ts % ${SEG_MS} + tag * ${SEG_MS}, v, s ` +
          `from hot where ts < ${cut} order by seg, tag, ts`,
      );
      await c.run(
        `insert into minute ${DuckStore.minutePartials(`select tag, ts, v from hot where ts < ${cut}`, String(Number.MAX_SAFE_INTEGER))}`,
      );
      await c.run(`delete from hot where ts < ${cut}`);
      await c.run('commit');
    } catch (err) {
      await c.run('rollback');
      throw err;
    }
    await this.#checkpoint();
  }

  /** Folds the write-ahead log into the file and frees deleted blocks (skipped while appends run). */
  async #checkpoint(): Promise<void> {
    try {
      await this.#c.run('checkpoint');
    } catch {
      // Another transaction (an append) is active: DuckDB's own checkpoint at 8 MB of log follows.
    }
  }

  async #deleteByAge(before: number): Promise<void> {
    const b = int(Math.floor(before / SEG_MS) * SEG_MS);
    await this.#c.run(`delete from minute where seg < ${b}`);
    const r1 = await this.#c.run(`delete from cold where seg < ${b}`);
    const r2 = await this.#c.run(`delete from hot where ts < ${int(before)}`);
    const n = r1.rowsChanged + r2.rowsChanged;
    if (n > 0) {
      this.#deletedByAge += n;
      await this.#checkpoint();
    }
  }

  /** Bytes the file uses (blocks in use) plus the write-ahead log. */
  async #usedBytes(): Promise<{ used: number; file: number }> {
    const r = (
      await this.#c.runAndReadAll(
        'select used_blocks::DOUBLE, block_size::DOUBLE from pragma_database_size()',
      )
    ).getRows()[0]!;
    const wal = fileSize(`${this.#opts.path}.wal`);
    return { used: Number(r[0]) * Number(r[1]) + wal, file: fileSize(this.#opts.path) + wal };
  }

  /**
   * Keeps the store under `maxBytes`: past 80 % of it in use, the oldest segments go until 60 %
   * is left (the rest is room for the minutes being written), then a checkpoint frees their blocks.
   */
  async #deleteBySize(maxBytes: number): Promise<void> {
    const { used } = await this.#usedBytes();
    if (used <= maxBytes * 0.8) return;
    const c = this.#c;
    const segs = (
      await c.runAndReadAll('select seg::DOUBLE, count(*)::DOUBLE from cold group by seg order by seg')
    ).getRows();
    const rows = segs.reduce((a, r) => a + Number(r[1]), 0);
    if (rows === 0) return;
    const perRow = used / rows;
    let excess = used - maxBytes * 0.6;
    let upTo = -Infinity;
    let n = 0;
    for (const r of segs) {
      if (excess <= 0) break;
      upTo = Number(r[0]);
      n += Number(r[1]);
      excess -= Number(r[1]) * perRow;
    }
    if (n === 0) return;
    await c.run(`delete from minute where seg <= ${int(upTo)}`);
    await c.run(`delete from cold where seg <= ${int(upTo)}`);
    this.#deletedBySize += n;
    await this.#checkpoint();
  }

  async stats(): Promise<StoreStats> {
    const c = this.#c;
    const r = (
      await c.runAndReadAll(
        `select (select count(*) from hot)::DOUBLE + (select count(*) from cold)::DOUBLE, (select count(*) from tags)::DOUBLE, ` +
          `least((select min(ts) from hot), (select min(seg + k - tag * ${SEG_MS}) from cold))::DOUBLE, ` +
          `greatest((select max(ts) from hot), (select max(seg + k - tag * ${SEG_MS}) from cold))::DOUBLE`,
      )
    ).getRows()[0]!;
    const { file } = await this.#usedBytes();
    return {
      engine: 'duckdb',
      bytes: file,
      values: Number(r[0]),
      tags: Number(r[1]),
      oldest: r[2] === null ? null : Number(r[2]),
      newest: r[3] === null ? null : Number(r[3]),
      deletedByAge: this.#deletedByAge,
      deletedBySize: this.#deletedBySize,
    };
  }

  async close(): Promise<void> {
    if (!this.#con) return;
    try {
      await this.#con.run('checkpoint');
    } finally {
      this.#appendCon?.closeSync();
      this.#appendCon = undefined;
      this.#con.closeSync();
      this.#con = undefined;
      this.#instance?.closeSync();
      this.#instance = undefined;
    }
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function sampleOf(r: readonly unknown[]): Sample {
  return {
    tag: Number(r[0]),
    ts: Number(r[1]),
    v: r[2] === null || r[2] === undefined ? null : Number(r[2]),
    s: r[3] === null || r[3] === undefined ? null : String(r[3]),
  };
}
