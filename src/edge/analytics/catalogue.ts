/**
 * The catalogue of processor kinds, as data: each kind names its typed `Parameters` (besides the
 * `inputs` every kind takes) with their types, defaults and bounds. The runtime (`processors.ts`)
 * implements them; `GetProcessorKinds` serves this list; create and update check against it.
 */
import { badRequest } from '../../kernel/errors.js';

export type ParamType = 'number' | 'integer' | 'string' | 'boolean' | 'enum';

export interface ParamDef {
  name: string;
  type: ParamType;
  required?: boolean;
  default?: unknown;
  values?: readonly string[];
  min?: number;
  max?: number;
  description: string;
}

export interface ProcessorKind {
  kind: string;
  description: string;
  /** Inputs it takes: at least `minInputs`, at most `maxInputs`. */
  minInputs: number;
  maxInputs: number;
  params: readonly ParamDef[];
}

/** One input of an instance: a DataHub subject (wildcards allowed) or another instance's output. */
export interface InputSpec {
  subject?: string;
  processor?: string;
  /** JSON path into the payload (`value`, `metadata.unit`, `$.values[0]`); default `value`. */
  path?: string;
  /** The input's name in expressions, joins and scripts; default `in<index>`. */
  name?: string;
}

export const STATISTICS = ['count', 'sum', 'mean', 'min', 'max', 'stddev', 'percentile'] as const;
export type Statistic = (typeof STATISTICS)[number];

/** Bounds (docs/security.md, "Analytics"). */
export const LIMITS = {
  maxInstances: 10_000,
  maxInputs: 16,
  maxWindowMs: 7 * 24 * 3600_000,
  /** Values a window keeps at most (by time or by count); older ones are dropped. */
  maxWindowValues: 100_000,
  maxExpressionLength: 4096,
  maxScriptBytes: 64 * 1024,
  scriptMemoryBytes: 32 * 1024 * 1024,
  maxScriptMemoryBytes: 256 * 1024 * 1024,
  scriptTimeoutMs: 50,
  maxScriptTimeoutMs: 5000,
  maxConsoleLines: 100,
  /** QuickJS stack of a script (recursion depth), bytes. */
  scriptStackBytes: 256 * 1024,
  /** Nesting of a value given to JSON.stringify in a script (its outputs too), levels. */
  scriptJsonDepth: 1000,
  /** Output of one script call at most (characters of JSON), unless the edge's option says otherwise. */
  scriptOutputBytes: 1024 * 1024,
  maxNameLength: 200,
} as const;

const windowParams: ParamDef[] = [
  { name: 'statistic', type: 'enum', values: STATISTICS, default: 'mean', description: 'what is computed' },
  {
    name: 'percentile',
    type: 'number',
    min: 0,
    max: 100,
    default: 50,
    description: 'for statistic percentile: 0..100 (linear interpolation)',
  },
  {
    name: 'windowType',
    type: 'enum',
    values: ['tumbling', 'sliding'],
    default: 'tumbling',
    description: 'tumbling: one output per window; sliding: one output per value, over the last window',
  },
  {
    name: 'windowMs',
    type: 'integer',
    min: 1,
    max: LIMITS.maxWindowMs,
    description: 'window by time (payload timestamps); give windowMs or windowCount',
  },
  {
    name: 'windowCount',
    type: 'integer',
    min: 1,
    max: LIMITS.maxWindowValues,
    description: 'window by number of values',
  },
];

