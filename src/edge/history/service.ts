/**
 * The history of the edge's tags: the recorder (DataHub → store), retention, and the queries the
 * REST routes and the GraphQL resolvers translate. Tags are named `Device.Tag` on the wire.
 */
import type { Logger } from 'pino';
import { badRequest } from '../../kernel/errors.js';
import { bucketOf } from './buckets.js';
import { PolicyTable, type HistoryPolicy } from './policy.js';
import { Recorder, type RecorderCounters, type RecorderOptions } from './recorder.js';
import type { AggregateColumns, AggregateRow, HistoryStore, Retention, Sample, StoreStats } from './store.js';

/** Tags one query names at most. */
export const MAX_QUERY_TAGS = 1000;
/** Values one page of raw values holds at most. */
export const MAX_RAW_LIMIT = 1000;
const EXPORT_PAGE = 10_000;

export interface HistoryValue {
  tag: string;
  /** Epoch ms. */
  ts: number;
  value: number | string | null;
}

export interface HistoryBucket {
  /** Start of the bucket, epoch ms. */
  ts: number;
  first: number;
  last: number;
  min: number;
  max: number;
  mean: number;
  count: number;
  twa: number | null;
}

export interface HistorySeries {
  tag: string;
  buckets: HistoryBucket[];
}

export interface TimeRange {
  tags: string[];
  from: number;
  to: number;
}

export interface HistoryStatus extends StoreStats, RecorderCounters {
  retention: Retention;
}

export interface HistoryServiceOptions extends Omit<RecorderOptions, 'tags' | 'policies'> {
  retention: Retention;
  maintainMs: number;
  policies: HistoryPolicy[];
  logger?: Logger | undefined;
  /**
   * Open the store at the first value to record (or the first query), not at start: an edge that
   * records nothing starts no DuckDB thread. Values meanwhile wait (at most `maxPending`).
   */
  lazy?: boolean | undefined;
}

export class HistoryService {
  readonly #o: HistoryServiceOptions;
  readonly #store: HistoryStore;
  #recorder: Recorder | undefined;
  #policies: PolicyTable;
  #timer: NodeJS.Timeout | undefined;
  #maintaining: Promise<void> = Promise.resolve();
  #retention: Retention;
  #opening: Promise<void> | undefined;

  constructor(o: HistoryServiceOptions) {
    this.#o = o;
    this.#store = o.store;
    this.#policies = new PolicyTable(o.policies);
    this.#retention = o.retention;
  }

