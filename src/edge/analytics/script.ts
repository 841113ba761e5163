/**
 * Script processors run user JavaScript in a QuickJS isolate (quickjs-emscripten): WebAssembly,
 * its own heap with a memory limit, an interrupt deadline per message, and none of the host: no
 * `process`, no `require`, no file system, no network, no host objects. The script defines
 * `function onMessage(message, parameters, variables)`; values cross the boundary as JSON text.
 */
import type { QuickJSContext, QuickJSHandle, QuickJSRuntime, QuickJSWASMModule } from 'quickjs-emscripten';
import { LIMITS } from './catalogue.js';

/**
 * quickjs-emscripten 0.32's memory limit bounds one allocation, not the total of large strings
 * and typed arrays (justjake/quickjs-emscripten#271), and QuickJS checks for interrupts only every
 * 10,000 steps: a script could grow the shared WebAssembly heap to its 2 GiB maximum. So the
 * growth itself is bounded: while a script runs (calls run one at a time), the QuickJS memory may
 * not grow past the heap size at the call's start plus the script's limit; a refused growth is a
 * failed malloc inside QuickJS, which throws "out of memory" in the script. Other WebAssembly
 * memories of the process are not affected (the check compares the memory's buffer).
 */
let guard: { buffer: () => ArrayBufferLike; cap: number } | undefined;
interface WasmMemory {
  buffer: ArrayBufferLike;
  grow(delta: number): number;
}
const memoryProto = (globalThis as unknown as { WebAssembly: { Memory: { prototype: WasmMemory } } })
  .WebAssembly.Memory.prototype;
const nativeGrow = memoryProto.grow;
memoryProto.grow = function grow(this: WasmMemory, delta: number): number {
  const g = guard;
  if (g !== undefined && this.buffer === g.buffer() && this.buffer.byteLength + delta * 65536 > g.cap)
    throw new RangeError('analytics script memory limit');
  return nativeGrow.call(this, delta);
};

let modulePromise: Promise<QuickJSWASMModule> | undefined;
let current: QuickJSWASMModule | undefined;
/** The QuickJS WebAssembly module, loaded once per process (again after `taint`). */
export const loadQuickJs = (): Promise<QuickJSWASMModule> =>
  (modulePromise ??= import('quickjs-emscripten') // its package too: loaded by the first script
    .then((q) => q.newQuickJSWASMModule())
    .then((m) => (current = m)));
/** The module new sandboxes are made in (loaded by `loadQuickJs`). */
export function quickJs(): QuickJSWASMModule {
  if (!current) throw new Error('QuickJS is not loaded (loadQuickJs)');
  return current;
}

/**
 * A script overflowed the host's own stack inside QuickJS's C code (a deep structure QuickJS walks
 * recursively without checking its stack limit, e.g. JSON.stringify of a 100,000-deep object):
 * V8 threw through the WebAssembly frames, which leaves that module's C stack pointer behind. The
 * sandboxes already in it keep running; new ones are made in a fresh module, loaded now.
 */
function taint(): void {
  modulePromise = undefined;
  void loadQuickJs();
}

/** A host `RangeError` thrown through QuickJS (see `taint`). */
const hostStackOverflow = (err: unknown): boolean =>
  err instanceof RangeError && /call stack/i.test(err.message);

export interface ScriptLimits {
  memoryBytes: number;
  timeoutMs: number;
  /**
   * Output of one call at most, characters of JSON: checked inside the isolate, before the output
   * is copied into the host (default `LIMITS.scriptOutputBytes`).
   */
  outputBytes?: number | undefined;
}

/**
 * Why a script failed: a bound (`timeout`, `memory`, `stack`, `output`), its own error, or (a live
 * processor's message only) `queue`: the message was dropped, the sandbox's queue being full.
 */
export type ScriptFailure = 'timeout' | 'memory' | 'stack' | 'output' | 'queue' | 'error';

export type ScriptResult =
  | { ok: true; result: unknown; console: string[] }
  | { ok: false; failure: ScriptFailure; error: string; console: string[] };

export interface ScriptIssue {
  Message: string;
  Line: number;
  Column: number;
}

/**
 * Made before the script's top level (so that the script cannot change what it relies on):
 * - `JSON.stringify` first checks the value's nesting, iteratively (interruptible), against
 *   `LIMITS.scriptJsonDepth`: QuickJS's own stringify recurses in C, unchecked and quadratic in the
 *   depth, and a deep enough value overflowed the host's stack or ran uninterruptibly for seconds;
 * - `console` formats its arguments inside the isolate and hands the host one line of at most
 *   2,000 characters (a huge argument is never copied out whole);
 * - `__mw_run` (read-only) calls `onMessage` and bounds its output before it is copied out.
 */