export const CATALOGUE: readonly ProcessorKind[] = [
  {
    kind: 'window',
    description: 'Windowed statistic: count, sum, mean, min, max, standard deviation, percentile',
    minInputs: 1,
    maxInputs: 1,
    params: windowParams,
  },
  {
    kind: 'rate',
    description: 'Rate of change between consecutive values, per perMs milliseconds',
    minInputs: 1,
    maxInputs: 1,
    params: [{ name: 'perMs', type: 'integer', min: 1, default: 1000, description: 'unit of time' }],
  },
  {
    kind: 'integrator',
    description: 'Running integral (trapezoidal) of the value over time, per unitMs',
    minInputs: 1,
    maxInputs: 1,
    params: [
      { name: 'unitMs', type: 'integer', min: 1, default: 1000, description: 'unit of time' },
      { name: 'initial', type: 'number', default: 0, description: 'starting value' },
    ],
  },
  {
    kind: 'debounce',
    description: 'Emits a value once it has been stable (no new value) for ms milliseconds',
    minInputs: 1,
    maxInputs: 1,
    params: [
      { name: 'ms', type: 'integer', min: 1, max: 3600_000, required: true, description: 'quiet time' },
    ],
  },
  {
    kind: 'deadband',
    description: 'Emits a value only when it differs from the last emitted one by at least band',
    minInputs: 1,
    maxInputs: 1,
    params: [{ name: 'band', type: 'number', min: 0, required: true, description: 'absolute deadband' }],
  },
  {
    kind: 'threshold',
    description:
      'Alarm with hysteresis: on when the value goes above high (below low for direction below), off when it comes back past the limit by hysteresis',
    minInputs: 1,
    maxInputs: 1,
    params: [
      { name: 'limit', type: 'number', required: true, description: 'alarm limit' },
      { name: 'direction', type: 'enum', values: ['above', 'below'], default: 'above', description: '' },
      { name: 'hysteresis', type: 'number', min: 0, default: 0, description: 'distance back to clear' },
      {
        name: 'emit',
        type: 'enum',
        values: ['change', 'every'],
        default: 'change',
        description: 'emit on state changes only, or on every value',
      },
    ],
  },
  {
    kind: 'range',
    description: 'Range alarm with hysteresis: on outside [min, max], off once back inside by hysteresis',
    minInputs: 1,
    maxInputs: 1,
    params: [
      { name: 'min', type: 'number', required: true, description: 'low limit' },
      { name: 'max', type: 'number', required: true, description: 'high limit' },
      { name: 'hysteresis', type: 'number', min: 0, default: 0, description: 'distance back to clear' },
      { name: 'emit', type: 'enum', values: ['change', 'every'], default: 'change', description: '' },
    ],
  },
  {
    kind: 'expression',
    description:
      'Math expression (mathjs syntax, no eval) over the inputs by name and the variables; computed when an input arrives and every input has a value',
    minInputs: 1,
    maxInputs: LIMITS.maxInputs,
    params: [{ name: 'expression', type: 'string', required: true, description: 'e.g. (a + b) / 2' }],
  },
  {
    kind: 'join',
    description:
      'Join by time: one object of every input value (by name) when all arrived within toleranceMs',
    minInputs: 2,
    maxInputs: LIMITS.maxInputs,
    params: [
      { name: 'toleranceMs', type: 'integer', min: 0, default: 1000, description: 'largest time spread' },
    ],
  },
  {
    kind: 'downsample',
    description: 'At most one value per intervalMs: the last, the mean, the min or the max of the interval',
    minInputs: 1,
    maxInputs: 1,
    params: [
      { name: 'intervalMs', type: 'integer', min: 1, required: true, description: 'interval' },
      {
        name: 'mode',
        type: 'enum',
        values: ['last', 'mean', 'min', 'max'],
        default: 'last',
        description: '',
      },
    ],
  },
  {
    kind: 'state-counter',
    description: 'Time in each state (ms) and number of transitions of a discrete value',
    minInputs: 1,
    maxInputs: 1,
    params: [],
  },
  {
    kind: 'script',
    description:
      'User JavaScript in a QuickJS isolate: function onMessage(message, parameters, variables) returns the output value (or an object with value/metadata, or null for none)',
    minInputs: 1,
    maxInputs: LIMITS.maxInputs,
    params: [
      { name: 'script', type: 'string', required: true, description: 'the source' },
      {
        name: 'timeoutMs',
        type: 'integer',
        min: 1,
        max: LIMITS.maxScriptTimeoutMs,
        default: LIMITS.scriptTimeoutMs,
        description: 'time limit per message',
      },
      {
        name: 'memoryBytes',
        type: 'integer',
        min: 1024 * 1024,
        max: LIMITS.maxScriptMemoryBytes,
        default: LIMITS.scriptMemoryBytes,
        description: 'memory limit of the isolate',
      },
    ],
  },
  {
    kind: 'onnx',
    description:
      'ONNX model of the AI suite (onnxruntime-node) on a window of input values: the window (oldest first, the inputs of each sample in order) is one float32 tensor; the output is published (a number, or the list of its values)',
    minInputs: 1,
    maxInputs: LIMITS.maxInputs,
    params: onnxParams(),
  },
];

