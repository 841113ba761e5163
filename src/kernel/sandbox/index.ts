/**
 * Off the main loop, bounded: user code (JSONata expressions, analytics script tests) runs in a
 * pool of worker threads, never on the edge's event loop. Each job has a wall-time deadline; a
 * worker that is still on a job past it (a loop the evaluator's own checks cannot interrupt, a
 * catastrophic regular expression) is terminated and replaced, and only that job fails. A worker's
 * heap is capped (`resourceLimits`): a job that exhausts it fails with the memory bound and the
 * worker is replaced. Jobs are sent in batches (one message per batch, not per job) so that a hot
 * path of small evaluations pays one thread hop per batch; the queue is bounded.
 *
 * The worker side is `serveJobs(handler)` in a module of its own (see worker.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * The worker module to start: the compiled `.js` beside the caller (dist/, .test-build/), or, when
 * the caller runs from its TypeScript source (tsx: benchmarks, scripts), the `.ts` through tsx.
 */
function workerEntry(script: URL): { url: URL | string; eval?: boolean } {
  if (script.protocol !== 'file:' || existsSync(fileURLToPath(script))) return { url: script };
  const ts = new URL(script.href.replace(/\.js$/, '.ts'));
  if (!existsSync(fileURLToPath(ts))) return { url: script };
  const code = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(ts.href)}); })`;
  return { url: code, eval: true };
}

/** Which bound a job hit. */
export type SandboxBound = 'time' | 'memory' | 'output' | 'depth' | 'queue' | 'crash';

/** A job refused or cut by a bound: `message` names the bound and its value. */
export class SandboxError extends Error {
  constructor(
    readonly bound: SandboxBound,
    message: string,
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}

export interface WorkerPoolOptions<J = unknown> {
  /** The worker module (compiled JS beside this one), which calls `serveJobs`. */
  script: URL;
  /** What runs in it, for messages ("expression", "script test"). */
  what: string;
  /** Workers at most (started when first needed). */
  size: number;
  /** Heap of one worker (old generation), MiB. */
  heapMb: number;
  /** Stack of one worker, MiB. */
  stackMb?: number;
  /** Jobs waiting at most; beyond, a job is refused at once. */
  maxQueue?: number;
  /** Jobs sent to a worker in one message at most. */
  maxBatch?: number;
  /** Passed to the worker as `workerData.options`. */
  workerOptions?: unknown;
  /**
   * Jobs every new worker runs before its first batch (their replies are dropped): the state a
   * stateful worker must hold again after one was replaced (e.g. the live scripts' isolates).
   */
  prelude?: () => Array<{ job: J; deadlineMs: number }>;
}

/** What runs jobs: a `WorkerPool` (threads of this process) or a `HostedPool` (a process of its own). */
export interface JobPool<J, R> {
  /** Runs `job` within `deadlineMs` of wall time from when a worker starts it. */
  run(job: J, deadlineMs: number): Promise<R>;
  /** Starts a worker ahead of the first job. */
  warm(): void;
  close(): Promise<void>;
  /** Jobs waiting. */
  readonly queued: number;
  /** Workers replaced after a bound or a crash. */
  readonly replaced: number;
}

/** The worker's reply for one job. */
export type JobReply<R> = { ok: true; value: R } | { ok: false; error: string; bound?: SandboxBound };

interface Pending<J, R> {
  job: J;
  deadlineMs: number;
  resolve: (r: R) => void;
  reject: (e: Error) => void;
}

interface Slot<J, R> {
  worker: Worker;
  /** [index of the job being run, when it started (epoch ms; 0: between jobs)], written by the worker. */
  progress: Float64Array;
  batch: Pending<J, R>[] | null;
  dead: boolean;
}

/** How long past its deadline a job may run before its worker is terminated (the evaluator's own checks come first). */
const GRACE_MS = 250;
const WATCH_MS = 25;

export class WorkerPool<J, R> implements JobPool<J, R> {
  readonly #o: Required<Pick<WorkerPoolOptions<J>, 'maxQueue' | 'maxBatch'>> & WorkerPoolOptions<J>;
  readonly #slots: Slot<J, R>[] = [];
  #queue: Pending<J, R>[] = [];
  #scheduled = false;
  #watch: NodeJS.Timeout | undefined;
  #closed = false;
  /** Workers terminated for a time bound, or lost to a memory bound or a crash (for tests and metrics). */
  replaced = 0;

  constructor(options: WorkerPoolOptions<J>) {
    this.#o = { maxQueue: 10_000, maxBatch: 64, ...options };
  }

  /** Runs `job` in a worker within `deadlineMs` of wall time from when the worker starts it. */
  run(job: J, deadlineMs: number): Promise<R> {
    if (this.#closed)
      return Promise.reject(new SandboxError('crash', `the ${this.#o.what} sandbox is closed`));
    if (this.#queue.length >= this.#o.maxQueue)
      return Promise.reject(
        new SandboxError(
          'queue',
          `${this.#o.what} queue limit exceeded: more than ${this.#o.maxQueue} evaluations waiting`,
        ),
      );
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ job, deadlineMs, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        queueMicrotask(() => this.#dispatch());
      }
    });
  }

  /** Starts one worker now, so that the first job does not wait for a worker to load. */
  warm(): void {
    if (!this.#closed && this.#slots.length === 0) this.#spawn();
  }

  /** Jobs waiting for a worker. */
  get queued(): number {
    return this.#queue.length;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#watch) clearInterval(this.#watch);
    this.#watch = undefined;
    for (const p of this.#queue) p.reject(new SandboxError('crash', `the ${this.#o.what} sandbox is closed`));
    this.#queue = [];
    const slots = this.#slots.splice(0);
    for (const s of slots) {
      s.dead = true;
      for (const p of s.batch ?? [])
        p.reject(new SandboxError('crash', `the ${this.#o.what} sandbox is closed`));
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  #dispatch(): void {
    this.#scheduled = false;
    while (this.#queue.length > 0 && !this.#closed) {
      let slot = this.#slots.find((s) => s.batch === null && !s.dead);
      if (!slot) {
        if (this.#slots.length >= this.#o.size) return;
        slot = this.#spawn();
        if (slot.batch) continue; // its prelude first
      }
      const batch = this.#queue.splice(0, this.#o.maxBatch);
      slot.batch = batch;
      slot.progress[0] = 0;
      slot.progress[1] = 0;
      slot.worker.postMessage(batch.map((p) => ({ job: p.job, deadlineMs: p.deadlineMs })));
    }
    this.#watchBatches();
  }

  #watchBatches(): void {
    if (this.#slots.some((s) => s.batch) && !this.#watch) {
      this.#watch = setInterval(() => this.#check(), WATCH_MS);
      this.#watch.unref();
    }
  }

  #spawn(): Slot<J, R> {
    const shared = new SharedArrayBuffer(16);
    const entry = workerEntry(this.#o.script);
    const worker = new Worker(entry.url, {
      ...(entry.eval ? { eval: true } : {}),
      workerData: { progress: shared, options: this.#o.workerOptions },
      resourceLimits: {
        maxOldGenerationSizeMb: this.#o.heapMb,
        maxYoungGenerationSizeMb: Math.max(4, Math.min(32, Math.floor(this.#o.heapMb / 4))),
        ...(this.#o.stackMb ? { stackSizeMb: this.#o.stackMb } : {}),
      },
      stdout: false,
      stderr: false,
    });
    worker.unref();
    const slot: Slot<J, R> = { worker, progress: new Float64Array(shared), batch: null, dead: false };
    worker.on('message', (replies: JobReply<R>[]) => {
      const batch = slot.batch;
      if (!batch || slot.dead) return;
      slot.batch = null;
      for (let i = 0; i < batch.length; i++) {
        const r = replies[i]!;
        if (r.ok) batch[i]!.resolve(r.value);
        else batch[i]!.reject(r.bound ? new SandboxError(r.bound, r.error) : new Error(r.error));
      }
      this.#dispatch();
    });
    worker.on('error', (err: Error & { code?: string }) => {
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.#lose(
        slot,
        memory ? 'memory' : 'crash',
        memory
          ? `${this.#o.what} memory limit exceeded: the evaluation needed more than ${this.#o.heapMb} MiB`
          : `${this.#o.what} failed: ${err.message}`,
      );
    });
    worker.on('exit', () => this.#lose(slot, 'crash', `${this.#o.what} worker exited`));
    this.#slots.push(slot);
    const prelude = this.#o.prelude?.() ?? [];
    if (prelude.length > 0) {
      const noop = () => undefined;
      slot.batch = prelude.map((p) => ({ ...p, resolve: noop, reject: noop }));
      worker.postMessage(prelude);
      this.#watchBatches();
    }
    return slot;
  }

  /** Every `WATCH_MS` while a batch runs: terminates a worker whose job is past its deadline. */
  #check(): void {
    const now = Date.now();
    let busy = false;
    for (const s of this.#slots) {
      if (!s.batch || s.dead) continue;
      busy = true;
      const index = s.progress[0]!;
      const started = s.progress[1]!;
      const job = s.batch[index];
      if (started > 0 && job && now - started > job.deadlineMs + GRACE_MS) {
        this.#lose(s, 'time', `${this.#o.what} time limit exceeded: stopped after ${job.deadlineMs} ms`);
        void s.worker.terminate();
      }
    }
    if (!busy && this.#watch) {
      clearInterval(this.#watch);
      this.#watch = undefined;
    }
  }

  /**
   * `slot`'s worker is gone (terminated, out of memory, crashed): the job it was running fails with
   * `bound`, the rest of its batch goes back to the front of the queue, a new worker takes over.
   */
  #lose(slot: Slot<J, R>, bound: SandboxBound, message: string): void {
    if (slot.dead) return;
    slot.dead = true;
    this.replaced++;
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
    const batch = slot.batch ?? [];
    slot.batch = null;
    const index = slot.progress[0]!;
    const failed = batch[index];
    failed?.reject(new SandboxError(bound, message));
    this.#queue.unshift(...batch.filter((p) => p !== failed));
    if (!this.#closed && this.#queue.length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => this.#dispatch());
    }
  }
}

export { HostedPool } from './hosted.js';
