/**
 * A `WorkerPool` in a process of its own. A worker thread's heap limit (`resourceLimits`) does not
 * always hold: when one step of an evaluation allocates past the limit faster than V8 can stop
 * the thread (JSONata's `[1..9999999].$string()` does, in one native call), V8 aborts the whole
 * process, worker and edge together ("FATAL ERROR: Reached heap limit"). In a host process of its
 * own the pool can only take that process down: the jobs it held fail with the memory bound, the
 * edge goes on, and the next job starts a new host.
 *
 * The host (host.ts) runs an ordinary `WorkerPool` with the same options, so that deadlines,
 * batching and the replacement of a stuck worker are unchanged; jobs and replies cross the process
 * boundary in batches (one IPC message per tick each way), with structured-clone serialization.
 * The host starts at the first job (or `warm()`), not with the service.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SandboxError, type JobPool, type WorkerPoolOptions } from './index.js';

/** Parent → host. */
export type HostRequest =
  | { t: 'init'; options: HostedPoolInit }
  | { t: 'run'; jobs: Array<{ id: number; job: unknown; deadlineMs: number }> }
  | { t: 'warm' };

/** Host → parent: replies of finished jobs, and the host pool's count of replaced workers. */
export type HostReply = {
  t: 'done';
  replaced: number;
  results: Array<
    { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string; bound?: string }
  >;
};

/** What the host needs to build its pool (a `prelude` cannot cross a process boundary). */
export type HostedPoolInit = Omit<WorkerPoolOptions, 'script' | 'prelude'> & { script: string };

interface InFlight<R> {
  resolve: (r: R) => void;
  reject: (e: Error) => void;
}

/** The host entry: compiled `host.js` beside this file, or `host.ts` through tsx (benches run sources). */
function hostEntry(): { path: string; execArgv: string[] } {
  const js = new URL('./host.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return { path: fileURLToPath(js), execArgv: [] };
  return { path: fileURLToPath(new URL('./host.ts', import.meta.url)), execArgv: ['--import', 'tsx'] };
}

export class HostedPool<J, R> implements JobPool<J, R> {
  readonly #o: WorkerPoolOptions<J>;
  readonly #maxInFlight: number;
  #host: ChildProcess | undefined;
  readonly #inFlight = new Map<number, InFlight<R>>();
  #nextId = 1;
  #outbox: Array<{ id: number; job: unknown; deadlineMs: number }> = [];
  #closed = false;
  /** Workers the current host replaced (its own count). */
  #hostReplaced = 0;
  /** Workers replaced by earlier hosts, and the hosts lost (out of memory, crashed). */
  #replacedBefore = 0;

  constructor(options: WorkerPoolOptions<J>) {
    if (options.prelude) throw new Error('a hosted pool cannot run a prelude');
    this.#o = options;
    // What the host's own queue admits, plus what its workers hold.
    this.#maxInFlight = (options.maxQueue ?? 10_000) + options.size * (options.maxBatch ?? 64);
  }

  get replaced(): number {
    return this.#replacedBefore + this.#hostReplaced;
  }

  /** Jobs sent to the host (or about to be) and not answered yet. */
  get queued(): number {
    return this.#inFlight.size;
  }

  run(job: J, deadlineMs: number): Promise<R> {
    if (this.#closed)
      return Promise.reject(new SandboxError('crash', `the ${this.#o.what} sandbox is closed`));
    if (this.#inFlight.size >= this.#maxInFlight)
      return Promise.reject(
        new SandboxError(
          'queue',
          `${this.#o.what} queue limit exceeded: more than ${this.#o.maxQueue ?? 10_000} evaluations waiting`,
        ),
      );
    const id = this.#nextId++;
    return new Promise<R>((resolve, reject) => {
      if (this.#inFlight.size === 0) this.#hold(true);
      this.#inFlight.set(id, { resolve, reject });
      if (this.#outbox.length === 0) queueMicrotask(() => this.#flush());
      this.#outbox.push({ id, job, deadlineMs });
    });
  }

  warm(): void {
    if (!this.#closed) this.#ensureHost().send({ t: 'warm' } satisfies HostRequest);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#failAll(new SandboxError('crash', `the ${this.#o.what} sandbox is closed`));
    const host = this.#host;
    this.#host = undefined;
    if (host && host.exitCode === null && host.signalCode === null) {
      const gone = new Promise<void>((r) => host.once('exit', () => r()));
      host.ref(); // an idle host is unreferenced: its exit must keep this process waiting for it
      host.kill('SIGKILL');
      await gone;
    }
  }

  #flush(): void {
    const jobs = this.#outbox;
    this.#outbox = [];
    if (jobs.length === 0 || this.#closed) return;
    this.#ensureHost().send({ t: 'run', jobs } satisfies HostRequest);
  }

  #ensureHost(): ChildProcess {
    if (this.#host) return this.#host;
    const entry = hostEntry();
    const host = fork(entry.path, [], {
      execArgv: entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    });
    this.#host = host;
    const { prelude: _none, script, ...rest } = this.#o;
    host.send({ t: 'init', options: { ...rest, script: script.href } } satisfies HostRequest);
    host.on('message', (m: HostReply) => this.#onReply(m));
    host.once('exit', (code, signal) => this.#onExit(host, code, signal));
    // A send to a host that just died fails here; its exit (above) fails the jobs it held.
    host.on('error', () => undefined);
    // The host keeps this process alive only while it holds jobs (see #hold).
    this.#refHost(host, this.#inFlight.size > 0);
    return host;
  }

  /** While jobs are in flight, the host and its channel keep this process alive; idle, they do not. */
  #hold(on: boolean): void {
    if (this.#host) this.#refHost(this.#host, on);
  }

  #refHost(host: ChildProcess, on: boolean): void {
    const channel = host.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (on) {
      host.ref();
      channel?.ref?.();
    } else {
      host.unref();
      channel?.unref?.();
    }
  }

  #onReply(m: HostReply): void {
    this.#hostReplaced = m.replaced;
    for (const r of m.results) {
      const p = this.#inFlight.get(r.id);
      if (!p) continue;
      this.#inFlight.delete(r.id);
      if (this.#inFlight.size === 0) this.#hold(false);
      if (r.ok) p.resolve(r.value as R);
      else
        p.reject(r.bound ? new SandboxError(r.bound as SandboxError['bound'], r.error) : new Error(r.error));
    }
  }

  /**
   * The host died: V8 aborts a process whose worker outgrew its heap faster than it could be
   * stopped (SIGABRT), which is the memory bound; any other end is a crash. Every job it held
   * fails; the next job starts a new host.
   */
  #onExit(host: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#host !== host) return;
    this.#host = undefined;
    this.#replacedBefore += this.#hostReplaced + 1;
    this.#hostReplaced = 0;
    const memory = signal === 'SIGABRT' || code === 134;
    this.#failAll(
      memory
        ? new SandboxError(
            'memory',
            `${this.#o.what} memory limit exceeded: the evaluation needed more than ${this.#o.heapMb} MiB`,
          )
        : new SandboxError(
            'crash',
            `${this.#o.what} sandbox process ended (${signal ?? `exit code ${code}`})`,
          ),
    );
  }

  #failAll(err: SandboxError): void {
    this.#outbox = [];
    const pending = [...this.#inFlight.values()];
    this.#inFlight.clear();
    this.#hold(false);
    for (const p of pending) p.reject(err);
  }
}