  async start(): Promise<void> {
    this.#recorder = new Recorder({
      ...this.#o,
      tags: undefined,
      policies: this.#policies,
      onWaiting: () => void this.#open().catch(() => undefined),
    });
    this.#recorder.start();
    if (!this.#o.lazy) await this.#open();
    this.#timer = setInterval(() => void this.maintain(), this.#o.maintainMs);
    this.#timer.unref();
  }

  /** Opens the store once (its tags then reach the recorder); a failure is logged and kept. */
  #open(): Promise<void> {
    this.#opening ??= this.#store.open().then(
      (tags) => this.#rec.open(tags),
      (err: unknown) => {
        this.#o.logger?.error({ err }, 'history: the store could not be opened');
        throw err;
      },
    );
    return this.#opening;
  }

  /** True once the store is open (or opening). */
  get opened(): boolean {
    return this.#opening !== undefined;
  }

  get #rec(): Recorder {
    if (!this.#recorder) throw new Error('the history is not started');
    return this.#recorder;
  }

  /**
   * Compaction and retention now (also run every `maintainMs`); `now` later than the clock
   * compacts the minutes in progress too (benches, tests).
   */
  maintain(now = Date.now()): Promise<void> {
    if (!this.#opening) return this.#maintaining;
    const opening = this.#opening;
    this.#maintaining = this.#maintaining.then(() =>
      opening.then(() =>
        this.#store.maintain(now, this.#retention).catch((err: unknown) => {
          this.#o.logger?.error({ err }, 'history: maintenance failed');
        }),
      ),
    );
    return this.#maintaining;
  }

  /** Writes the values gathered so far (tests, benches; the recorder does it every `flushMs`). */
  async flush(): Promise<void> {
    if (this.#opening) await this.#opening;
    return this.#rec.flush();
  }

  get policies(): HistoryPolicy[] {
    return this.#policies.list();
  }

  setPolicies(policies: HistoryPolicy[]): void {
    this.#policies = new PolicyTable(policies);
    this.#recorder?.setPolicies(this.#policies);
  }

  get retention(): Retention {
    return { ...this.#retention };
  }

  setRetention(r: Retention): void {
    this.#retention = { ...r };
  }

  async status(): Promise<HistoryStatus> {
    await this.#open();
    return { ...(await this.#store.stats()), ...this.#rec.counters, retention: this.retention };
  }

  /** Tag names the history holds, sorted. */
  async tags(): Promise<string[]> {
    await this.#open();
    return this.#rec.tagNames.sort();
  }

  async #ids(names: string[]): Promise<number[]> {
    if (names.length === 0) throw badRequest('tag: name at least one tag (Device.Tag)');
    if (names.length > MAX_QUERY_TAGS)
      throw badRequest(`tag: at most ${MAX_QUERY_TAGS} tags per query, got ${names.length}`);
    await this.#open();
    const ids: number[] = [];
    for (const n of names) {
      const id = this.#rec.idOf(n);
      if (id !== undefined) ids.push(id);
    }
    return ids;
  }

  #value(s: Sample): HistoryValue {
    return {
      tag: this.#rec.nameOf(s.tag),
      ts: s.ts,
      value: s.s ?? (s.v === null || Number.isNaN(s.v) ? null : s.v),
    };
  }

  async raw(
    q: TimeRange & { limit: number; offset: number },
  ): Promise<{ items: HistoryValue[]; total: number }> {
    checkRange(q);
    if (!Number.isInteger(q.limit) || q.limit < 1 || q.limit > MAX_RAW_LIMIT)
      throw badRequest(`limit must be an integer from 1 to ${MAX_RAW_LIMIT}, got ${String(q.limit)}`);
    const ids = await this.#ids(q.tags);
    if (ids.length === 0) return { items: [], total: 0 };
    const page = await this.#store.raw({
      tags: ids,
      from: q.from,
      to: q.to,
      limit: q.limit,
      offset: q.offset,
    });
    return { items: page.items.map((s) => this.#value(s)), total: page.total };
  }

  async aggregate(
    q: TimeRange & { points?: number | undefined; bucketMs?: number | undefined },
  ): Promise<{ bucketMs: number; series: HistorySeries[] }> {
    checkRange(q);
    const bucketMs = bucketOf(q.from, q.to, q.points, q.bucketMs);
    const ids = await this.#ids(q.tags);
    const byTag = new Map<string, HistoryBucket[]>(q.tags.map((t) => [t, []]));
    if (ids.length > 0) {
      const end = Math.min(q.to, Date.now());
      const aq = { tags: ids, from: q.from, to: q.to, bucketMs, end };
      const c = this.#store.aggregateColumns
        ? await this.#store.aggregateColumns(aq)
        : columnsOf(await this.#store.aggregate(aq));
      let list: HistoryBucket[] | undefined;
      let listTag = NaN;
      for (let i = 0; i < c.tag.length; i++) {
        if (c.tag[i] !== listTag) {
          listTag = c.tag[i]!;
          list = byTag.get(this.#rec.nameOf(listTag));
        }
        const twa = c.twa[i]!;
        list?.push({
          ts: c.bucket[i]!,
          first: c.first[i]!,
          last: c.last[i]!,
          min: c.min[i]!,
          max: c.max[i]!,
          mean: c.mean[i]!,
          count: c.count[i]!,
          twa: Number.isNaN(twa) ? null : twa,
        });
      }
    }
    return { bucketMs, series: [...byTag].map(([tag, buckets]) => ({ tag, buckets })) };
  }

  /** The last value of each tag at or before `at`. */
  async last(tags: string[], at: number): Promise<HistoryValue[]> {
    if (!Number.isFinite(at)) throw badRequest('at must be a time');
    const ids = await this.#ids(tags);
    if (ids.length === 0) return [];
    return (await this.#store.last(ids, at)).map((s) => this.#value(s));
  }

  /** Every value of the tags over the range, tag by tag in time order, a page at a time. */
  async *export(q: TimeRange): AsyncGenerator<HistoryValue[]> {
    checkRange(q);
    for (const id of await this.#ids(q.tags)) {
      let from = q.from;
      let skip = 0;
      for (;;) {
        const page = await this.#store.scan({ tag: id, from, to: q.to, skip, limit: EXPORT_PAGE });
        if (page.length > 0) yield page.map((s) => this.#value(s));
        if (page.length < EXPORT_PAGE) break;
        const lastTs = page[page.length - 1]!.ts;
        const atLast = page.filter((s) => s.ts === lastTs).length;
        skip = lastTs === from ? skip + atLast : atLast;
        from = lastTs;
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    if (this.#opening) await this.#opening.catch(() => undefined);
    await this.#recorder?.stop();
    await this.#maintaining;
    await this.#store.close();
  }
}

function columnsOf(rows: AggregateRow[]): AggregateColumns {
  const col = (f: (r: AggregateRow) => number) => Float64Array.from(rows, f);
  return {
    tag: col((r) => r.tag),
    bucket: col((r) => r.bucket),
    first: col((r) => r.first),
    last: col((r) => r.last),
    min: col((r) => r.min),
    max: col((r) => r.max),
    mean: col((r) => r.mean),
    count: col((r) => r.count),
    twa: col((r) => r.twa ?? NaN),
  };
}

function checkRange(q: { from: number; to: number }): void {
  if (!Number.isFinite(q.from) || !Number.isFinite(q.to)) throw badRequest('from and to must be times');
  if (q.to <= q.from) throw badRequest(`to must be after from (from ${q.from}, to ${q.to})`);
}
