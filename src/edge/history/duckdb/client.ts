/** The DuckDB store seen from the edge's thread: each call a message to the store's worker. */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { aggregateRows } from '../store.js';
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
import type { DuckStoreOptions } from './repository.js';

interface Reply {
  id: number;
  result?: unknown;
  error?: string;
}

export class DuckWorkerStore implements HistoryStore {
  readonly #opts: DuckStoreOptions;
  #worker: Worker | undefined;
  readonly #calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #next = 1;
  #dead: Error | undefined;

  /** The worker starts at the first call (an edge that records nothing starts no thread). */
  constructor(opts: DuckStoreOptions) {
    this.#opts = opts;
  }

  get started(): boolean {
    return this.#worker !== undefined;
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const opts = this.#opts;
    // Built (dist/): worker.js beside this file; from the sources (benches under tsx): worker.ts.
    const js = new URL('./worker.js', import.meta.url);
    const worker = existsSync(js)
      ? new Worker(js, { workerData: opts })
      : new Worker(
          `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(new URL('./worker.ts', import.meta.url).href)}); })`,
          { eval: true, workerData: opts },
        );
    worker.on('message', (m: Reply) => {
      const call = this.#calls.get(m.id);
      if (!call) return;
      this.#calls.delete(m.id);
      if (m.error !== undefined) call.reject(new Error(m.error));
      else call.resolve(m.result);
    });
    const fail = (err: Error) => {
      this.#dead = err;
      for (const c of this.#calls.values()) c.reject(err);
      this.#calls.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the history store's worker exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  #call<T>(op: string, args: unknown[], transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    const worker = this.#start();
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, op, args }, transfer);
    });
  }

  async open(): Promise<Map<string, number>> {
    return this.#call<Map<string, number>>('open', []);
  }

  append(b: SampleBatch): Promise<void> {
    return this.#call(
      'append',
      [b],
      [b.tag.buffer as ArrayBuffer, b.ts.buffer as ArrayBuffer, b.v.buffer as ArrayBuffer],
    );
  }

  raw(q: RawQuery): Promise<{ items: Sample[]; total: number }> {
    return this.#call('raw', [q]);
  }

  scan(q: ScanQuery): Promise<Sample[]> {
    return this.#call('scan', [q]);
  }

  async aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    return aggregateRows(await this.aggregateColumns(q));
  }

  /** Typed columns, transferred from the worker (not copied). */
  aggregateColumns(q: AggregateQuery): Promise<AggregateColumns> {
    return this.#call<AggregateColumns>('aggregateColumns', [q]);
  }

  last(tags: number[], at: number): Promise<Sample[]> {
    return this.#call('last', [tags, at]);
  }

  maintain(now: number, retention: Retention): Promise<void> {
    return this.#call('maintain', [now, retention]);
  }

  stats(): Promise<StoreStats> {
    return this.#call('stats', []);
  }

  async close(): Promise<void> {
    if (!this.#worker) return;
    if (!this.#dead) await this.#call('close', []).catch(() => undefined);
    await this.#worker.terminate();
  }
}
