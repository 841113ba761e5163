/**
 * The host process of a `HostedPool` (see hosted.ts): an ordinary `WorkerPool` built from the
 * options the parent sends first, fed with the parent's batches of jobs; replies go back in one
 * message per tick. The process ends with its parent (IPC channel closed).
 */
import { WorkerPool } from './index.js';
import type { HostReply, HostRequest } from './hosted.js';

let pool: WorkerPool<unknown, unknown> | undefined;
let results: HostReply['results'] = [];

function reply(r: HostReply['results'][number]): void {
  if (results.length === 0) setImmediate(send);
  results.push(r);
}

function send(): void {
  const batch = results;
  results = [];
  process.send?.({ t: 'done', replaced: pool?.replaced ?? 0, results: batch } satisfies HostReply);
}

process.on('message', (m: HostRequest) => {
  if (m.t === 'init') {
    pool = new WorkerPool({ ...m.options, script: new URL(m.options.script) });
    return;
  }
  if (!pool) throw new Error('the sandbox host got a job before its options');
  if (m.t === 'warm') {
    pool.warm();
    return;
  }
  for (const { id, job, deadlineMs } of m.jobs) {
    pool.run(job, deadlineMs).then(
      (value) => reply({ id, ok: true, value }),
      (err: Error & { bound?: string }) =>
        reply({ id, ok: false, error: err.message, ...(err.bound ? { bound: err.bound } : {}) }),
    );
  }
});
process.on('disconnect', () => process.exit(0));
