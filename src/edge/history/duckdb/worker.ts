/**
 * The DuckDB store's thread: every call of the store runs here, one at a time, so that appends,
 * compaction and queries never hold the edge's event loop (where the DataHub delivers values).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DuckStore, type DuckStoreOptions } from './repository.js';

interface Call {
  id: number;
  op: string;
  args: unknown[];
}

const store = new DuckStore(workerData as DuckStoreOptions);
const port = parentPort!;
let chain: Promise<void> = Promise.resolve();

port.on('message', (m: Call) => {
  chain = chain.then(async () => {
    try {
      const fn = (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[m.op];
      if (typeof fn !== 'function') throw new Error(`no store operation ${m.op}`);
      const result = await fn.apply(store, m.args);
      port.postMessage({ id: m.id, result });
    } catch (err) {
      port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
    }
  });
});
