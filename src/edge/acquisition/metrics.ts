/**
 * The acquisition engine's state and counters as Prometheus text, for `/devicehub/metrics`
 * (exposition format 0.0.4). Clients of the product family read the gauge
 * `loopedge_dh_device_state{alias=...}` (1 connected, 0 not).
 */
import { PrometheusWriter, writeProcessMetrics } from '../../kernel/prometheus.js';
import type { DeviceStatus } from './engine.js';

/** Latency buckets, in seconds. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** A cumulative histogram of read latencies (observed in milliseconds, exported in seconds). */
export class LatencyHistogram {
  readonly counts = new Array<number>(BUCKETS.length).fill(0);
  count = 0;
  sumMs = 0;

  observe(ms: number): void {
    this.count++;
    this.sumMs += ms;
    const s = ms / 1000;
    for (let i = 0; i < BUCKETS.length; i++) {
      if (s <= BUCKETS[i]!) {
        this.counts[i]!++;
        break;
      }
    }
  }
}

const STATES = ['connecting', 'connected', 'failed', 'stopped'] as const;

export function acquisitionMetrics(devices: DeviceStatus[]): string {
  const out = new PrometheusWriter();
  const labels = (d: DeviceStatus) => ({ alias: d.name, device_id: d.id, driver: d.driver });

  out.family('loopedge_dh_device_state', 'gauge', 'device connection: 1 connected, 0 not connected');
  for (const d of devices) out.sample('loopedge_dh_device_state', labels(d), d.state === 'connected' ? 1 : 0);
  out.family(
    'loopedge_dh_device_connection_state',
    'gauge',
    'device connection state, 1 for the current one',
  );
  for (const d of devices)
    for (const s of STATES)
      out.sample('loopedge_dh_device_connection_state', { ...labels(d), state: s }, d.state === s ? 1 : 0);
  const counter = (
    name: string,
    help: string,
    f: (d: DeviceStatus) => number,
    type: 'counter' | 'gauge' = 'counter',
  ) =>
    out.family(
      name,
      type,
      help,
      devices.map((d) => [labels(d), f(d)] as const),
    );
  counter('loopedge_dh_device_tags', 'tags configured on the device', (d) => d.tags, 'gauge');
  counter('loopedge_dh_device_reads_total', 'tag values read successfully', (d) => d.reads);
  counter('loopedge_dh_device_read_errors_total', 'tag reads that failed', (d) => d.errors);
  counter('loopedge_dh_device_writes_total', 'writes done through the Command topics', (d) => d.writes);
  counter('loopedge_dh_device_write_errors_total', 'writes that failed', (d) => d.writeErrors);
  counter('loopedge_dh_device_connects_total', 'successful connections', (d) => d.connects);
  counter(
    'loopedge_dh_device_overruns_total',
    'polls skipped: the previous one was still running',
    (d) => d.overruns,
  );

  const h = 'loopedge_dh_device_read_duration_seconds';
  out.family(h, 'histogram', 'duration of a poll (one driver read of the tags due together)');
  for (const d of devices) {
    const l = labels(d);
    let cum = 0;
    for (let i = 0; i < BUCKETS.length; i++) {
      cum += d.latency.counts[i]!;
      out.sample(`${h}_bucket`, { ...l, le: BUCKETS[i]! }, cum);
    }
    out.sample(`${h}_bucket`, { ...l, le: '+Inf' }, d.latency.count);
    out.sample(`${h}_sum`, l, d.latency.sumMs / 1000);
    out.sample(`${h}_count`, l, d.latency.count);
  }
  return writeProcessMetrics(out).text();
}
