/**
 * The processor kinds of the catalogue, as plain state machines: `input` takes one value of one
 * input and answers the outputs it causes; `tick` (about every 250 ms) lets time-driven kinds
 * emit (tumbling windows closing, debounce, downsampling). No bus, no GraphQL, no I/O here.
 */
import type { EvalFunction, MathNode } from 'mathjs';
import { badRequest } from '../../kernel/errors.js';
import type { InputSpec } from './catalogue.js';
import { num, type Output, type Processor, type ProcessorContext } from './processor.js';
import type { LiveScripts } from './live-scripts.js';
import { WindowProcessor } from './window-processor.js';

export type { Output, Processor, ProcessorContext, Sink } from './processor.js';
export { WindowProcessor } from './window-processor.js';

class RateProcessor implements Processor {
  #last: { v: number; t: number } | undefined;
  constructor(private readonly perMs: number) {}
  input(_i: number, raw: unknown, t: number): Output | undefined {
    const v = num(raw);
    if (v === undefined) return undefined;
    const last = this.#last;
    this.#last = { v, t };
    if (!last || t <= last.t) return undefined;
    return { value: ((v - last.v) / (t - last.t)) * this.perMs, timestamp: t };
  }
}

class IntegratorProcessor implements Processor {
  #last: { v: number; t: number } | undefined;
  #total: number;
  constructor(
    private readonly unitMs: number,
    initial: number,
  ) {
    this.#total = initial;
  }
  input(_i: number, raw: unknown, t: number): Output | undefined {
    const v = num(raw);
    if (v === undefined) return undefined;
    const last = this.#last;
    this.#last = { v, t };
    if (last && t > last.t) this.#total += ((v + last.v) / 2) * ((t - last.t) / this.unitMs);
    return { value: this.#total, timestamp: t };
  }
  snapshot(): unknown {
    return { total: this.#total, last: this.#last ?? null };
  }
  restore(s: unknown): void {
    const st = s as { total?: number; last?: { v: number; t: number } | null };
    if (typeof st?.total === 'number') this.#total = st.total;
    if (st?.last) this.#last = st.last;
  }
}

class DebounceProcessor implements Processor {
  #pending: { value: unknown; t: number; at: number } | undefined;
  constructor(private readonly ms: number) {}
  input(_i: number, value: unknown, t: number): undefined {
    this.#pending = { value, t, at: Date.now() };
    return undefined;
  }
  tick(now: number): Output | undefined {
    const p = this.#pending;
    if (!p || now - p.at < this.ms) return undefined;
    this.#pending = undefined;
    return { value: p.value, timestamp: p.t + this.ms };
  }
}

class DeadbandProcessor implements Processor {
  #last: number | undefined;
  constructor(private readonly band: number) {}
  input(_i: number, raw: unknown, t: number): Output | undefined {
    const v = num(raw);
    if (v === undefined) return undefined;
    if (this.#last !== undefined && Math.abs(v - this.#last) < this.band) return undefined;
    this.#last = v;
    return { value: v, timestamp: t };
  }
}

/** Threshold and range alarms with hysteresis: the output is the alarm state, a boolean. */
class AlarmProcessor implements Processor {
  #on: boolean | undefined;
  constructor(
    private readonly test: (v: number, on: boolean) => boolean,
    private readonly every: boolean,
  ) {}
  input(_i: number, raw: unknown, t: number): Output | undefined {
    const v = num(raw);
    if (v === undefined) return undefined;
    const was = this.#on ?? false;
    const on = this.test(v, was);
    const changed = this.#on === undefined || on !== was;
    this.#on = on;
    if (!changed && !this.every) return undefined;
    return { value: on, timestamp: t, metadata: { input: v, changed } };
  }
}

function thresholdTest(limit: number, direction: string, h: number) {
  return direction === 'below'
    ? (v: number, on: boolean) => (on ? v < limit + h : v < limit)
    : (v: number, on: boolean) => (on ? v > limit - h : v > limit);
}

function rangeTest(min: number, max: number, h: number) {
  return (v: number, on: boolean) => (on ? v < min + h || v > max - h : v < min || v > max);
}

/** The math expression language: mathjs, compiled once; scope is the inputs and the variables. */
let mathjs: typeof import('mathjs') | undefined;
/**
 * Loads the expression library (mathjs takes most of a second to import on a slow machine: it is
 * loaded when the first expression is checked, not at every start of the edge).
 */
export async function loadExpressions(): Promise<void> {
  mathjs ??= await import('mathjs');
}

export function compileExpression(text: string): EvalFunction {
  if (!mathjs) throw new Error('the expression library is not loaded (loadExpressions)');
  let node: MathNode;
  try {
    node = mathjs.parse(text);
  } catch (err) {
    throw badRequest(`Parameters.expression: ${(err as Error).message}`);
  }
  // The work of one evaluation is bounded by the expression's length: no function definitions
  // (recursion), no ranges and no functions that build or walk large structures or loop.
  node.traverse((n) => {
    const name = n.type === 'FunctionNode' ? (n as unknown as { fn: { name?: string } }).fn.name : undefined;
    if (n.type === 'FunctionAssignmentNode' || n.type === 'RangeNode' || (name && HEAVY.has(name)))
      throw badRequest(
        `Parameters.expression: ${name ? `function ${name}` : n.type === 'RangeNode' ? 'ranges' : 'function definitions'} not allowed (expressions are bounded by their length)`,
      );
  });
  return node.compile();
}

/** mathjs functions that build large matrices, loop over callbacks or evaluate text. */
const HEAVY = new Set(
  'zeros ones identity range matrix sparse resize reshape random randomInt pickRandom kron map forEach filter apply evaluate parse compile import createUnit simplify derivative rationalize lsolve lusolve inv det expm sqrtm eigs fft ifft'.split(
    ' ',
  ),
);

class ExpressionProcessor implements Processor {
  readonly #fn: EvalFunction;
  readonly #names: string[];
  readonly #latest: unknown[];
  #have = 0;
  constructor(
    expression: string,
    inputs: InputSpec[],
    private readonly ctx: ProcessorContext,
  ) {
    this.#fn = compileExpression(expression);
    this.#names = inputs.map((i) => i.name!);
    this.#latest = inputs.map(() => undefined);
  }
  input(i: number, value: unknown, t: number): Output | undefined {
    if (this.#latest[i] === undefined) this.#have++;
    this.#latest[i] = value;
    if (this.#have < this.#names.length) return undefined;
    const scope = new Map<string, unknown>();
    for (const [k, v] of Object.entries(this.ctx.variables())) scope.set(k, v);
    for (let k = 0; k < this.#names.length; k++) scope.set(this.#names[k]!, this.#latest[k]);
    let result: unknown = this.#fn.evaluate(scope);
    if (
      result !== null &&
      typeof result === 'object' &&
      typeof (result as { valueOf(): unknown }).valueOf === 'function'
    ) {
      const prim = (result as { valueOf(): unknown }).valueOf();
      result = typeof prim === 'object' ? JSON.parse(JSON.stringify(result)) : prim;
    }
    return { value: result, timestamp: t };
  }
}

class JoinProcessor implements Processor {
  readonly #latest: Array<{ v: unknown; t: number } | undefined>;
  constructor(
    private readonly names: string[],
    private readonly toleranceMs: number,
  ) {
    this.#latest = names.map(() => undefined);
  }
  input(i: number, v: unknown, t: number): Output | undefined {
    this.#latest[i] = { v, t };
    let min = Infinity;
    let max = -Infinity;
    for (const l of this.#latest) {
      if (!l) return undefined;
      min = Math.min(min, l.t);
      max = Math.max(max, l.t);
    }
    if (max - min > this.toleranceMs) return undefined;
    const value: Record<string, unknown> = {};
    this.names.forEach((n, k) => (value[n] = this.#latest[k]!.v));
    this.#latest.fill(undefined);
    return { value, timestamp: max, metadata: { spreadMs: max - min } };
  }
}

class DownsampleProcessor implements Processor {
  #bucket = -1;
  #last: unknown;
  #sum = 0;
  #n = 0;
  #min = Infinity;
  #max = -Infinity;
  constructor(
    private readonly intervalMs: number,
    private readonly mode: string,
  ) {}
  #emit(): Output | undefined {
    if (this.#n === 0) return undefined;
    const value =
      this.mode === 'mean'
        ? this.#sum / this.#n
        : this.mode === 'min'
          ? this.#min
          : this.mode === 'max'
            ? this.#max
            : this.#last;
    const o = { value, timestamp: (this.#bucket + 1) * this.intervalMs, metadata: { count: this.#n } };
    this.#n = 0;
    this.#sum = 0;
    this.#min = Infinity;
    this.#max = -Infinity;
    return o;
  }
  input(_i: number, v: unknown, t: number): Output | undefined {
    const b = Math.floor(t / this.intervalMs);
    if (b < this.#bucket) return undefined;
    const out = b > this.#bucket ? this.#emit() : undefined;
    this.#bucket = b;
    this.#last = v;
    const n = num(v);
    if (n !== undefined) {
      this.#sum += n;
      this.#min = Math.min(this.#min, n);
      this.#max = Math.max(this.#max, n);
    }
    this.#n++;
    return out;
  }
  tick(now: number): Output | undefined {
    if (this.#n === 0 || now < (this.#bucket + 1) * this.intervalMs + 250) return undefined;
    return this.#emit();
  }
}

class StateCounterProcessor implements Processor {
  #state: string | undefined;
  #since = 0;
  #transitions = 0;
  #time: Record<string, number> = {};
  input(_i: number, v: unknown, t: number): Output {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    if (this.#state !== undefined) {
      this.#time[this.#state] = (this.#time[this.#state] ?? 0) + Math.max(0, t - this.#since);
      if (s !== this.#state) this.#transitions++;
    }
    if (s !== this.#state || this.#state === undefined) this.#since = t;
    else this.#since = t;
    this.#state = s;
    return {
      value: { state: s, transitions: this.#transitions, timeInState: { ...this.#time } },
      timestamp: t,
    };
  }
  snapshot(): unknown {
    return {
      state: this.#state ?? null,
      since: this.#since,
      transitions: this.#transitions,
      time: this.#time,
    };
  }
  restore(st: unknown): void {
    const s = st as {
      state: string | null;
      since: number;
      transitions: number;
      time: Record<string, number>;
    };
    if (!s || typeof s.transitions !== 'number') return;
    this.#state = s.state ?? undefined;
    this.#since = s.since;
    this.#transitions = s.transitions;
    this.#time = s.time ?? {};
  }
}

/** Failure of a script processor (the runtime marks the instance failed and stops feeding it). */
export class ScriptStopped extends Error {
  constructor(
    readonly failure: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A script instance: each message is a job of the live scripts' worker (`LiveScripts`); its
 * outputs come back asynchronously, in order.
 */
export class ScriptProcessor implements Processor {
  /** Input names as JSON strings. */
  readonly #names: string[];
  constructor(
    private readonly scripts: LiveScripts,
    private readonly key: string,
    private readonly inputs: InputSpec[],
    private readonly ctx: ProcessorContext,
    private readonly onConsole: (lines: string[]) => void,
  ) {
    this.#names = inputs.map((x) => JSON.stringify(x.name));
  }
  async input(i: number, value: unknown, t: number, payload: unknown): Promise<Output[] | undefined> {
    const message = `{"input":${this.#names[i]},"value":${JSON.stringify(value)},"timestamp":${t}}`;
    const r = await this.scripts.call(this.key, message, JSON.stringify(payload), this.ctx.variablesJson());
    if (r.console.length) this.onConsole(r.console);
    if (r.ok) return scriptOutputs(r.result, t);
    // A full queue drops this message only; any other failure stops the instance.
    if (r.failure === 'queue') throw new Error(r.error);
    throw new ScriptStopped(r.failure, r.error);
  }
  close(): void {
    this.scripts.dispose(this.key);
  }
}

/** The script's parameters as its `parameters` argument: all but the source itself. */
export function scriptParameters(params: Record<string, unknown>): string {
  const { script: _s, ...rest } = params;
  return JSON.stringify(rest);
}

/** A script's return value as outputs: null/undefined none, an array several, `{value, ...}` one. */
export function scriptOutputs(result: unknown, t: number): Output[] | undefined {
  if (result === undefined || result === null) return undefined;
  const list = Array.isArray(result) ? result : [result];
  return list
    .filter((r) => r !== null && r !== undefined)
    .map((r) => {
      if (typeof r === 'object' && !Array.isArray(r) && Object.hasOwn(r as object, 'value')) {
        const o = r as { value: unknown; timestamp?: unknown; metadata?: unknown };
        return {
          value: o.value,
          timestamp: typeof o.timestamp === 'number' ? o.timestamp : t,
          ...(o.metadata && typeof o.metadata === 'object'
            ? { metadata: o.metadata as Record<string, unknown> }
            : {}),
        };
      }
      return { value: r, timestamp: t };
    });
}

/** Builds the processor of a kind other than `script` (the runtime builds scripts: they need the isolate). */
export function createProcessor(
  kind: string,
  params: Record<string, unknown> & { inputs: InputSpec[] },
  ctx: ProcessorContext,
): Processor {
  switch (kind) {
    case 'window':
      return new WindowProcessor(params);
    case 'rate':
      return new RateProcessor(params.perMs as number);
    case 'integrator':
      return new IntegratorProcessor(params.unitMs as number, params.initial as number);
    case 'debounce':
      return new DebounceProcessor(params.ms as number);
    case 'deadband':
      return new DeadbandProcessor(params.band as number);
    case 'threshold':
      return new AlarmProcessor(
        thresholdTest(params.limit as number, params.direction as string, params.hysteresis as number),
        params.emit === 'every',
      );
    case 'range':
      return new AlarmProcessor(
        rangeTest(params.min as number, params.max as number, params.hysteresis as number),
        params.emit === 'every',
      );
    case 'expression':
      return new ExpressionProcessor(params.expression as string, params.inputs, ctx);
    case 'join':
      return new JoinProcessor(
        params.inputs.map((i) => i.name!),
        params.toleranceMs as number,
      );
    case 'downsample':
      return new DownsampleProcessor(params.intervalMs as number, params.mode as string);
    case 'state-counter':
      return new StateCounterProcessor();
    default:
      throw badRequest(`processor kind "${kind}" has no runtime here`);
  }
}

/** Time-window length of a processor whose state is kept over restarts, else 0. */
export function persistentWindowMs(kind: string, params: Record<string, unknown>): number {
  if (kind === 'window' && typeof params.windowMs === 'number') return params.windowMs;
  if (kind === 'integrator' || kind === 'state-counter') return Infinity;
  return 0;
}
