/**
 * The DuckDB store's thread: every call of the store runs here, so that appends, compaction and
 * queries never hold the edge's event loop (where the DataHub delivers values). Appends run one
 * after another on their own chain (and their own connection), queries and maintenance on another:
 * a minute's move does not hold the appends behind it. After an append that takes the store over
 * its size cap, maintenance (move and retention) runs at once, not at the next timer.
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
let enforcing = false;

/** Typed arrays of a result go back transferred, not copied. */
function transferOf(result: unknown): ArrayBuffer[] {
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return [];
  return Object.values(result as Record<string, unknown>)
    .filter((v): v is Float64Array => v instanceof Float64Array)
    .map((v) => v.buffer as ArrayBuffer);
}

/**
 * Over the cap after an append: maintenance now, and the next appends wait for it (the recorder's
 * batches wait meanwhile, up to its bound of values waiting): the store stays under its cap plus
 * the batch that took it over.
 */
function enforceCap(): void {
  if (enforcing || !store.overCap()) return;
  enforcing = true;
  const done = others
    .then(() => store.maintain(Date.now(), store.retention))
    .catch(() => undefined)
    .then(() => {
      enforcing = false;
    });
  others = done;
  appends = appends.then(() => done);
}

port.on('message', (m: Call) => {
  const run = async () => {
    try {
      const fn = (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[m.op];
      if (typeof fn !== 'function') throw new Error(`no store operation ${m.op}`);
      const result = await fn.apply(store, m.args);
      if (m.op === 'append') enforceCap();
      port.postMessage({ id: m.id, result }, transferOf(result));
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
