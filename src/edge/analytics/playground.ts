/**
 * What the analytics API offers beside the processors: a script run on sample messages in a
 * sandbox of its own (`TestProcessorScript`), in a worker thread (off the main loop) within a wall
 * time, a heap and an output bound for the whole call, and the server's load
 * (`SubscribeServerMetrics`).
 */
import os from 'node:os';
import { badRequest } from '../../kernel/errors.js';
import { SandboxError, WorkerPool } from '../../kernel/sandbox/index.js';
import { LIMITS, parsePath, readPath } from './catalogue.js';
import { scriptOutputs } from './processors.js';
import { ScriptSandbox, type ScriptFailure } from './script.js';
import type { AnalyticsService } from './service.js';

export interface ScriptTest {
  script: string;
  messages: unknown[];
  parameters: unknown;
  variables: unknown;
  /** Where the value is in each message (`value` by default). */
  path: string;
  timeoutMs?: number | undefined;
  memoryBytes?: number | undefined;
}

export interface ScriptTestResult {
  /** The outputs of each message run, in order (up to the failing one). */
  outputs: unknown[];
  console: string[];
  error: string | null;
  failure: ScriptFailure | null;
  durationMs: number;
}

/** The bounds of one `TestProcessorScript` call (options `--analytics-script-*`). */
export interface ScriptTestBounds {
  /** Wall time of the whole call, ms. */
  timeoutMs: number;
  /** Output of one message's call, characters of JSON (checked in the isolate). */
  outputBytes: number;
  /** Outputs of the whole call together, characters of JSON. */
  callOutputBytes: number;
  /** Heap of the worker thread, MiB. */
  heapMb: number;
}

/** Refuses a test the API does not take (a 400, on the main loop, before any work). */
export function checkScriptTest(t: ScriptTest): void {
  if (Buffer.byteLength(t.script) > LIMITS.maxScriptBytes)
    throw badRequest(`Script is larger than ${LIMITS.maxScriptBytes} bytes`);
  if (t.messages.length > 1000) throw badRequest('Messages: at most 1000');
}

/** Runs `TestProcessorScript` calls in a worker thread (script-test-worker.ts), one at a time. */
export class ScriptTester {
  readonly #pool: WorkerPool<{ test: ScriptTest; bounds: ScriptTestBounds }, ScriptTestResult>;
  constructor(readonly bounds: ScriptTestBounds) {
    this.#pool = new WorkerPool({
      script: new URL('./script-test-worker.js', import.meta.url),
      what: 'TestProcessorScript',
      size: 1,
      heapMb: bounds.heapMb,
      maxQueue: 16,
      maxBatch: 1,
    });
    // The first test does not wait for the worker and its QuickJS module to load.
    setTimeout(() => this.#pool.warm(), 500).unref();
  }

  async run(t: ScriptTest): Promise<ScriptTestResult> {
    checkScriptTest(t);
    const began = performance.now();
    try {
      return await this.#pool.run({ test: t, bounds: this.bounds }, this.bounds.timeoutMs);
    } catch (err) {
      if (!(err instanceof SandboxError)) throw err;
      const failure = err.bound === 'time' ? 'timeout' : err.bound === 'memory' ? 'memory' : 'error';
      return { outputs: [], console: [], error: err.message, failure, durationMs: performance.now() - began };
    }
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/**
 * Runs `t.script` on each sample message, as a processor would, bounded by the script limits and
 * `bounds` (in the worker; see `ScriptTester`).
 */
export async function testScript(t: ScriptTest, bounds?: ScriptTestBounds): Promise<ScriptTestResult> {
  checkScriptTest(t);
  const callOutputBytes = bounds?.callOutputBytes ?? Infinity;
  let total = 0;
  const timeoutMs = Math.min(t.timeoutMs ?? LIMITS.scriptTimeoutMs, LIMITS.maxScriptTimeoutMs);
  const memoryBytes = Math.min(t.memoryBytes ?? LIMITS.scriptMemoryBytes, LIMITS.maxScriptMemoryBytes);
  const steps = parsePath(t.path);
  const began = performance.now();
  const made = await ScriptSandbox.create(t.script, {
    timeoutMs,
    memoryBytes,
    outputBytes: bounds?.outputBytes,
  });
  if ('error' in made)
    return {
      outputs: [],
      console: [],
      error: made.error,
      failure: made.failure,
      durationMs: performance.now() - began,
    };
  const sandbox = made.sandbox;
  const consoleLines = [...made.console];
  const outputs: unknown[] = [];
  try {
    const paramsJson = JSON.stringify(t.parameters);
    const varsJson = JSON.stringify(t.variables);
    for (const m of t.messages) {
      const ts = (m as { timestamp?: unknown })?.timestamp;
      const at = typeof ts === 'number' ? ts : Date.now();
      const message = { input: 'in0', value: readPath(m, steps) ?? null, timestamp: at };
      const r = sandbox.call(JSON.stringify(message), JSON.stringify(m), paramsJson, varsJson);
      consoleLines.push(...r.console);
      if (!r.ok)
        return {
          outputs,
          console: consoleLines,
          error: r.error,
          failure: r.failure,
          durationMs: performance.now() - began,
        };
      total += r.result === undefined ? 0 : JSON.stringify(r.result).length;
      if (total > callOutputBytes)
        return {
          outputs: [],
          console: consoleLines,
          error: `output limit exceeded: the outputs of the call are more than ${callOutputBytes} characters of JSON`,
          failure: 'output',
          durationMs: performance.now() - began,
        };
      outputs.push(scriptOutputs(r.result, at) ?? []);
    }
  } finally {
    sandbox.dispose();
  }
  return {
    outputs,
    console: consoleLines,
    error: null,
    failure: null,
    durationMs: performance.now() - began,
  };
}

export interface ServerMetricsSample {
  timestamp: string;
  /** Of all the host's cores, since the previous sample. */
  cpuPercent: number;
  memoryRssBytes: number;
  heapUsedBytes: number;
  uptimeSeconds: number;
  processors: number;
  running: number;
  failed: number;
  messagesIn: number;
  messagesOut: number;
}

/** The process's load and the processors' counters, sampled; CPU is measured between samples. */
export class ServerMetrics {
  readonly #analytics: AnalyticsService;
  #cpu = process.cpuUsage();
  #at = performance.now();

  constructor(analytics: AnalyticsService) {
    this.#analytics = analytics;
  }

  sample(): ServerMetricsSample {
    const now = performance.now();
    const used = process.cpuUsage(this.#cpu);
    const pct = ((used.user + used.system) / 1000 / Math.max(1, now - this.#at)) * 100;
    this.#cpu = process.cpuUsage();
    this.#at = now;
    const mem = process.memoryUsage();
    const runtime = this.#analytics.runtime;
    const c = runtime.counts;
    return {
      timestamp: new Date().toISOString(),
      cpuPercent: pct / os.cpus().length,
      memoryRssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      uptimeSeconds: (Date.now() - this.#analytics.startedAt) / 1000,
      processors: c.total,
      running: c.running,
      failed: c.failed,
      messagesIn: runtime.messagesIn,
      messagesOut: runtime.messagesOut,
    };
  }
}
