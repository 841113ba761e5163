/**
 * The two cases of bench/analytics and bench/analytics-cpu, on a bus the caller makes:
 *
 *   (a) a bare bus subscriber per tag computing a 10 s sliding mean in plain code (the ceiling);
 *   (b) built-in `window` processors (mean, sliding, 10 s), or (c) script processors computing the
 *       same mean, each output published on `analytics.publish.<id>` and read by one subscriber.
 */
import pino from 'pino';
import type { DataHub } from '../src/edge/datahub/index.js';
import {
  AnalyticsRuntime,
  OUTPUT_PREFIX,
  type InstanceDef,
  type StateStore,
} from '../src/edge/analytics/runtime.js';
import { AnalyticsLog } from '../src/edge/analytics/log.js';
import { checkParameters } from '../src/edge/analytics/catalogue.js';

export const WINDOW_MS = 10_000;
export const subject = (i: number) => `bench.tag.${i}`;

/** Each case's means, by tag, and how many outputs it made. */
export interface CaseOutputs {
  means: Float64Array;
  outputs: () => number;
}

/**
 * The outputs' reader: one subscriber of `analytics.publish.*` filling `means` by the output's
 * `registerId` (a map lookup per output, so that the harness adds as little as it can). Every case
 * that publishes its means has this same reader.
 */
function outputReader(hub: DataHub, n: number): CaseOutputs {
  const means = new Float64Array(n);
  let count = 0;
  const index = new Map<string, number>();
  for (let i = 0; i < n; i++) index.set(`p${i}`, i);
  hub.subscribe(`${OUTPUT_PREFIX}*`, {
    callback: (msg) => {
      const p = msg.data as { registerId: string; value: number };
      means[index.get(p.registerId)!] = p.value;
      count++;
    },
  });
  return { means, outputs: () => count };
}

/**
 * (a): a bare subscriber per tag with the sliding-window deque, doing the job of (b) in plain code:
 * each value's mean published on `analytics.publish.p<i>` in the DataHub payload shape (the shape
 * and subject of (b)'s output, through an outlet of the bus as the runtime uses), read by the same
 * reader. With `output` false (`mean only`, a reference, not a ceiling: a mean nobody can read is
 * not a job a user needs), it writes the mean into `means` directly and publishes nothing.
 */
export function bareSubscribers(hub: DataHub, n: number, output = true, reader = true): CaseOutputs {
  const read = output && reader ? outputReader(hub, n) : undefined;
  const means = read?.means ?? new Float64Array(n);
  let count = 0;
  for (let i = 0; i < n; i++) {
    let values: number[] = [];
    let times: number[] = [];
    let head = 0;
    let sum = 0;
    const id = `p${i}`;
    const name = `mean ${i}`;
    const out = output ? hub.outlet(`${OUTPUT_PREFIX}${id}`) : undefined;
    hub.subscribe(subject(i), {
      callback: (msg) => {
        const p = msg.json<{ value: number; timestamp: number }>();
        values.push(p.value);
        times.push(p.timestamp);
        sum += p.value;
        const from = p.timestamp - WINDOW_MS;
        while (head < values.length && times[head]! <= from) sum -= values[head++]!;
        if (head > 1024 && head * 2 > values.length) {
          values = values.slice(head);
          times = times.slice(head);
          head = 0;
        }
        const length = values.length - head;
        const mean = sum / length;
        if (out === undefined) {
          means[i] = mean;
          count++;
        } else if (out.interested())
          out.publish({
            success: true,
            datatype: 'float64',
            timestamp: p.timestamp,
            registerId: id,
            value: mean,
            deviceID: 'bench',
            deviceName: 'analytics',
            tagName: name,
            description: 'window',
            metadata: { statistic: 'mean', count: length },
          });
      },
    });
  }
  return read ?? { means, outputs: () => count };
}

/**
 * A sliding 10 s window of one tag in plain code with the least work a mean needs: values and
 * times in a `Float64Array` ring (capacity a power of two, doubled when full, never compacted by
 * copying), a running sum.
 * Answers the window's length after `v` came in; `sum` is the window's sum.
 */
export class Ring {
  values = new Float64Array(2048);
  times = new Float64Array(2048);
  head = 0;
  length = 0;
  sum = 0;

