/**
 * The recorder: the DataHub subscriber of the history. On the bus's delivery (the hot path) a value
 * costs a map look-up, the tag's policy and a store into typed arrays; a timer hands the arrays to
 * the store every `flushMs` (or sooner when they are full), off the hot path.
 */
import type { Logger } from 'pino';
import type { DataHub, Message, Subscription } from '../datahub/index.js';
import { keep, PolicyTable, type HistoryPolicy, type TagState } from './policy.js';
import type { HistoryStore, SampleBatch } from './store.js';

const RAW_PREFIX = 'devicehub.raw.';

export interface RecorderOptions {
  hub: DataHub;
  store: HistoryStore;
  logger?: Logger | undefined;
  /**
   * Known tags (name → id), from the store; undefined: the store is not open yet, values wait
   * (at most `maxPending`) until `open(tags)`, and `onWaiting` is called at the first one.
   */
  tags?: Map<string, number> | undefined;
  onWaiting?: (() => void) | undefined;
  policies: PolicyTable;
  flushMs: number;
  /** Values one batch holds at most (a full batch is flushed at once). */
  batchSize: number;
  /** Tags tracked at most; values of further tags are dropped and counted. */
  maxTags: number;
  /** Values waiting for the store at most (flushed batches not yet written); past it, dropped. */
  maxPending: number;
}

export interface RecorderCounters {
  received: number;
  kept: number;
  skipped: number;
  dropped: number;
  written: number;
  failedWrites: number;
  lastFlushMs: number;
}

/**
 * A tag's state, with the subject it was tracked for and its recorder: kept on the publisher's
 * encoder too (`subscriberMemo`), where the next value of the tag finds it.
 */
class Tracked implements TagState {
  constructor(
    readonly owner: Recorder,
    readonly subject: string,
    readonly id: number,
    public policy: HistoryPolicy,
  ) {}
  lastTs = -Infinity;
  last: number | string | undefined = undefined;
}

export class Recorder {
  readonly #o: RecorderOptions;
  readonly #states = new Map<string, Tracked>();
  /** Tag names by id (ids are dense from 1: an array, not a map of 100,000 entries). */
  readonly #names: string[] = [];
  #tags = new Map<string, number>();
  #nextId = 1;
  /** Values that came before the store was open (undefined once it is). */
  #early: Message[] | undefined;
  #sub: Subscription | undefined;
  #timer: NodeJS.Timeout | undefined;
  #tag: Int32Array;
  #ts: Float64Array;
  #v: Float64Array;
  #s: (string | null)[] | null = null;
  #n = 0;
  #newTags: Array<[number, string]> = [];
  #pending = 0;
  #writing: Promise<void> = Promise.resolve();
  readonly counters: RecorderCounters = {
    received: 0,
    kept: 0,
    skipped: 0,
    dropped: 0,
    written: 0,
    failedWrites: 0,
    lastFlushMs: 0,
  };

  constructor(o: RecorderOptions) {
    this.#o = o;
    if (o.tags) this.open(o.tags);
    else this.#early = [];
    this.#tag = new Int32Array(o.batchSize);
    this.#ts = new Float64Array(o.batchSize);
    this.#v = new Float64Array(o.batchSize);
  }

