/**
 * The DuckDB store's thread: every call of the store runs here, so that appends, compaction and
 * queries never hold the edge's event loop (where the DataHub delivers values). Appends run one
 * after another on their own chain (and their own connection), queries and maintenance on another:
 * a minute's move does not hold the appends behind it.
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
let appends: Promise<void> = Promise.resolve();
let others: Promise<void> = Promise.resolve();
let opened: Promise<void> | undefined;

port.on('message', (m: Call) => {
  const run = async () => {
    try {
      const fn = (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[m.op];
      if (typeof fn !== 'function') throw new Error(`no store operation ${m.op}`);
      const result = await fn.apply(store, m.args);
      port.postMessage({ id: m.id, result });
    } catch (err) {
      port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) });
    }
  };
  if (m.op === 'open') {
    opened = others = others.then(run);
  } else if (m.op === 'append') {
    appends = appends.then(() => opened).then(run);
  } else if (m.op === 'close') {
    others = Promise.all([appends, others]).then(run);
  } else {
    others = others.then(run);
  }
});
