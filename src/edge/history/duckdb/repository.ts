/**
 * The embedded history store: DuckDB files in a directory of the data directory (the SQL of the
 * store lives here; file names and sizes in files.ts).
 *
 * - `catalog.duckdb`: the tags (id, name).
 * - `hot-<n>.duckdb`: every flush as it comes (`hot`: tag, ts, v; `hot_text` for text values),
 *   appended in data chunks and committed to DuckDB's write-ahead log at once, so a crash loses
 *   nothing that was flushed.
 * - `seg-<n>.duckdb`: segments. Once a minute is over, a move writes the hot values of the minutes
 *   that are over into the newest segment, sorted by (minute, tag, time), where DuckDB compresses
 *   each tag's run (RLE of slowly changing values, bit-packed deltas of the times). The time of a
 *   `cold` row is `k = (ts - seg) + tag * SEG_MS`, which grows steadily over a sorted minute even
 *   where one tag ends and the next begins (a tag read every second ends near second 59 of the
 *   minute and the next tag begins near second 0: a step of about a second, like the steps within
 *   a tag), so DuckDB packs every delta of a group into a few bits. (`span`, stored per row, was
 *   the minute's measured length before: a step of 0.75 s at each tag's end widened every
 *   group's deltas by 3 bits. Such segments stay readable.) The same move
 *   writes `minute`: per tag and minute, partial aggregates that merge (first and last with their
 *   times, min, max, sum, count, the sums of the time-weighted mean). A segment takes moves until
 *   it holds a sixteenth of the size cap (1 to 256 MiB) or a new UTC day begins.
 *
 * A move rotates the hot file: appends go on in `hot-<n+1>`, the values not moved are copied
 * there (with `copied(n, cut)` in the same transaction), the moved ones go to the segment (with
 * `moved(n, cut)` in the same transaction), then `hot-<n>` is deleted. No file is ever rewritten in
 * place, so none keeps freed blocks: retention deletes whole segment files, and the size on disk
 * is the files' size. After a crash between those steps, the open finishes the move (recover).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type {
  AggregateColumns,
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
import { AGGREGATE_COLUMNS, aggregateRows, tagList } from '../store.js';
import { bucketize } from '../aggregate.js';
import { appendColumns, dbBytes, dbPath, dirBytes, numbered, readDoubles, removeDb } from './files.js';

/** One minute: the unit of the moves and of the partial aggregates. */
export const SEG_MS = 60_000;
/** A minute moves this long after it ended (late values still land in the hot file). */
const GRACE_MS = 5_000;
const DAY_MS = 86_400_000;
const KIB = 1024;
/** DuckDB's block of the segment files (its default: DuckDB compresses only in blocks of this size). */
const BLOCK = 256 * KIB;
/** The hot file's block: small (nothing there is compressed; an empty hot file then takes 44 KiB). */
const HOT_BLOCK = 16 * KIB;

const int = (n: number): string => String(Math.trunc(n));

export interface DuckStoreOptions {
  /** The store's directory (created when missing). */
  dir: string;
  /** DuckDB's memory limit (MB). */
  memoryMb: number;
}

interface DbFile {
  n: number;
  alias: string;
  path: string;
}

interface Segment extends DbFile {
  /** First and last minute held (epoch ms; Infinity/-Infinity when empty). */
  minSeg: number;
  maxSeg: number;
  bytes: number;
}

/**
 * Numbers go to `cold32` (FLOAT) when a 32-bit float holds them exactly (integers up to 2^24, a
 * float32 tag's values), to `cold` (DOUBLE) otherwise: half the room for a value that changes.
 */
const COLD_TABLES = ['cold', 'cold32'] as const;

/** `cold` rows' time (see the top: `seg` is the move's first time in the minute, `span` its length). */
const COLD_TS = `seg + k - tag::BIGINT * span`;

export class DuckStore implements HistoryStore {
  readonly #opts: DuckStoreOptions;
  #instance: DuckDBInstance | undefined;
  #con: DuckDBConnection | undefined;
  /** Appends have a connection of their own: they go on while a minute is moved or a query runs. */
  #appendCon: DuckDBConnection | undefined;
  #hot: DbFile | undefined;
  #segs: Segment[] = [];
  /** The append in progress (a rotation waits for it before copying from the old hot file). */
  #inflight: Promise<void> = Promise.resolve();
  #retention: Retention = { maxAgeMs: 0, maxBytes: 0 };
  #deletedByAge = 0;
  #deletedBySize = 0;