const PRELUDE = `
(function () {
  const host = globalThis.__mw_console, native = JSON.stringify, parse = JSON.parse, S = String;
  const isArray = Array.isArray, keys = Object.keys, define = Object.defineProperty;
  delete globalThis.__mw_console;
  class DepthLimit extends Error {}
  DepthLimit.prototype.name = 'DepthLimit';
  const MAX_DEPTH = ${LIMITS.scriptJsonDepth};
  const checkDepth = (v) => {
    if (v === null || typeof v !== 'object') return;
    const stack = [v, 1];
    while (stack.length > 0) {
      const d = stack.pop(), o = stack.pop();
      if (d > MAX_DEPTH) throw new DepthLimit('a value nested deeper than ' + MAX_DEPTH + ' levels (or circular)');
      if (isArray(o)) {
        for (let i = 0; i < o.length; i++) { const c = o[i]; if (c !== null && typeof c === 'object') stack.push(c, d + 1); }
      } else {
        const ks = keys(o);
        for (let i = 0; i < ks.length; i++) { const c = o[ks[i]]; if (c !== null && typeof c === 'object') stack.push(c, d + 1); }
      }
    }
  };
  const stringify = function stringify(value, replacer, space) { checkDepth(value); return native(value, replacer, space); };
  define(JSON, 'stringify', { value: stringify, writable: false, configurable: false });
  const text = (a) => { if (typeof a === 'string') return a; try { const j = stringify(a); return j === undefined ? S(a) : j; } catch (e) { return S(a); } };
  const c = {};
  for (const level of ['log', 'info', 'warn', 'error', 'debug'])
    c[level] = (...args) => { host(level, args.map((a) => text(a).slice(0, 2000)).join(' ').slice(0, 2000)); };
  globalThis.console = c;
  const freeze = (o) => { if (o && typeof o === 'object') { Object.freeze(o); for (const k in o) freeze(o[k]); } return o; };
  // Parameters and variables are parsed again only when their text changed (frozen: shared by calls);
  // the payload is parsed only when the script reads message.payload.
  let pText, pObj, vText, vObj;
  class OutputLimit extends Error {}
  OutputLimit.prototype.name = 'OutputLimit';
  const run = function (m, pj, p, v, max) {
    if (typeof onMessage !== 'function') throw new TypeError('the script defines no function onMessage(message, parameters, variables)');
    if (p !== pText) { pText = p; pObj = freeze(parse(p)); }
    if (v !== vText) { vText = v; vObj = freeze(parse(v)); }
    const msg = parse(m);
    let payload;
    define(msg, 'payload', { enumerable: true, configurable: true, get() { return payload === undefined ? (payload = parse(pj)) : payload; } });
    const r = onMessage(msg, pObj, vObj);
    if (r === undefined) return undefined;
    if (typeof r === 'string' && r.length > max) throw new OutputLimit('the output is a string of ' + r.length + ' characters, more than ' + max);
    const out = stringify(r);
    if (out !== undefined && out.length > max) throw new OutputLimit('the output is ' + out.length + ' characters of JSON, more than ' + max);
    return out;
  };
  define(globalThis, '__mw_run', { value: run, writable: false, configurable: false, enumerable: false });
})();`;

function classify(err: unknown): { failure: ScriptFailure; error: string } {
  const e = err as { name?: string; message?: string; stack?: string } | string;
  const name = typeof e === 'object' && e ? (e.name ?? 'Error') : 'Error';
  const message = typeof e === 'object' && e ? (e.message ?? String(e)) : String(e);
  if (name === 'InternalError' && message === 'interrupted')
    return { failure: 'timeout', error: 'time limit exceeded: the script was interrupted' };
  if (name === 'OutputLimit') return { failure: 'output', error: `output limit exceeded: ${message}` };
  if (name === 'DepthLimit')
    return {
      failure: 'stack',
      error: `depth limit exceeded: JSON.stringify of ${message} (the scripts' JSON depth bound)`,
    };
  if (/^stack overflow$/.test(message)) return stackFailure(`${name}: ${message}`);
  if (message === 'out of memory' || (name === 'RangeError' && /memory|allocation|too large/i.test(message)))
    return { failure: 'memory', error: `memory limit exceeded: ${name}: ${message}` };
  const where = typeof e === 'object' && e?.stack ? ` (${e.stack.trim().split('\n')[0]!.trim()})` : '';
  return { failure: 'error', error: `${name}: ${message}${where}` };
}

function stackFailure(detail: string): { failure: ScriptFailure; error: string } {
  return {
    failure: 'stack',
    error: `stack depth limit exceeded: the script recursed past its ${LIMITS.scriptStackBytes / 1024} KiB stack (${detail})`,
  };
}