  push(v: number, t: number): number {
    let mask = this.values.length - 1;
    if (this.length > mask) {
      const cap = this.values.length;
      const values = new Float64Array(cap * 2);
      const times = new Float64Array(cap * 2);
      for (let k = 0; k < cap; k++) {
        values[k] = this.values[(this.head + k) & mask]!;
        times[k] = this.times[(this.head + k) & mask]!;
      }
      this.values = values;
      this.times = times;
      this.head = 0;
      mask = cap * 2 - 1;
    }
    const values = this.values;
    const times = this.times;
    const at = (this.head + this.length) & mask;
    values[at] = v;
    times[at] = t;
    let length = this.length + 1;
    let head = this.head;
    let sum = this.sum + v;
    const from = t - WINDOW_MS;
    while (length > 0 && times[head]! <= from) {
      sum -= values[head]!;
      head = (head + 1) & mask;
      length--;
    }
    this.head = head;
    this.length = length;
    this.sum = sum;
    return length;
  }
}

/**
 * (f) the floor of the job: a bare subscriber per tag with a `Ring` (no Millwright code besides
 * the bus), each mean published as (a) and (b) publish it (same subject, payload and reader).
 */
export function floorSubscribers(hub: DataHub, n: number): CaseOutputs {
  const read = outputReader(hub, n);
  for (let i = 0; i < n; i++) {
    const ring = new Ring();
    const id = `p${i}`;
    const name = `mean ${i}`;
    const out = hub.outlet(`${OUTPUT_PREFIX}${id}`);
    hub.subscribe(subject(i), {
      callback: (msg) => {
        const p = msg.data as { value: number; timestamp: number };
        const count = ring.push(p.value, p.timestamp);
        if (out.interested())
          out.publish({
            success: true,
            datatype: 'float64',
            timestamp: p.timestamp,
            registerId: id,
            value: ring.sum / count,
            deviceID: 'bench',
            deviceName: 'analytics',
            tagName: name,
            description: 'window',
            metadata: { statistic: 'mean', count },
          });
      },
    });
  }
  return read;
}

/**
 * (r) the bus's delivery alone: a subscriber per tag that reads the value and keeps it (no mean,
 * no output). Not a ceiling of the job: the part of every case that the bus does.
 */
export function receivers(hub: DataHub, n: number): CaseOutputs {
  const last = new Float64Array(n);
  let count = 0;
  for (let i = 0; i < n; i++)
    hub.subscribe(subject(i), {
      callback: (msg) => {
        last[i] = (msg.data as { value: number }).value;
        count++;
      },
    });
  return { means: last, outputs: () => count };
}

/** (c)'s script: the same sliding mean as (a), in the processors' sandbox. */
const SCRIPT = `
const values = [], times = [];
let head = 0, sum = 0;
function onMessage(m) {
  values.push(m.value); times.push(m.timestamp); sum += m.value;
  const from = m.timestamp - ${WINDOW_MS};
  while (head < values.length && times[head] <= from) sum -= values[head++];
  if (head > 1024 && head * 2 > values.length) { values.splice(0, head); times.splice(0, head); head = 0; }
  return sum / (values.length - head);
}`;

const store: StateStore = {
  load: async () => undefined,
  save: async () => undefined,
  remove: async () => undefined,
};

/** An analytics runtime on `hub` for the benches: silent log, no state kept, no variables. */
export function benchRuntime(
  hub: DataHub,
  modelPath?: (name: string) => string | undefined,
): AnalyticsRuntime {
  return new AnalyticsRuntime({
    hub,
    log: new AnalyticsLog(pino({ level: 'silent' })),
    store,
    variables: () => ({}),
    persistIntervalMs: 0,
    ...(modelPath ? { modelPath } : {}),
  });
}

/**
 * (b) or (c): n processors on the bus, one per tag. With `reader`, the bench's own reader of the
 * outputs (a map lookup per output, so that the harness adds as little as it can) fills `means`.
 */
export async function meanProcessors(
  hub: DataHub,
  n: number,
  kind: 'window' | 'script',
  reader = true,
): Promise<CaseOutputs & { rt: AnalyticsRuntime }> {
  const rt = benchRuntime(hub);
  await rt.init();
  const read = reader ? outputReader(hub, n) : { means: new Float64Array(n), outputs: () => 0 };
  for (let i = 0; i < n; i++) {
    const params =
      kind === 'window'
        ? { inputs: [{ subject: subject(i) }], statistic: 'mean', windowType: 'sliding', windowMs: WINDOW_MS }
        : { inputs: [{ subject: subject(i) }], script: SCRIPT };
    const id = `p${i}`;
    const def: InstanceDef = {
      id,
      workspaceId: 'bench',
      name: `mean ${i}`,
      kind,
      parameters: checkParameters(kind, params),
      enabled: true,
    };
    await rt.apply(def);
  }
  return { rt, ...read };
}
