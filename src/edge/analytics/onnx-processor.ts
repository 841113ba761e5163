/**
 * The `onnx` processor kind: an uploaded ONNX model (AI suite, kind `model`) run with
 * onnxruntime-node on a window of input values. A sample is the latest value of every input (taken
 * when any input brings a value and all have one); once `window` samples are there, every `stride`
 * samples the window (oldest first, each sample's inputs in their order) is one float32 tensor of
 * shape `inputShape` (default `[1, window × inputs]`) given to the model's input `inputName`;
 * the output `output` is published (a number when it has one element, else the list of them).
 * Runs of one instance are in order, at most `MAX_PENDING` waiting (then values are dropped and
 * counted as errors). A model that fails to load or to run fails the instance, not the edge.
 */
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { num, type Output, type Processor } from './processor.js';
import { ScriptStopped } from './processors.js';

/** Inferences of one instance waiting at most. */
export const MAX_PENDING = 8;
/** Values in one window (samples × inputs) at most. */
export const MAX_MODEL_VALUES = 65_536;

type Ort = typeof import('onnxruntime-node');
let ort: Ort | undefined;
/** onnxruntime-node is loaded when the first model starts, not at every start of the edge. */
export async function loadOrt(): Promise<Ort> {
  if (!ort) {
    const mod = (await import('onnxruntime-node')) as Ort & { default?: Ort };
    ort = mod.InferenceSession ? mod : mod.default!;
  }
  return ort;
}

/** `"1,8"` as dims, checked against the number of values of a window. */
export function parseShape(text: string | undefined, values: number): number[] {
  if (text === undefined || text === '') return [1, values];
  const dims = text.split(',').map((d) => Number(d.trim()));
  if (dims.length === 0 || dims.length > 8 || dims.some((d) => !Number.isSafeInteger(d) || d < 1))
    throw new Error(`inputShape "${text}" must be 1 to 8 positive whole numbers separated by commas`);
  const product = dims.reduce((a, b) => a * b, 1);
  if (product !== values)
    throw new Error(`inputShape "${text}" holds ${product} values, a window has ${values} (window × inputs)`);
  return dims;
}

export interface OnnxParams {
  model: string;
  window: number;
  stride: number;
  inputName?: string | undefined;
  inputShape?: string | undefined;
  output?: string | undefined;
  threads: number;
  inputs: number;
}

export class OnnxProcessor implements Processor {
  readonly #session: InferenceSession;
  readonly #ort: Ort;
  readonly #p: OnnxParams;
  readonly #input: string;
  readonly #output: string;
  readonly #dims: number[];
  readonly #latest: Array<number | undefined>;
  #have = 0;
  /** The window, oldest sample first: `window × inputs` values in a ring. */
  readonly #ring: Float32Array;
  #samples = 0;
  #sinceRun = 0;
  #pending = 0;
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(ortMod: Ort, session: InferenceSession, p: OnnxParams) {
    this.#ort = ortMod;
    this.#session = session;
    this.#p = p;
    this.#input = p.inputName ?? session.inputNames[0]!;
    this.#output = p.output ?? session.outputNames[0]!;
    if (!session.inputNames.includes(this.#input))
      throw new Error(`the model has no input "${this.#input}" (inputs: ${session.inputNames.join(', ')})`);
    if (!session.outputNames.includes(this.#output))
      throw new Error(
        `the model has no output "${this.#output}" (outputs: ${session.outputNames.join(', ')})`,
      );
    const values = p.window * p.inputs;
    this.#dims = parseShape(p.inputShape, values);
    this.#ring = new Float32Array(values);
    this.#latest = new Array<number | undefined>(p.inputs).fill(undefined);
    this.#sinceRun = p.stride - 1;
  }

  /** Loads the model at `path`; throws (with the runtime's reason) when it cannot. */
  static async load(path: string, p: OnnxParams): Promise<OnnxProcessor> {
    const o = await loadOrt();
    let session: InferenceSession;
    try {
      session = await o.InferenceSession.create(path, {
        intraOpNumThreads: p.threads,
        interOpNumThreads: 1,
        executionMode: 'sequential',
      });
    } catch (err) {
      throw new Error(`model "${p.model}" failed to load: ${(err as Error).message}`);
    }
    try {
      return new OnnxProcessor(o, session, p);
    } catch (err) {
      await session.release().catch(() => undefined);
      throw new Error(`model "${p.model}": ${(err as Error).message}`);
    }
  }

  input(i: number, raw: unknown, t: number): Promise<Output | undefined> | undefined {
    const v = num(raw);
    if (v === undefined) return undefined;
    if (this.#latest[i] === undefined) this.#have++;
    this.#latest[i] = v;
    if (this.#have < this.#p.inputs) return undefined;
    // Shift the window by one sample and append the latest values.
    const k = this.#p.inputs;
    this.#ring.copyWithin(0, k);
    for (let j = 0; j < k; j++) this.#ring[this.#ring.length - k + j] = this.#latest[j]!;
    if (this.#samples < this.#p.window) this.#samples++;
    if (this.#samples < this.#p.window) return undefined;
    // The first full window runs, then every `stride` samples.
    if (++this.#sinceRun < this.#p.stride) return undefined;
    this.#sinceRun = 0;
    if (this.#pending >= MAX_PENDING)
      throw new Error(`the model is ${MAX_PENDING} runs behind: value dropped`);
    const data = this.#ring.slice();
    this.#pending++;
    const run = this.#chain.then(() => this.#run(data, t));
    this.#chain = run.catch(() => undefined);
    return run.finally(() => this.#pending--);
  }

  /** Runs the model on one window (called in order, one at a time). */
  async run(data: Float32Array): Promise<Tensor> {
    const feeds = { [this.#input]: new this.#ort.Tensor('float32', data, this.#dims) };
    const results = await this.#session.run(feeds, [this.#output]);
    return results[this.#output]!;
  }

  async #run(data: Float32Array, t: number): Promise<Output | undefined> {
    if (this.#closed) return undefined;
    const started = performance.now();
    let out: Tensor;
    try {
      out = await this.run(data);
    } catch (err) {
      throw new ScriptStopped('model', `model "${this.#p.model}" failed to run: ${(err as Error).message}`);
    }
    const values = Array.from(out.data as ArrayLike<number | bigint>, (x) => Number(x));
    return {
      value: values.length === 1 ? values[0]! : values,
      timestamp: t,
      metadata: {
        model: this.#p.model,
        output: this.#output,
        dims: [...out.dims],
        inferenceMs: Math.round((performance.now() - started) * 1000) / 1000,
      },
    };
  }

  close(): void {
    this.#closed = true;
    void this.#chain.then(() => this.#session.release()).catch(() => undefined);
  }
}