/** One isolate running one script. */
export class ScriptSandbox {
  readonly #rt: QuickJSRuntime;
  readonly #ctx: QuickJSContext;
  readonly #limits: ScriptLimits;
  #run: QuickJSHandle | undefined;
  #deadline = 0;
  #console: string[] = [];
  #disposed = false;
  /** Size of the WebAssembly heap when the current call began, and when usage was last checked. */
  readonly #heap: () => number;
  readonly #buffer: () => ArrayBufferLike;
  #heapAtStart = 0;
  #heapChecked = 0;
  #calls = 0;
  #outOfMemory = false;

  private constructor(qjs: QuickJSWASMModule, limits: ScriptLimits) {
    this.#limits = limits;
    this.#rt = qjs.newRuntime();
    this.#rt.setMemoryLimit(limits.memoryBytes);
    // Small enough that QuickJS's own check trips before V8's stack under the WebAssembly frames.
    this.#rt.setMaxStackSize(LIMITS.scriptStackBytes);
    // quickjs-emscripten 0.32's memory limit bounds one allocation, not the total of large strings
    // and typed arrays (justjake/quickjs-emscripten#271): the host bounds the total itself. Calls
    // run one at a time, so heap growth during a call is the running script's: past the limit the
    // call is interrupted; after calls that grew the heap (and every 256th), the runtime's usage is
    // measured and a script above its limit is stopped.
    const mod = (qjs as unknown as { module: { HEAPU8: Uint8Array } }).module;
    this.#heap = () => mod.HEAPU8.byteLength;
    this.#buffer = () => mod.HEAPU8.buffer;
    this.#rt.setInterruptHandler(() => {
      if (this.#heap() - this.#heapAtStart > this.#limits.memoryBytes) {
        this.#outOfMemory = true;
        return true;
      }
      return Date.now() > this.#deadline;
    });
    this.#ctx = this.#rt.newContext();
    const ctx = this.#ctx;
    const host = ctx.newFunction('console', (levelHandle, textHandle) => {
      if (this.#console.length >= LIMITS.maxConsoleLines) return;
      const level = ctx.getString(levelHandle);
      const text = ctx.getString(textHandle).slice(0, 2000);
      this.#console.push(level === 'log' ? text : `[${level}] ${text}`);
    });
    ctx.setProp(ctx.global, '__mw_console', host);
    host.dispose();
    this.#deadline = Date.now() + 1000;
    const prelude = ctx.evalCode(PRELUDE, 'prelude.js');
    if (prelude.error) prelude.error.dispose();
    else prelude.value.dispose();
  }

  /** Compiles and runs the script's top level; a failure answers the reason (and disposes). */
  static async create(
    source: string,
    limits: ScriptLimits,
  ): Promise<{ sandbox: ScriptSandbox; console: string[] } | { error: string; failure: ScriptFailure }> {
    const qjs = await loadQuickJs();
    return ScriptSandbox.createSync(qjs, source, limits);
  }

  static createSync(
    qjs: QuickJSWASMModule,
    source: string,
    limits: ScriptLimits,
  ): { sandbox: ScriptSandbox; console: string[] } | { error: string; failure: ScriptFailure } {
    const s = new ScriptSandbox(qjs, limits);
    s.#deadline = Date.now() + Math.max(limits.timeoutMs, 100);
    s.#heapAtStart = s.#heap();
    guard = { buffer: s.#buffer, cap: s.#heapAtStart + limits.memoryBytes };
    let r;
    try {
      r = s.#ctx.evalCode(source, 'script.js');
    } catch (err) {
      if (!hostStackOverflow(err)) throw err;
      s.#abandon();
      return stackFailure(`RangeError: ${(err as Error).message}`);
    } finally {
      guard = undefined;
    }
    const over = s.#overLimit();
    if (r.error || over) {
      const c = over ?? classify(s.#ctx.dump(r.error!));
      r.error?.dispose();
      if (!r.error) r.value.dispose();
      s.dispose();
      return c;
    }
    r.value.dispose();
    s.#run = s.#ctx.getProp(s.#ctx.global, '__mw_run');
    const out = s.#console;
    s.#console = [];
    return { sandbox: s, console: out };
  }

  /** Calls `onMessage` with JSON texts; never throws for what the script does. */
  /**
   * `message` is `{ input, value, timestamp }` as JSON; `payload` the whole payload as JSON (parsed
   * in the isolate only when the script reads `message.payload`).
   */
  call(
    messageJson: string,
    payloadJson: string,
    parametersJson: string,
    variablesJson: string,
  ): ScriptResult {
    if (this.#disposed || !this.#run)
      return { ok: false, failure: 'error', error: 'script disposed', console: [] };
    const ctx = this.#ctx;
    const m = ctx.newString(messageJson);
    const pj = ctx.newString(payloadJson);
    const p = ctx.newString(parametersJson);
    const v = ctx.newString(variablesJson);
    const max = ctx.newNumber(this.#limits.outputBytes ?? LIMITS.scriptOutputBytes);
    this.#console = [];
    this.#deadline = Date.now() + this.#limits.timeoutMs;
    this.#heapAtStart = this.#heap();
    let r;
    try {
      guard = { buffer: this.#buffer, cap: this.#heapAtStart + this.#limits.memoryBytes };
      r = ctx.callFunction(this.#run, ctx.undefined, m, pj, p, v, max);
    } catch (err) {
      guard = undefined;
      if (!hostStackOverflow(err)) throw err;
      this.#abandon();
      return { ok: false, ...stackFailure(`RangeError: ${(err as Error).message}`), console: this.#console };
    } finally {
      guard = undefined;
    }
    for (const h of [m, pj, p, v, max]) h.dispose();
    const lines = this.#console;
    this.#console = [];
    const over = this.#overLimit();
    if (r.error || over) {
      const c = over ?? classify(ctx.dump(r.error!));
      if (r.error) r.error.dispose();
      else r.value.dispose();
      return { ok: false, ...c, console: lines };
    }
    const text: unknown = ctx.dump(r.value);
    r.value.dispose();
    if (text === undefined) return { ok: true, result: undefined, console: lines };
    return { ok: true, result: JSON.parse(text as string), console: lines };
  }

  /** A memory failure when the isolate went past its limit (checked cheaply, see the constructor). */
  #overLimit(): { failure: ScriptFailure; error: string } | undefined {
    const limit = this.#limits.memoryBytes;
    const failure = {
      failure: 'memory' as const,
      error: `memory limit exceeded: the script used more than ${limit} bytes`,
    };
    if (this.#outOfMemory) return failure;
    const heap = this.#heap();
    if (heap === this.#heapChecked && ++this.#calls % 64 !== 0) return undefined;
    this.#heapChecked = heap;
    return this.memoryUsed() > limit ? failure : undefined;
  }

  /** Heap bytes the isolate uses now. */
  memoryUsed(): number {
    const h = this.#rt.computeMemoryUsage();
    try {
      return (this.#ctx.dump(h) as { memory_used_size?: number }).memory_used_size ?? 0;
    } finally {
      h.dispose();
    }
  }

  /**
   * After a host stack overflow inside QuickJS (see `taint`): the runtime's C state is half
   * unwound and freeing it would abort, so it is left as it is (its memory stays with its module).
   */
  #abandon(): void {
    this.#disposed = true;
    taint();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    try {
      this.#run?.dispose();
      this.#ctx.dispose();
      this.#rt.dispose();
    } catch {
      // A runtime that ran out of memory may refuse a clean teardown; its memory goes with it.
    }
  }
}

/** Syntax errors of `source` with line and column (1-based), without running it. */
export async function validateScript(source: string): Promise<ScriptIssue[]> {
  const qjs = await loadQuickJs();
  const rt = qjs.newRuntime();
  rt.setMemoryLimit(LIMITS.scriptMemoryBytes);
  rt.setMaxStackSize(LIMITS.scriptStackBytes);
  const deadline = Date.now() + 1000;
  rt.setInterruptHandler(() => Date.now() > deadline);
  const ctx = rt.newContext();
  let broken = false;
  try {
    let r;
    try {
      r = ctx.evalCode(source, 'script.js', { compileOnly: true });
    } catch (err) {
      if (!hostStackOverflow(err)) throw err;
      broken = true;
      taint();
      return [{ Message: stackFailure(`RangeError: ${(err as Error).message}`).error, Line: 1, Column: 1 }];
    }
    if (!r.error) {
      r.value.dispose();
      const issues: ScriptIssue[] = [];
      if (!/\bfunction\s+onMessage\s*\(|\bonMessage\s*=/.test(source))
        issues.push({
          Message: 'the script defines no function onMessage(message, parameters, variables)',
          Line: 1,
          Column: 1,
        });
      return issues;
    }
    const e = ctx.dump(r.error) as { name?: string; message?: string; stack?: string; lineNumber?: number };
    r.error.dispose();
    const m = /script\.js:(\d+)(?::(\d+))?/.exec(e.stack ?? '');
    return [
      {
        Message: `${e.name ?? 'Error'}: ${e.message ?? ''}`,
        Line: m ? Number(m[1]) : (e.lineNumber ?? 1),
        Column: m?.[2] ? Number(m[2]) : 1,
      },
    ];
  } finally {
    if (!broken) {
      ctx.dispose();
      rt.dispose();
    }
  }
}
