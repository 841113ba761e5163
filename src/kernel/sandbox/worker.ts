/**
 * The worker side of a `WorkerPool` (see index.ts): runs the jobs of each batch in order, one at a
 * time, writing which job runs and since when into the shared progress array (the pool's watchdog
 * reads it), and answers the batch's replies in one message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { JobReply, SandboxBound } from './index.js';

/** Thrown by a handler when its job hit a bound it checks itself (depth, output size, time). */
export class BoundError extends Error {
  constructor(
    readonly bound: SandboxBound,
    message: string,
  ) {
    super(message);
  }
}

/** The options the pool gave its workers (`WorkerPoolOptions.workerOptions`). */
export const poolOptions = (): unknown => (workerData as { options?: unknown } | null)?.options;

/**
 * Serves the pool's batches with `handle`. `ready` (e.g. a WebAssembly module loading) is awaited
 * before the first job starts, so that loading is not counted in a job's deadline.
 */
export function serveJobs<J, R>(
  handle: (job: J, deadlineMs: number) => R | Promise<R>,
  ready?: Promise<unknown>,
): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs runs in a worker thread');
  const progress = new Float64Array((workerData as { progress: SharedArrayBuffer }).progress);
  port.on('message', (batch: Array<{ job: J; deadlineMs: number }>) => {
    void (async () => {
      await ready?.catch(() => undefined);
      const replies: JobReply<R>[] = [];
      for (let i = 0; i < batch.length; i++) {
        progress[0] = i;
        progress[1] = Date.now();
        try {
          replies.push({ ok: true, value: await handle(batch[i]!.job, batch[i]!.deadlineMs) });
        } catch (err) {
          const bound = err instanceof BoundError ? err.bound : undefined;
          replies.push({
            ok: false,
            error: err instanceof Error ? err.message : String(err),
            ...(bound ? { bound } : {}),
          });
        }
      }
      progress[1] = 0;
      port.postMessage(replies);
    })();
  });
}
