/**
 * The Prometheus text exposition format (0.0.4), written once for every metrics endpoint:
 *
 *     const out = new PrometheusWriter();
 *     out.family('millwright_x_total', 'counter', 'what it counts');
 *     out.sample('millwright_x_total', { prefix: 'devicehub.raw' }, 42);
 *     reply.type(PROMETHEUS_CONTENT_TYPE).send(out.text());
 *
 * Label values are escaped (backslash, double quote, newline); label order is the object's.
 */
import { getHeapSpaceStatistics } from 'node:v8';
import { loopWatch } from './loop-watch.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
export type Labels = Readonly<Record<string, string | number>>;

export class PrometheusWriter {
  readonly #lines: string[] = [];

  /** `# HELP` and `# TYPE` of a family, then its samples when given. */
  family(
    name: string,
    type: MetricType,
    help: string,
    samples?: Iterable<readonly [Labels | undefined, number]>,
  ): this {
    this.#lines.push(
      `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`,
      `# TYPE ${name} ${type}`,
    );
    if (samples) for (const [labels, value] of samples) this.sample(name, labels, value);
    return this;
  }

  /** One sample line: `name{labels} value`. */
  sample(name: string, labels: Labels | undefined, value: number): this {
    this.#lines.push(`${name}${formatLabels(labels)} ${formatValue(value)}`);
    return this;
  }

  /** The text, each line ended by a newline. */
  text(): string {
    return this.#lines.length === 0 ? '' : `${this.#lines.join('\n')}\n`;
  }
}

export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function formatLabels(labels: Labels | undefined): string {
  if (labels === undefined) return '';
  let out = '';
  for (const key in labels) {
    const v = labels[key]!;
    out += `${out === '' ? '' : ','}${key}="${typeof v === 'number' ? formatValue(v) : escapeLabelValue(v)}"`;
  }
  return out === '' ? '' : `{${out}}`;
}

function formatValue(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/**
 * The process's own figures under the names Prometheus client libraries use
 * (`process_resident_memory_bytes`, `nodejs_heap_size_used_bytes`...), for every metrics endpoint.
 */
export function writeProcessMetrics(out: PrometheusWriter): PrometheusWriter {
  const mem = process.memoryUsage();
  const cpu = process.cpuUsage();
  out.family('process_resident_memory_bytes', 'gauge', 'resident memory of the process', [
    [undefined, mem.rss],
  ]);
  out.family('process_cpu_seconds_total', 'counter', 'user and system CPU time of the process', [
    [undefined, (cpu.user + cpu.system) / 1e6],
  ]);
  out.family('nodejs_heap_size_used_bytes', 'gauge', 'JavaScript heap in use', [[undefined, mem.heapUsed]]);
  out.family('nodejs_heap_size_total_bytes', 'gauge', 'JavaScript heap reserved', [
    [undefined, mem.heapTotal],
  ]);
  const spaces = getHeapSpaceStatistics();
  out.family(
    'nodejs_heap_space_size_used_bytes',
    'gauge',
    'JavaScript heap in use, by space',
    spaces.map((s) => [{ space: s.space_name.replace(/_space$/, '') }, s.space_used_size]),
  );
  out.family(
    'nodejs_heap_space_size_total_bytes',
    'gauge',
    'JavaScript heap reserved, by space',
    spaces.map((s) => [{ space: s.space_name.replace(/_space$/, '') }, s.space_size]),
  );
  out.family(
    'nodejs_external_memory_bytes',
    'gauge',
    'memory of buffers and native objects held by JavaScript',
    [[undefined, mem.external]],
  );
  const loop = loopWatch.read();
  out.family(
    'millwright_main_thread_blocked_max_seconds',
    'gauge',
    'longest stretch the main thread ran without yielding (on the CPU, not merely unscheduled)',
    [
      [{ since: 'start' }, loop.longestMs / 1000],
      [{ since: 'ready' }, loop.longestSinceReadyMs / 1000],
    ],
  );
  out.family(
    'millwright_main_thread_blocked_over_50ms_total',
    'counter',
    'stretches over 50 ms the main thread ran without yielding, since the service answered',
    [[{ since: 'ready' }, loop.overSinceReady]],
  );
  out.family(
    'nodejs_eventloop_delay_max_seconds',
    'gauge',
    'largest event-loop delay since the service answered (starvation included)',
    [[undefined, loop.delayMaxMs / 1000]],
  );
  return out;
}