  /** The store is open: its tags are known, the values that waited are taken now. */
  open(tags: Map<string, number>): void {
    this.#tags = tags;
    for (const [name, id] of tags) {
      this.#names[id] = name;
      if (id >= this.#nextId) this.#nextId = id + 1;
    }
    const early = this.#early ?? [];
    this.#early = undefined;
    for (const m of early) this.#onValue(m);
  }

  start(): void {
    this.#sub = this.#o.hub.subscribe(`${RAW_PREFIX}>`, { callback: (msg) => this.#onValue(msg) });
    this.#timer = setInterval(() => this.flush(), this.#o.flushMs);
    this.#timer.unref();
  }

  /** The id of a tag name (`Device.Tag`), or undefined when the history has never seen it. */
  idOf(name: string): number | undefined {
    return this.#tags.get(name);
  }

  nameOf(id: number): string {
    return (Number.isInteger(id) && id >= 0 ? this.#names[id] : undefined) ?? String(id);
  }

  get tagNames(): string[] {
    return [...this.#tags.keys()];
  }

  setPolicies(table: PolicyTable): void {
    this.#o.policies = table;
    for (const [name, state] of this.#states) {
      const dot = name.indexOf('.');
      state.policy = table.of(name.slice(0, dot), name.slice(dot + 1));
    }
  }

  #onValue(msg: Message): void {
    if (this.#early) {
      if (this.#early.length === 0) this.#o.onWaiting?.();
      if (this.#early.length < this.#o.maxPending) this.#early.push(msg);
      else this.counters.dropped++;
      return;
    }
    this.counters.received++;
    const p = msg.data as { success?: unknown; timestamp?: unknown; value?: unknown } | null;
    if (p === null || typeof p !== 'object' || p instanceof Uint8Array || p.success === false) {
      this.counters.skipped++;
      return;
    }
    const raw = p.value;
    let v: number | string;
    if (typeof raw === 'number') v = raw;
    else if (typeof raw === 'boolean') v = raw ? 1 : 0;
    else if (typeof raw === 'string') v = raw;
    else if (typeof raw === 'bigint') v = Number(raw);
    else if (raw === null || raw === undefined) {
      this.counters.skipped++;
      return;
    } else v = JSON.stringify(raw);
    const ts = Math.floor(typeof p.timestamp === 'number' ? p.timestamp : Date.now());
    // The acquisition's values carry their tag's encoder, where the state of the tag waits (a
    // property read: the look-up of the subject among 100,000 was a tenth of the main thread).
    const subject = msg.subject;
    const enc = msg.encoder;
    const memo = enc?.subscriberMemo;
    let state: Tracked | undefined;
    if (memo instanceof Tracked && memo.owner === this && memo.subject === subject) state = memo;
    else {
      state = this.#states.get(subject) ?? this.#track(subject);
      if (enc !== undefined && state !== undefined) enc.subscriberMemo = state;
    }
    if (state === undefined) {
      this.counters.dropped++;
      return;
    }
    if (!keep(state, ts, v)) {
      this.counters.skipped++;
      return;
    }
    const i = this.#n++;
    this.#tag[i] = state.id;
    this.#ts[i] = ts;
    if (typeof v === 'number') this.#v[i] = v;
    else {
      this.#v[i] = NaN;
      (this.#s ??= new Array<string | null>(this.#o.batchSize).fill(null))[i] = v;
    }
    this.counters.kept++;
    if (this.#n === this.#o.batchSize) this.flush();
  }

  #track(subject: string): Tracked | undefined {
    if (this.#states.size >= this.#o.maxTags) return undefined;
    const name = subject.slice(RAW_PREFIX.length);
    const dot = name.indexOf('.');
    if (dot < 0) return undefined;
    let id = this.#tags.get(name);
    if (id === undefined) {
      id = this.#nextId++;
      this.#tags.set(name, id);
      this.#names[id] = name;
      this.#newTags.push([id, name]);
    }
    const state = new Tracked(
      this,
      subject,
      id,
      this.#o.policies.of(name.slice(0, dot), name.slice(dot + 1)),
    );
    this.#states.set(subject, state);
    return state;
  }

  /** Hands the values gathered so far to the store; resolves once they are written. */
  flush(): Promise<void> {
    const n = this.#n;
    if (n === 0 && this.#newTags.length === 0) return this.#writing;
    if (this.#pending + n > this.#o.maxPending) {
      this.counters.dropped += n;
      this.#n = 0;
      this.#s = null;
      return this.#writing;
    }
    const batch: SampleBatch = {
      n,
      tag: this.#tag.slice(0, n),
      ts: this.#ts.slice(0, n),
      v: this.#v.slice(0, n),
      s: this.#s === null ? null : this.#s.slice(0, n),
      newTags: this.#newTags,
    };
    this.#n = 0;
    this.#s = null;
    this.#newTags = [];
    this.#pending += n;
    const t0 = performance.now();
    this.#writing = this.#writing.then(() =>
      this.#o.store.append(batch).then(
        () => {
          this.#pending -= n;
          this.counters.written += n;
          this.counters.lastFlushMs = performance.now() - t0;
        },
        (err: unknown) => {
          this.#pending -= n;
          this.counters.failedWrites += n;
          this.#o.logger?.error({ err, values: n }, 'history: a batch could not be written');
        },
      ),
    );
    return this.#writing;
  }

  /** Stops taking values and writes what was gathered. */
  async stop(): Promise<void> {
    this.#sub?.unsubscribe();
    clearInterval(this.#timer);
    await this.flush();
  }
}
