/**
 * What a history store is (the embedded DuckDB file, or PostgreSQL when a site outgrows the edge's
 * disk): one interface, so that the queries and the API do not know which one answers.
 */

/** Values of one flush, column by column (`n` rows; `v` NaN where the value is text `s`). */
export interface SampleBatch {
  n: number;
  tag: Int32Array;
  ts: Float64Array;
  v: Float64Array;
  /** Text values by row (null for numbers); null when the batch has none. */
  s: (string | null)[] | null;
  /** Tags first seen in this batch: id and name (`Device.Tag`). */
  newTags: Array<[number, string]>;
}

/** One stored value. */
export interface Sample {
  tag: number;
  ts: number;
  v: number | null;
  s: string | null;
}

export interface RangeQuery {
  tags: number[];
  /** Inclusive, epoch ms. */
  from: number;
  /** Exclusive, epoch ms. */
  to: number;
}

export interface RawQuery extends RangeQuery {
  limit: number;
  offset: number;
}

/** Keyset page of one tag, for streamed exports: values at or after `from` (skipping `skip` at `from`). */
export interface ScanQuery {
  tag: number;
  from: number;
  to: number;
  skip: number;
  limit: number;
}

/** Aggregate rows column by column (the worker hands them over as typed arrays; `twa` NaN where none). */
export const AGGREGATE_COLUMNS = [
  'tag',
  'bucket',
  'first',
  'last',
  'min',
  'max',
  'mean',
  'count',
  'twa',
] as const;
export type AggregateColumns = Record<(typeof AGGREGATE_COLUMNS)[number], Float64Array>;

export function aggregateRows(c: AggregateColumns): AggregateRow[] {
  const out: AggregateRow[] = new Array<AggregateRow>(c.tag.length);
  for (let i = 0; i < c.tag.length; i++) {
    const twa = c.twa[i]!;
    out[i] = {
      tag: c.tag[i]!,
      bucket: c.bucket[i]!,
      first: c.first[i]!,
      last: c.last[i]!,
      min: c.min[i]!,
      max: c.max[i]!,
      mean: c.mean[i]!,
      count: c.count[i]!,
      twa: Number.isNaN(twa) ? null : twa,
    };
  }
  return out;
}

export interface AggregateQuery extends RangeQuery {
  bucketMs: number;
  /** Where the last value of a bucket stops counting for the time-weighted mean: min(to, now). */
  end: number;
}

/** Aggregates of one tag's numeric values in one bucket. */
export interface AggregateRow {
  tag: number;
  bucket: number;
  first: number;
  last: number;
  min: number;
  max: number;
  mean: number;
  count: number;
  /** Time-weighted mean: each value holds until the next (or the bucket's end). */
  twa: number | null;
}

/** Retention and maintenance settings of a store. */
export interface Retention {
  /** Values older than this are deleted (ms; 0: kept by age forever). */
  maxAgeMs: number;
  /** The store is kept under this size (bytes; 0: no size limit). */
  maxBytes: number;
}

export interface StoreStats {
  engine: 'duckdb' | 'postgres';
  /** Bytes on disk (files, or the tables' total relation size). */
  bytes: number;
  /** Values stored. */
  values: number;
  tags: number;
  oldest: number | null;
  newest: number | null;
  /** Values deleted by retention since start (age or size). */
  deletedByAge: number;
  deletedBySize: number;
}

export interface HistoryStore {
  /** Opens (creating when new) and answers the tags it knows, by name. */
  open(): Promise<Map<string, number>>;
  append(batch: SampleBatch): Promise<void>;
  raw(q: RawQuery): Promise<{ items: Sample[]; total: number }>;
  scan(q: ScanQuery): Promise<Sample[]>;
  aggregate(q: AggregateQuery): Promise<AggregateRow[]>;
  /** The same as typed columns (no object per bucket on the way), where the store has it. */
  aggregateColumns?(q: AggregateQuery): Promise<AggregateColumns>;
  /** The last value of each tag at or before `at` (tags without one left out). */
  last(tags: number[], at: number): Promise<Sample[]>;
  /** Compaction, retention by age and by size: run every few seconds. */
  maintain(now: number, retention: Retention): Promise<void>;
  stats(): Promise<StoreStats>;
  close(): Promise<void>;
}

/** `in (...)` of tag ids (integers only, checked). */
export function tagList(tags: readonly number[]): string {
  for (const t of tags) if (!Number.isInteger(t)) throw new Error(`tag id ${String(t)} is not an integer`);
  return tags.length === 0 ? '(-1)' : `(${tags.join(',')})`;
}
