/** The DuckDB store seen from the edge's thread: each call a message to the store's worker. */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
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
import type { DuckStoreOptions } from './repository.js';

interface Reply {
  id: number;
  result?: unknown;
  error?: string;
}

export class DuckWorkerStore implements HistoryStore {
  readonly #worker: Worker;
  readonly #calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  #next = 1;
  #dead: Error | undefined;

  constructor(opts: DuckStoreOptions) {
    // Built (dist/): worker.js beside this file; from the sources (benches under tsx): worker.ts.
    const js = new URL('./worker.js', import.meta.url);
    this.#worker = existsSync(js)
      ? new Worker(js, { workerData: opts })
      : new Worker(
          `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(new URL('./worker.ts', import.meta.url).href)}); })`,
          { eval: true, workerData: opts },
        );
    this.#worker.on('message', (m: Reply) => {
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
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => fail(new Error(`the history store's worker exited (${code})`)));
  }

  #call<T>(op: string, args: unknown[], transfer: ArrayBuffer[] = []): Promise<T> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#worker.postMessage({ id, op, args }, transfer);
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

  aggregate(q: AggregateQuery): Promise<AggregateRow[]> {
    return this.#call('aggregate', [q]);
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
    if (!this.#dead) await this.#call('close', []).catch(() => undefined);
    await this.#worker.terminate();
  }
}
