/**
 * The live script processors' sandbox: every running script instance has its QuickJS isolate in
 * one worker thread (script-worker.ts) of a kernel `WorkerPool`, never on the edge's main loop. A
 * message is one job: its wall time is the instance's `timeoutMs` (QuickJS interrupts itself; a
 * worker still busy past it, plus the pool's grace, is terminated), its output is bounded inside
 * the isolate, and the jobs waiting are bounded. Messages of one instance run in order (one worker,
 * jobs in order). A replaced worker (after a time or memory bound, or a crash) starts every running
 * instance's script again before anything else (`prelude`): their own state (top-level variables)
 * starts over; the instance that caused it fails with the bound.
 */
import { SandboxError, WorkerPool } from '../../kernel/sandbox/index.js';
import type { ScriptFailure, ScriptLimits, ScriptResult } from './script.js';

export type LiveScriptJob =
  | { op: 'create' | 'ensure'; key: string; source: string; limits: ScriptLimits; parameters: string }
  | { op: 'call'; key: string; message: string; payload: string; variables: string }
  | { op: 'dispose'; key: string };

export type LiveScriptReply = ScriptResult;

export interface LiveScriptsOptions {
  /** Heap of the worker thread (V8's; the isolates' memory is bounded per script), MiB. */
  heapMb: number;
  /** Messages waiting for the worker at most; beyond, a message is dropped with the queue bound. */
  maxQueue: number;
}

/**
 * The worker is terminated when a job runs this long past the script's own time limit: QuickJS
 * interrupts a script at its limit itself; this backstop is for C code it cannot interrupt, and
 * is generous so that a loaded machine's pauses never cost the other instances their state.
 */
const BACKSTOP_MS = 1000;
/** Making an isolate (runtime, context, prelude) before the script's top level runs. */
const CREATE_MS = 2000;

export const DEFAULT_LIVE_SCRIPTS: LiveScriptsOptions = { heapMb: 256, maxQueue: 10_000 };

const FAILURES: Partial<Record<SandboxError['bound'], ScriptFailure>> = {
  time: 'timeout',
  memory: 'memory',
  output: 'output',
  queue: 'queue',
};

export class LiveScripts {
  readonly #pool: WorkerPool<LiveScriptJob, LiveScriptReply>;
  /** The running scripts (what a new worker creates again). */
  readonly #running = new Map<string, Extract<LiveScriptJob, { op: 'create' | 'ensure' }>>();
  #next = 0;

  constructor(options: LiveScriptsOptions = DEFAULT_LIVE_SCRIPTS) {
    this.#pool = new WorkerPool<LiveScriptJob, LiveScriptReply>({
      script: new URL('./script-worker.js', import.meta.url),
      what: 'analytics script',
      size: 1,
      heapMb: options.heapMb,
      maxQueue: options.maxQueue,
      maxBatch: 256,
      prelude: () =>
        [...this.#running.values()].map((job) => ({
          job: { ...job, op: 'ensure' as const },
          deadlineMs: CREATE_MS + Math.max(job.limits.timeoutMs, 100),
        })),
    });
  }

  /** Starts `source` (its top level runs in the worker); answers its key for `call`, or its failure. */
  async create(
    source: string,
    limits: ScriptLimits,
    parametersJson: string,
  ): Promise<
    { ok: true; key: string; console: string[] } | { ok: false; failure: ScriptFailure; error: string }
  > {
    const key = `s${++this.#next}`;
    const job = { op: 'create' as const, key, source, limits, parameters: parametersJson };
    const r = await this.#run(job, CREATE_MS + Math.max(limits.timeoutMs, 100));
    if (!r.ok) return { ok: false, failure: r.failure, error: r.error };
    this.#running.set(key, job);
    return { ok: true, key, console: r.console };
  }

  /** Runs one message through the script `key` (never rejects: a bound hit is a failed result). */
  call(key: string, message: string, payload: string, variables: string): Promise<ScriptResult> {
    const limits = this.#running.get(key)?.limits;
    if (!limits)
      return Promise.resolve({
        ok: false,
        failure: 'error',
        error: 'the script is not running',
        console: [],
      });
    return this.#run({ op: 'call', key, message, payload, variables }, limits.timeoutMs + BACKSTOP_MS);
  }

  /** Stops the script `key` (its isolate is freed in the worker). */
  dispose(key: string): void {
    if (!this.#running.delete(key)) return;
    void this.#run({ op: 'dispose', key }, 1000);
  }

  /** Scripts running (for tests and metrics). */
  get size(): number {
    return this.#running.size;
  }

  /** Messages waiting for the worker. */
  get queued(): number {
    return this.#pool.queued;
  }

  /** Workers replaced after a bound or a crash. */
  get replaced(): number {
    return this.#pool.replaced;
  }

  async #run(job: LiveScriptJob, deadlineMs: number): Promise<ScriptResult> {
    try {
      return await this.#pool.run(job, deadlineMs);
    } catch (err) {
      if (!(err instanceof SandboxError)) throw err;
      return { ok: false, failure: FAILURES[err.bound] ?? 'error', error: err.message, console: [] };
    }
  }

  close(): Promise<void> {
    this.#running.clear();
    return this.#pool.close();
  }
}
