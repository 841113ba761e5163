/**
 * The history in PostgreSQL, for a site whose history outgrows the edge's disk: the same store
 * interface as the embedded DuckDB file, in a TimescaleDB-shaped schema (one narrow table of
 * `(tag, ts, v, s)` with an index on `(tag, ts)`; a hypertable when the `timescaledb` extension is
 * installed in the database). SQL of the PostgreSQL store lives here.
 */
import type pg from 'pg';
import { pgDriver } from '../../../kernel/db/index.js';
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

const num = (v: unknown): number => Number(v);
const range = 'tag = any($1::int[]) and ts >= $2 and ts < $3';

export class PgStore implements HistoryStore {
  readonly #pool: pg.Pool;
  #deletedByAge = 0;
  #deletedBySize = 0;

  constructor(url: string) {
    this.#pool = new (pgDriver().Pool)({ connectionString: url, max: 4 });
    this.#pool.on('error', () => undefined);
  }

  async open(): Promise<Map<string, number>> {
    const p = this.#pool;
    await p.query(
      'create table if not exists history_tag (id integer primary key, name text not null unique)',
    );
    await p.query(
      'create table if not exists history_sample (tag integer not null, ts bigint not null, v double precision, s text)',
    );
    await p.query('create index if not exists history_sample_tag_ts on history_sample (tag, ts)');
    const ext = await p.query("select 1 from pg_extension where extname = 'timescaledb'");
    if (ext.rowCount) {
      await p.query(
        "select create_hypertable('history_sample', 'ts', chunk_time_interval => 86400000, if_not_exists => true, migrate_data => true)",
      );
    }
    const rows = await p.query<{ id: number; name: string }>('select id, name from history_tag');
    return new Map(rows.rows.map((r) => [r.name, r.id]));
  }

  async append(b: SampleBatch): Promise<void> {
    const c = await this.#pool.connect();
    try {
      await c.query('begin');
      if (b.newTags.length > 0) {
        await c.query(
          'insert into history_tag (id, name) select * from unnest($1::int[], $2::text[]) on conflict do nothing',
          [b.newTags.map((t) => t[0]), b.newTags.map((t) => t[1])],
        );
      }
      if (b.n > 0) {
        const v: Array<number | null> = [];
        for (let i = 0; i < b.n; i++) v.push(Number.isNaN(b.v[i]) ? null : b.v[i]!);
        await c.query(
          'insert into history_sample (tag, ts, v, s) select * from unnest($1::int[], $2::bigint[], $3::float8[], $4::text[])',
          [Array.from(b.tag), Array.from(b.ts), v, b.s ?? new Array<null>(b.n).fill(null)],
        );
      }
      await c.query('commit');
    } catch (err) {
      await c.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  }

  async raw(q: RawQuery): Promise<{ items: Sample[]; total: number }> {
    const args = [q.tags, q.from, q.to];
    const total = await this.#pool.query<{ n: string }>(
      `select count(*) as n from history_sample where ${range}`,
      args,
    );
    const rows = await this.#pool.query(
      `select tag, ts, v, s from history_sample where ${range} order by ts, tag limit $4 offset $5`,
      [...args, q.limit, q.offset],
    );
    return { items: rows.rows.map(sampleOf), total: num(total.rows[0]!.n) };
  }

  async scan(q: ScanQuery): Promise<Sample[]> {
    const rows = await this.#pool.query(
      `select tag, ts, v, s from history_sample where ${range} order by ts limit $4 offset $5`,
      [[q.tag], q.from, q.to, q.limit, q.skip],
    );
    return rows.rows.map(sampleOf);
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    const sql =
      `with b as (select tag, ts, v, (ts / $4) * $4 as bucket, lead(ts) over (partition by tag order by ts) as nts ` +
      `from history_sample where ${range} and v is not null), ` +
      `d as (select *, greatest(0, least(coalesce(nts, $5), bucket + $4, $5) - ts) as dt from b) ` +
      `select tag, bucket, (array_agg(v order by ts))[1] as first, (array_agg(v order by ts desc))[1] as last, ` +
      `min(v) as min, max(v) as max, avg(v) as mean, count(*) as count, sum(v * dt) / nullif(sum(dt), 0) as twa ` +
      `from d group by tag, bucket order by tag, bucket`;
    const rows = await this.#pool.query(sql, [q.tags, q.from, q.to, q.bucketMs, q.end]);
    return rows.rows.map((r: Record<string, unknown>) => ({
      tag: num(r.tag),
      bucket: num(r.bucket),
      first: num(r.first),
      last: num(r.last),
      min: num(r.min),
      max: num(r.max),
      mean: num(r.mean),
      count: num(r.count),
      twa: r.twa === null ? null : num(r.twa),
    }));
  }

  async last(tags: number[], at: number): Promise<Sample[]> {
    const rows = await this.#pool.query(
      'select x.tag, x.ts, x.v, x.s from unnest($1::int[]) as t(id) cross join lateral ' +
        '(select tag, ts, v, s from history_sample where tag = t.id and ts <= $2 order by ts desc limit 1) x order by x.tag',
      [tags, at],
    );
    return rows.rows.map(sampleOf);
  }

  async maintain(now: number, retention: Retention): Promise<void> {
    if (retention.maxAgeMs > 0) {
      const r = await this.#pool.query('delete from history_sample where ts < $1', [
        now - retention.maxAgeMs,
      ]);
      this.#deletedByAge += r.rowCount ?? 0;
    }
    if (retention.maxBytes > 0) {
      const size = num(
        (await this.#pool.query("select pg_total_relation_size('history_sample') as n")).rows[0].n,
      );
      if (size <= retention.maxBytes * 0.8) return;
      // The oldest tenth of the time span goes; PostgreSQL's vacuum reuses the space.
      const span = await this.#pool.query<{ lo: string | null; hi: string | null }>(
        'select min(ts) as lo, max(ts) as hi from history_sample',
      );
      const lo = span.rows[0]?.lo;
      const hi = span.rows[0]?.hi;
      if (lo == null || hi == null) return;
      const cut = num(lo) + Math.max(1, (num(hi) - num(lo)) / 10);
      const r = await this.#pool.query('delete from history_sample where ts < $1', [cut]);
      this.#deletedBySize += r.rowCount ?? 0;
    }
  }

  async stats(): Promise<StoreStats> {
    const r = await this.#pool.query(
      'select (select count(*) from history_sample) as n, (select count(*) from history_tag) as tags, ' +
        '(select min(ts) from history_sample) as lo, (select max(ts) from history_sample) as hi, ' +
        "pg_total_relation_size('history_sample') as bytes",
    );
    const row = r.rows[0] as Record<string, unknown>;
    return {
      engine: 'postgres',
      bytes: num(row.bytes),
      values: num(row.n),
      tags: num(row.tags),
      oldest: row.lo === null ? null : num(row.lo),
      newest: row.hi === null ? null : num(row.hi),
      deletedByAge: this.#deletedByAge,
      deletedBySize: this.#deletedBySize,
    };
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}

function sampleOf(r: Record<string, unknown>): Sample {
  return {
    tag: num(r.tag),
    ts: num(r.ts),
    v: r.v === null || r.v === undefined ? null : num(r.v),
    s: r.s === null || r.s === undefined ? null : String(r.s),
  };
}
