/**
 * The expression sandbox of digital twins: every JSONata transformation (an instance's attribute,
 * the playground) is evaluated in a worker thread of a kernel `WorkerPool`, never on the edge's
 * main loop, within the bounds below; a bound hit is the evaluation's error, naming the bound.
 * Evaluations of many messages are batched into one message to a worker.
 *
 * The pool runs in a process of its own (`HostedPool`): a JSONata step can allocate past a worker
 * thread's heap limit faster than V8 stops the thread (`[1..9999999].$string()`), and V8 then aborts
 * the whole process; in its own process, that ends only the sandbox, and the evaluation fails with
 * the memory bound.
 */
import { HostedPool } from '../../kernel/sandbox/index.js';

export interface ExpressionLimits {
  /** Wall time of one evaluation, ms (JSONata's guardrail; the worker is replaced past it). */
  timeoutMs: number;
  /** Nested evaluation steps at most (recursion depth). */
  maxDepth: number;
  /** Output of one evaluation, bytes of JSON. */
  maxOutputBytes: number;
  /** Heap of one worker, MiB. */
  heapMb: number;
  /** Worker threads at most. */
  workers: number;
}

export const DEFAULT_EXPRESSION_LIMITS: ExpressionLimits = {
  timeoutMs: 250,
  maxDepth: 1000,
  maxOutputBytes: 1024 * 1024,
  heapMb: 128,
  workers: 1,
};

export interface ExpressionJob {
  expression: string;
  input: unknown;
  params: unknown;
}

export class ExpressionSandbox {
  readonly limits: ExpressionLimits;
  readonly #pool: HostedPool<ExpressionJob, string>;

  constructor(limits: Partial<ExpressionLimits> = {}) {
    this.limits = { ...DEFAULT_EXPRESSION_LIMITS, ...limits };
    this.#pool = new HostedPool<ExpressionJob, string>({
      script: new URL('./expression-worker.js', import.meta.url),
      what: 'expression',
      size: this.limits.workers,
      heapMb: this.limits.heapMb,
      maxQueue: 10_000,
      maxBatch: 256,
      workerOptions: this.limits,
    });
  }

  /** Evaluates `expression` on `input` with `$params`; rejects with the error (a bound named). */
  async evaluate(expression: string, input: unknown, params: unknown): Promise<unknown> {
    const text = await this.#pool.run({ expression, input, params }, this.limits.timeoutMs);
    return JSON.parse(text) as unknown;
  }

  /** Starts a worker ahead of the first evaluation. */
  warm(): void {
    this.#pool.warm();
  }

  /** Workers replaced after a bound (time past the grace, memory) or a crash. */
  get replaced(): number {
    return this.#pool.replaced;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
