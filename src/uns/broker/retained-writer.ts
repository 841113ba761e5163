/**
 * Retained messages committed by a thread of their own (`retained-worker.ts`, its own connection
 * to the same SQLite file), so that the main thread goes on parsing and publishing while a batch
 * commits. One batch in flight at a time: what is retained meanwhile is the next batch (a group
 * commit), sent as soon as the one in flight is committed. Each batch's promise resolves when the
 * worker says it is committed, and rejects when the worker fails or dies (then every batch in
 * flight fails, and `dead` tells the write queue to write on the main thread from then on).
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { RetainedBatch, RetainedReply } from './retained-worker.js';

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class RetainedWriter {
  readonly #sqlitePath: string;
  #worker: Worker | undefined;
  #next = 1;
  readonly #pending = new Map<number, Pending>();
  #dead: Error | undefined;

  constructor(sqlitePath: string) {
    this.#sqlitePath = sqlitePath;
  }

  /** Set once the worker failed: its writes go to the main thread from then on. */
  get dead(): Error | undefined {
    return this.#dead;
  }

  /** Commits `rows` (topic → packet text, null: deleted) in one transaction of the worker. */
  write(rows: Map<string, string | null>): Promise<void> {
    if (this.#dead) return Promise.reject(this.#dead);
    const worker = this.#start();
    const id = this.#next++;
    return new Promise<void>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, rows: [...rows] } satisfies RetainedBatch);
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const workerData = { sqlitePath: this.#sqlitePath };
    // Built (dist/): retained-worker.js beside this file; from the sources (tests under tsx): .ts.
    const js = new URL('./retained-worker.js', import.meta.url);
    const worker = existsSync(js)
      ? new Worker(js, { workerData })
      : new Worker(
          `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(new URL('./retained-worker.ts', import.meta.url).href)}); })`,
          { eval: true, workerData },
        );
    worker.on('message', (m: RetainedReply) => {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error !== undefined) p.reject(new Error(m.error));
      else p.resolve();
    });
    const fail = (err: Error) => {
      this.#dead ??= err;
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the retained writer's worker exited (${code})`)));
    this.#worker = worker;
    return worker;
  }

  /** Ends the worker (after the write queue has waited for every batch). */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#dead ??= new Error('the retained writer is closed');
    await worker.terminate();
  }
}