function onnxParams(): ParamDef[] {
  return [
    { name: 'model', type: 'string', required: true, description: 'name of an uploaded model (kind model)' },
    { name: 'window', type: 'integer', min: 1, max: 4096, default: 1, description: 'samples per run' },
    {
      name: 'stride',
      type: 'integer',
      min: 1,
      max: 4096,
      default: 1,
      description: 'samples between runs once the window is full',
    },
    { name: 'inputName', type: 'string', description: "the model's input fed (default: its first)" },
    {
      name: 'inputShape',
      type: 'string',
      description: 'dims of the input tensor, e.g. "1,8" (default: 1, window × inputs)',
    },
    { name: 'output', type: 'string', description: "the model's output published (default: its first)" },
    { name: 'threads', type: 'integer', min: 1, max: 4, default: 1, description: 'threads of one run' },
  ];
}

export const KINDS = new Map(CATALOGUE.map((k) => [k.kind, k]));

const INPUT_KEYS = new Set(['subject', 'processor', 'path', 'name']);
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Checks `parameters` against the kind and answers them normalised (defaults filled in, inputs
 * as `InputSpec`s). Any other key is refused, so that typos do not pass silently.
 */
export function checkParameters(
  kind: string,
  parameters: unknown,
): Record<string, unknown> & { inputs: InputSpec[] } {
  const def = KINDS.get(kind);
  if (!def)
    throw badRequest(`unknown processor kind "${kind}" (known: ${CATALOGUE.map((k) => k.kind).join(', ')})`);
  if (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters))
    throw badRequest('Parameters must be a JSON object');
  const given = parameters as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const known = new Set(def.params.map((p) => p.name));
  for (const key of Object.keys(given)) {
    if (key !== 'inputs' && !known.has(key))
      throw badRequest(
        `Parameters.${key}: not a parameter of kind ${kind} (known: inputs, ${[...known].join(', ')})`,
      );
  }
  const rawInputs = given.inputs ?? [];
  if (!Array.isArray(rawInputs)) throw badRequest('Parameters.inputs must be an array');
  if (rawInputs.length < def.minInputs || rawInputs.length > def.maxInputs)
    throw badRequest(
      `Parameters.inputs: kind ${kind} takes ${def.minInputs === def.maxInputs ? def.minInputs : `${def.minInputs} to ${def.maxInputs}`} input(s), got ${rawInputs.length}`,
    );
  const inputs: InputSpec[] = [];
  const names = new Set<string>();
  for (const [i, raw] of rawInputs.entries()) {
    const at = `Parameters.inputs[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
      throw badRequest(`${at} must be an object`);
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(r)) if (!INPUT_KEYS.has(k)) throw badRequest(`${at}.${k}: unknown field`);
    for (const k of INPUT_KEYS)
      if (r[k] !== undefined && typeof r[k] !== 'string') throw badRequest(`${at}.${k} must be a string`);
    const spec: InputSpec = {};
    if (r.subject !== undefined) spec.subject = r.subject as string;
    if (r.processor !== undefined) spec.processor = r.processor as string;
    if ((spec.subject === undefined) === (spec.processor === undefined))
      throw badRequest(`${at}: give exactly one of subject and processor`);
    spec.path = (r.path as string | undefined) ?? 'value';
    parsePath(spec.path, `${at}.path`);
    spec.name = (r.name as string | undefined) ?? `in${i}`;
    if (!NAME_RE.test(spec.name)) throw badRequest(`${at}.name "${spec.name}" must be an identifier`);
    if (names.has(spec.name)) throw badRequest(`${at}.name "${spec.name}" is given twice`);
    names.add(spec.name);
    inputs.push(spec);
  }
  for (const p of def.params) {
    const at = `Parameters.${p.name}`;
    let v = given[p.name];
    if (v === undefined || v === null) {
      if (p.required) throw badRequest(`${at} is required for kind ${kind}`);
      if (p.default !== undefined) out[p.name] = p.default;
      continue;
    }
    switch (p.type) {
      case 'number':
      case 'integer':
        if (typeof v !== 'number' || !Number.isFinite(v)) throw badRequest(`${at} must be a number`);
        if (p.type === 'integer' && !Number.isInteger(v)) throw badRequest(`${at} must be an integer`);
        if (p.min !== undefined && v < p.min) throw badRequest(`${at} must be at least ${p.min}`);
        if (p.max !== undefined && v > p.max) throw badRequest(`${at} must be at most ${p.max}`);
        break;
      case 'string':
        if (typeof v !== 'string') throw badRequest(`${at} must be a string`);
        break;
      case 'boolean':
        if (typeof v !== 'boolean') throw badRequest(`${at} must be a boolean`);
        break;
      case 'enum':
        if (typeof v !== 'string' || !p.values!.includes(v))
          throw badRequest(`${at} must be one of ${p.values!.join(', ')}`);
        break;
    }
    out[p.name] = v;
    v = undefined;
  }
  if (kind === 'window') {
    if ((out.windowMs === undefined) === (out.windowCount === undefined))
      throw badRequest('Parameters: give exactly one of windowMs and windowCount');
  }
  if (kind === 'range' && (out.min as number) > (out.max as number))
    throw badRequest('Parameters.min must not be above Parameters.max');
  if (kind === 'expression' && (out.expression as string).length > LIMITS.maxExpressionLength)
    throw badRequest(`Parameters.expression is longer than ${LIMITS.maxExpressionLength} characters`);
  if (kind === 'onnx') checkOnnx(out, inputs.length);
  if (kind === 'script' && Buffer.byteLength(out.script as string) > LIMITS.maxScriptBytes)
    throw badRequest(`Parameters.script is larger than ${LIMITS.maxScriptBytes} bytes`);
  return Object.assign(out, { inputs });
}

function checkOnnx(out: Record<string, unknown>, inputs: number): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(out.model as string))
    throw badRequest(`Parameters.model "${String(out.model)}" is not the name of a model of the AI suite`);
  const values = (out.window as number) * inputs;
  if (values > 65_536) throw badRequest('Parameters: window × inputs must be at most 65536 values');
  const shape = out.inputShape as string | undefined;
  if (shape === undefined) return;
  const dims = shape.split(',').map((d) => Number(d.trim()));
  if (dims.length > 8 || dims.some((d) => !Number.isSafeInteger(d) || d < 1))
    throw badRequest(
      `Parameters.inputShape "${shape}" must be 1 to 8 positive whole numbers separated by commas`,
    );
  if (dims.reduce((a, b) => a * b, 1) !== values)
    throw badRequest(`Parameters.inputShape "${shape}" must hold window × inputs = ${values} values`);
}

export type PathStep = string | number;

/** Parses `value`, `$.a.b[0]`, `metadata.unit` into steps. */
export function parsePath(path: string, at = 'path'): PathStep[] {
  let p = path.trim();
  if (p.startsWith('$')) p = p.slice(1);
  if (p.startsWith('.')) p = p.slice(1);
  if (p === '') return [];
  const steps: PathStep[] = [];
  const re = /([^.[\]]+)|\[(\d+)\]/gy;
  let m: RegExpExecArray | null;
  let pos = 0;
  while (pos < p.length) {
    if (p[pos] === '.') {
      pos++;
      continue;
    }
    re.lastIndex = pos;
    m = re.exec(p);
    if (!m) throw badRequest(`${at}: "${path}" is not a JSON path`);
    steps.push(m[2] !== undefined ? Number(m[2]) : m[1]!);
    pos = re.lastIndex;
  }
  return steps;
}

export function readPath(obj: unknown, steps: readonly PathStep[]): unknown {
  let cur = obj;
  for (const s of steps) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (typeof s === 'string' && !Object.hasOwn(cur, s)) return undefined;
    cur = (cur as Record<string | number, unknown>)[s];
  }
  return cur;
}