  constructor(opts: DuckStoreOptions) {
    this.#opts = opts;
  }

  get #c(): DuckDBConnection {
    if (!this.#con) throw new Error('the history store is closed');
    return this.#con;
  }

  get #h(): DbFile {
    if (!this.#hot) throw new Error('the history store is closed');
    return this.#hot;
  }

  async #rows(sql: string): Promise<unknown[][]> {
    return (await this.#c.runAndReadAll(sql)).getRows() as unknown[][];
  }

  async #num(sql: string): Promise<number> {
    const v = (await this.#rows(sql))[0]?.[0];
    return v === null || v === undefined ? NaN : Number(v);
  }

  /** Statements in one transaction (they may write to one database file only). */
  async #tx(statements: string[]): Promise<void> {
    const c = this.#c;
    await c.run('begin');
    try {
      for (const s of statements) await c.run(s);
      await c.run('commit');
    } catch (err) {
      await c.run('rollback');
      throw err;
    }
  }

  async open(): Promise<Map<string, number>> {
    const dir = this.#opts.dir;
    mkdirSync(dir, { recursive: true });
    this.#instance = await DuckDBInstance.create(join(dir, 'catalog.duckdb'), {
      threads: '1',
      memory_limit: `${this.#opts.memoryMb}MB`,
      // Kept (the default): a move's `insert ... order by` must land in that order, or the
      // compression of the sorted runs is lost.
      preserve_insertion_order: 'true',
      checkpoint_threshold: '16MB',
    });
    this.#con = await this.#instance.connect();
    this.#appendCon = await this.#instance.connect();
    await this.#c.run(
      // No key or index: the recorder hands each name its id once (an index doubles the file).
      'create table if not exists tags (id INTEGER not null, name VARCHAR not null)',
    );
    const moved = new Map<number, number>();
    for (const n of numbered(dir, 'seg')) {
      const seg = await this.#attachSegment(n);
      for (const r of await this.#rows(`select hot, cut from ${seg.alias}.moved`))
        moved.set(Number(r[0]), Number(r[1]));
    }
    const hots = numbered(dir, 'hot');
    this.#hot = await this.#attachHot(hots.at(-1) ?? 1);
    for (const x of hots.slice(0, -1)) await this.#recover(x, moved.get(x));
    const rows = await this.#rows('select id, name from tags');
    return new Map(rows.map((r) => [String(r[1]), Number(r[0])]));
  }

  async #attachHot(n: number): Promise<DbFile> {
    const f = { n, alias: `h${n}`, path: dbPath(this.#opts.dir, 'hot', n) };
    await this.#c.run(`attach '${f.path}' as ${f.alias} (BLOCK_SIZE ${HOT_BLOCK})`);
    await this.#c.run(`create table if not exists ${f.alias}.hot (tag INTEGER, ts DOUBLE, v DOUBLE)`);
    await this.#c.run(`create table if not exists ${f.alias}.hot_text (tag INTEGER, ts DOUBLE, s VARCHAR)`);
    await this.#c.run(`create table if not exists ${f.alias}.copied (hot BIGINT, lo DOUBLE)`);
    return f;
  }

  async #attachSegment(n: number): Promise<Segment> {
    const path = dbPath(this.#opts.dir, 'seg', n);
    const a = `s${n}`;
    await this.#c.run(`attach '${path}' as ${a} (BLOCK_SIZE ${BLOCK})`);
    await this.#c.run(
      `create table if not exists ${a}.cold (tag INTEGER not null, seg BIGINT not null, span INTEGER not null, ` +
        'k BIGINT not null, v DOUBLE not null)',
    );
    await this.#c.run(
      `create table if not exists ${a}.cold32 (tag INTEGER not null, seg BIGINT not null, span INTEGER not null, ` +
        'k BIGINT not null, v FLOAT not null)',
    );
    await this.#c.run(`create table if not exists ${a}.cold_text (tag INTEGER, ts BIGINT, s VARCHAR)`);
    await this.#c.run(
      `create table if not exists ${a}.minute (tag INTEGER not null, seg BIGINT not null, first DOUBLE not null, ` +
        'last DOUBLE, min DOUBLE, max DOUBLE, sum DOUBLE, n INTEGER not null, tw_sum DOUBLE, tw_dt INTEGER not null)',
    );
    await this.#c.run(`create table if not exists ${a}.moved (hot BIGINT, cut DOUBLE)`);
    const seg: Segment = { n, alias: a, path, minSeg: Infinity, maxSeg: -Infinity, bytes: 0 };
    await this.#measure(seg);
    this.#segs.push(seg);
    this.#segs.sort((x, y) => x.n - y.n);
    return seg;
  }

  /** A segment's first and last minute, and its size on disk. */
  async #measure(seg: Segment): Promise<void> {
    const r = (
      await this.#rows(
        `select min(seg)::DOUBLE, max(seg)::DOUBLE from (select seg from ${seg.alias}.minute union all ` +
          `select (ts // ${SEG_MS}) * ${SEG_MS} from ${seg.alias}.cold_text)`,
      )
    )[0]!;
    seg.minSeg = r[0] === null ? Infinity : Number(r[0]);
    seg.maxSeg = r[1] === null ? -Infinity : Number(r[1]);
    seg.bytes = dbBytes(seg.path);
  }

  /**
   * Finishes the move of an older hot file `x` (a crash came between a rotation's steps): its values
   * neither copied to the current hot file (`copied`) nor moved to a segment (`moved`) are copied
   * now, then it is deleted.
   */
  async #recover(x: number, movedCut: number | undefined): Promise<void> {
    const old = await this.#attachHot(x);
    const cur = this.#h.alias;
    const lo = await this.#num(`select min(lo) from ${cur}.copied where hot = ${int(x)}`);
    const conds = ['true'];
    if (!Number.isNaN(lo)) conds.push(`ts < ${lo}`);
    if (movedCut !== undefined) conds.push(`ts >= ${movedCut}`);
    const where = conds.join(' and ');
    await this.#tx([
      `insert into ${cur}.hot select * from ${old.alias}.hot where ${where}`,
      `insert into ${cur}.hot_text select * from ${old.alias}.hot_text where ${where}`,
      `insert into ${cur}.copied values (${int(x)}, '-infinity'::DOUBLE)`,
    ]);
    await this.#c.run(`detach ${old.alias}`);
    removeDb(old.path);
  }

  async append(b: SampleBatch): Promise<void> {
    const run = this.#append(b);
    this.#inflight = run.catch(() => undefined);
    return run;
  }

  async #append(b: SampleBatch): Promise<void> {
    const c = this.#appendCon;
    if (!c) throw new Error('the history store is closed');
    const alias = this.#h.alias;
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
    const s = b.s;
    let { tag, ts, v } = b;
    let n = b.n;
    if (s !== null && s.some((x) => x !== null)) {
      const text = await c.createAppender('hot_text', 'main', alias);
      const keep: number[] = [];
      for (let i = 0; i < b.n; i++) {
        const str = s[i];
        if (str == null) {
          keep.push(i);
          continue;
        }
        text.appendInteger(b.tag[i]!);
        text.appendDouble(b.ts[i]!);
        text.appendVarchar(str);
        text.endRow();
      }
      text.closeSync();
      n = keep.length;
      tag = Int32Array.from(keep, (i) => b.tag[i]!);
      ts = Float64Array.from(keep, (i) => b.ts[i]!);
      v = Float64Array.from(keep, (i) => b.v[i]!);
    }
    if (n === 0) return;
    const app = await c.createAppender('hot', 'main', alias);
    appendColumns(app, tag, ts, v, n);
    app.closeSync();
  }

  /** True when the store is over its size cap: the worker then runs `maintain` at once. */
  overCap(): boolean {
    const max = this.#retention.maxBytes;
    return max > 0 && this.#con !== undefined && dirBytes(this.#opts.dir) > max;
  }

  get retention(): Retention {
    return this.#retention;
  }

  /** The segments holding minutes of [from, to). */
  #segsOf(from: number, to: number): Segment[] {
    const segFrom = Math.floor(from / SEG_MS) * SEG_MS;
    return this.#segs.filter((s) => s.maxSeg >= segFrom && s.minSeg < to);
  }

  /**
   * Every file's values as `(tag, ts, v, s)` over a range of tags and times (`numeric`: no text),
   * oldest file first (the segments, then the hot file), so that each tag's values come in time
   * order and the sweep of narrow buckets (aggregate.ts) need not sort them: with the hot file
   * first, a 100-tag hour went through a comparator sort of its 360,000 values (190 of 250 ms).
   */
  #source(tags: number[], from: number, to: number, numeric = false): string {
    const t = tagList(tags);
    const f = int(from);
    const e = int(to);
    const h = this.#h.alias;
    const parts: string[] = [];
    const segFrom = int(Math.floor(from / SEG_MS) * SEG_MS);
    for (const s of this.#segsOf(from, to)) {
      for (const table of COLD_TABLES)
        parts.push(
          `select tag, (${COLD_TS})::DOUBLE as ts, v::DOUBLE as v, NULL::VARCHAR as s from ${s.alias}.${table} ` +
            `where tag in ${t} and seg >= ${segFrom} and seg < ${e} and ${COLD_TS} >= ${f} and ${COLD_TS} < ${e}`,
        );
      if (!numeric)
        parts.push(
          `select tag, ts::DOUBLE as ts, NULL::DOUBLE as v, s from ${s.alias}.cold_text where tag in ${t} and ts >= ${f} and ts < ${e}`,
        );
    }
    parts.push(
      `select tag, ts, v, NULL::VARCHAR as s from ${h}.hot where tag in ${t} and ts >= ${f} and ts < ${e}`,
    );
    if (!numeric)
      parts.push(
        `select tag, ts, NULL::DOUBLE as v, s from ${h}.hot_text where tag in ${t} and ts >= ${f} and ts < ${e}`,
      );
    return parts.join(' union all ');
  }

  async raw(q: RawQuery): Promise<{ items: Sample[]; total: number }> {
    const src = this.#source(q.tags, q.from, q.to);
    const total = await this.#num(`select count(*)::DOUBLE from (${src})`);
    const rows = await this.#rows(
      `select tag, ts::DOUBLE, v, s from (${src}) order by ts, tag limit ${int(q.limit)} offset ${int(q.offset)}`,
    );
    return { items: rows.map(sampleOf), total };
  }

  async scan(q: ScanQuery): Promise<Sample[]> {
    const src = this.#source([q.tag], q.from, q.to);
    const rows = await this.#rows(
      `select tag, ts::DOUBLE, v, s from (${src}) order by ts limit ${int(q.limit)} offset ${int(q.skip)}`,
    );
    return rows.map(sampleOf);
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    return aggregateRows(await this.aggregateColumns(q));
  }

  /**
   * Aggregates as typed columns (what the worker hands over). Whole-minute buckets merge the
   * segments' `minute` rows in SQL; narrower ones read the values and sweep them (aggregate.ts).
   */
  async aggregateColumns(q: AggregateQuery): Promise<AggregateColumns> {
    if (q.bucketMs % SEG_MS !== 0) {
      const sql = `select tag::DOUBLE, ts::DOUBLE, v from (${this.#source(q.tags, q.from, q.to, true)})`;
      const [tag, ts, v] = readDoubles(await this.#c.run(sql), 3);
      return bucketize({ tag: tag!, ts: ts!, v: v! }, q.bucketMs, q.end);
    }
    const cols = readDoubles(await this.#c.run(this.#minutesSql(q)), AGGREGATE_COLUMNS.length);
    return Object.fromEntries(AGGREGATE_COLUMNS.map((name, i) => [name, cols[i]!])) as AggregateColumns;
  }

  /**
   * Partial aggregates per (tag, minute) of `src` rows `(tag, ts, v)`: each value holds until the
   * next one or the end of its minute (capped at `end`). A minute whose values are all equal (most
   * minutes of a slowly changing tag) keeps `first`, `n` and `tw_dt` only: `last`, `min`, `max`,
   * `sum` and `tw_sum` are NULL and follow from them (see MINUTE_COLUMNS), so they take no room.
   */
  static minutePartials(src: string, end: string): string {
    const same = 'min(v) = max(v)';
    const unless = (x: string) => `case when ${same} then NULL else ${x} end`;
    return (
      `select tag, seg, arg_min(v, ts) as first, ${unless('arg_max(v, ts)')} as last, ${unless('min(v)')} as min, ` +
      `${unless('max(v)')} as max, ${unless('sum(v)')} as sum, count(*)::INTEGER as n, ${unless('sum(v * dt)')} as tw_sum, ` +
      `sum(dt)::INTEGER as tw_dt ` +
      `from (select tag, ts, v, seg, greatest(0, least(coalesce(nts, ${end}), seg + ${SEG_MS}, ${end}) - ts) as dt from (` +
      `select tag, ts, v, (ts // ${SEG_MS}) * ${SEG_MS} as seg, lead(ts) over (partition by tag order by ts) as nts from (${src}))) ` +
      `group by tag, seg`
    );
  }

  /** Buckets of whole minutes: the segments' `minute` rows, and the values still in the hot file. */
  #minutesSql(q: AggregateQuery): string {
    const w = int(q.bucketMs);
    const t = tagList(q.tags);
    const from = int(Math.floor(q.from / SEG_MS) * SEG_MS);
    const to = int(q.to);
    const hot = `select tag, ts::BIGINT as ts, v from ${this.#h.alias}.hot where tag in ${t} and ts >= ${from} and ts < ${to}`;
    const parts = this.#segsOf(q.from, q.to).map(
      (s) => `select * from ${s.alias}.minute where tag in ${t} and seg >= ${from} and seg < ${to}`,
    );
    parts.push(DuckStore.minutePartials(hot, int(q.end)));
    return (
      `with p as (${parts.join(' union all ')}) ` +
      `select tag::DOUBLE, ((seg // ${w}) * ${w})::DOUBLE as bucket, arg_min(first, seg), arg_max(coalesce(last, first), seg), ` +
      `min(coalesce(min, first)), max(coalesce(max, first)), sum(coalesce(sum, first * n)) / sum(n), sum(n)::DOUBLE, ` +
      `coalesce(sum(coalesce(tw_sum, first * tw_dt)) / nullif(sum(tw_dt), 0), 'NaN'::DOUBLE) ` +
      `from p group by tag, bucket order by tag, bucket`
    );
  }

  async last(tags: number[], at: number): Promise<Sample[]> {
    const src = this.#source(tags, 0, at + 1);
    return (
      await this.#rows(
        `select tag, max(ts)::DOUBLE, arg_max(v, ts), arg_max(s, ts) from (${src}) group by tag order by tag`,
      )
    ).map(sampleOf);
  }

  async maintain(now: number, retention: Retention): Promise<void> {
    this.#retention = { ...retention };
    await this.#compact(Math.floor((now - GRACE_MS) / SEG_MS) * SEG_MS);
    if (retention.maxAgeMs > 0) await this.#deleteByAge(now - retention.maxAgeMs);
    if (retention.maxBytes > 0) await this.#deleteBySize(retention.maxBytes);
  }

  /** Moves the hot values before `cut` to a segment, rotating the hot file (see the top). */
  async #compact(cut: number): Promise<void> {
    const old = this.#h;
    const range = (
      await this.#rows(
        `select count(*)::DOUBLE, min(ts)::DOUBLE, max(ts)::DOUBLE from (select ts from ${old.alias}.hot where ts < ${cut} ` +
          `union all select ts from ${old.alias}.hot_text where ts < ${cut})`,
      )
    )[0]!;
    if (Number(range[0]) === 0) return;
    const next = await this.#attachHot(old.n + 1);
    this.#hot = next;
    await this.#inflight;
    await this.#tx([
      `insert into ${next.alias}.hot select * from ${old.alias}.hot where ts >= ${cut}`,
      `insert into ${next.alias}.hot_text select * from ${old.alias}.hot_text where ts >= ${cut}`,
      `insert into ${next.alias}.copied values (${int(old.n)}, ${cut})`,
    ]);
    const seg = await this.#target(Number(range[2]));
    const src = `select tag, floor(ts)::BIGINT as ts, v from ${old.alias}.hot where ts < ${cut}`;
    await this.#tx([
      ...COLD_TABLES.map(
        (table) =>
          `insert into ${seg.alias}.${table} with r as (select tag, ts, v, (ts // ${SEG_MS}) * ${SEG_MS} as m from (${src}) ` +
          `where ${table === 'cold32' ? '' : 'not '}(v = v::FLOAT)), ` +
          `b as (select m, min(ts) as lo, ${SEG_MS}::INTEGER as span from r group by m) ` +
          'select tag, lo, span, ts - lo + tag::BIGINT * span, v from r join b using (m) order by m, tag, ts',
      ),
      `insert into ${seg.alias}.cold_text select tag, floor(ts)::BIGINT, s from ${old.alias}.hot_text where ts < ${cut}`,
      `insert into ${seg.alias}.minute ${DuckStore.minutePartials(src, String(Number.MAX_SAFE_INTEGER))} order by seg, tag`,
      `insert into ${seg.alias}.moved values (${int(old.n)}, ${cut})`,
    ]);
    await this.#c.run(`checkpoint ${seg.alias}`);
    await this.#measure(seg);
    await this.#c.run(`detach ${old.alias}`);
    removeDb(old.path);
  }

  /** The segment a move goes to: the newest, or a new one (a sixteenth of the cap, or a new day). */
  async #target(newest: number): Promise<Segment> {
    const last = this.#segs.at(-1);
    const cap = this.#retention.maxBytes;
    const roll = cap > 0 ? Math.min(256 * KIB * KIB, Math.max(KIB * KIB, cap / 16)) : 256 * KIB * KIB;
    const sameDay = last !== undefined && Math.floor(last.maxSeg / DAY_MS) >= Math.floor(newest / DAY_MS);
    if (last && (last.maxSeg === -Infinity || (last.bytes < roll && sameDay))) return last;
    return this.#attachSegment((last?.n ?? 0) + 1);
  }

  async #dropSegment(seg: Segment): Promise<number> {
    const n = await this.#num(
      `select (select count(*) from ${seg.alias}.cold)::DOUBLE + (select count(*) from ${seg.alias}.cold32)::DOUBLE + ` +
        `(select count(*) from ${seg.alias}.cold_text)::DOUBLE`,
    );
    await this.#c.run(`detach ${seg.alias}`);
    removeDb(seg.path);
    this.#segs = this.#segs.filter((s) => s !== seg);
    return n;
  }

  /** Whole segments before `before` go; in the segment across it, rows (their blocks are reused). */
  async #deleteByAge(before: number): Promise<void> {
    const b = Math.floor(before / SEG_MS) * SEG_MS;
    for (const seg of [...this.#segs]) {
      if (seg.maxSeg < b && seg.maxSeg > -Infinity) this.#deletedByAge += await this.#dropSegment(seg);
      else if (seg.minSeg < b) {
        const a = seg.alias;
        await this.#tx([`delete from ${a}.minute where seg < ${b}`]);
        for (const table of COLD_TABLES)
          this.#deletedByAge += (await this.#c.run(`delete from ${a}.${table} where seg < ${b}`)).rowsChanged;
        const r2 = await this.#c.run(`delete from ${a}.cold_text where ts < ${b}`);
        this.#deletedByAge += r2.rowsChanged;
        await this.#c.run(`checkpoint ${a}`);
        await this.#measure(seg);
      }
    }
    const h = this.#h.alias;
    const r1 = await this.#c.run(`delete from ${h}.hot where ts < ${int(before)}`);
    const r2 = await this.#c.run(`delete from ${h}.hot_text where ts < ${int(before)}`);
    this.#deletedByAge += r1.rowsChanged + r2.rowsChanged;
  }

  /** Whole segments go, the oldest first, until the directory is under 90 % of the cap. */
  async #deleteBySize(maxBytes: number): Promise<void> {
    while (this.#segs.length > 0 && dirBytes(this.#opts.dir) > maxBytes * 0.9) {
      this.#deletedBySize += await this.#dropSegment(this.#segs[0]!);
    }
  }

  async stats(): Promise<StoreStats> {
    const h = this.#h.alias;
    const parts = [
      `select count(*)::DOUBLE as n, min(ts)::DOUBLE as lo, max(ts)::DOUBLE as hi from ${h}.hot`,
      `select count(*)::DOUBLE, min(ts)::DOUBLE, max(ts)::DOUBLE from ${h}.hot_text`,
    ];
    for (const s of this.#segs) {
      for (const table of COLD_TABLES)
        parts.push(
          `select count(*)::DOUBLE, min(${COLD_TS})::DOUBLE, max(${COLD_TS})::DOUBLE from ${s.alias}.${table}`,
        );
      parts.push(`select count(*)::DOUBLE, min(ts)::DOUBLE, max(ts)::DOUBLE from ${s.alias}.cold_text`);
    }
    const r = (
      await this.#rows(
        `select sum(n), min(lo), max(hi), (select count(*) from tags)::DOUBLE from (${parts.join(' union all ')})`,
      )
    )[0]!;
    return {
      engine: 'duckdb',
      bytes: dirBytes(this.#opts.dir),
      values: Number(r[0]),
      tags: Number(r[3]),
      oldest: r[1] === null ? null : Number(r[1]),
      newest: r[2] === null ? null : Number(r[2]),
      deletedByAge: this.#deletedByAge,
      deletedBySize: this.#deletedBySize,
    };
  }

  async close(): Promise<void> {
    if (!this.#con) return;
    try {
      await this.#inflight;
      await this.#con.run('checkpoint');
      if (this.#hot) await this.#con.run(`checkpoint ${this.#hot.alias}`);
    } finally {
      this.#appendCon?.closeSync();
      this.#appendCon = undefined;
      this.#con.closeSync();
      this.#con = undefined;
      this.#instance?.closeSync();
      this.#instance = undefined;
      this.#hot = undefined;
      this.#segs = [];
    }
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
