/** The DataHub's counters as Prometheus text (the kernel's writer, exposition format 0.0.4). */
import { PrometheusWriter, type Labels } from '../../kernel/prometheus.js';
import type { PrefixCounters } from './bus.js';
import type { GatewayCounters } from './gateway/server.js';

/** What the per-connection families need of a connection. */
export interface ConnectionCounters {
  cid: number;
  name: string;
  address: string;
  msgsIn: number;
  bytesIn: number;
  msgsOut: number;
  bytesOut: number;
  pendingBytes: number;
}

export function prometheusText(input: {
  prefixes: PrefixCounters[];
  subscriptions: number;
  gateway: GatewayCounters | null;
  connections: readonly ConnectionCounters[];
}): string {
  const out = new PrometheusWriter();
  const byPrefix = (f: (c: PrefixCounters) => number) =>
    input.prefixes.map((c) => [{ prefix: c.prefix }, f(c)] as const);
  out.family(
    'millwright_datahub_messages_in_total',
    'counter',
    'messages published, by subject prefix',
    byPrefix((c) => c.msgsIn),
  );
  out.family(
    'millwright_datahub_bytes_in_total',
    'counter',
    'payload bytes published (bytes and text payloads), by subject prefix',
    byPrefix((c) => c.bytesIn),
  );
  out.family(
    'millwright_datahub_messages_out_total',
    'counter',
    'messages delivered to subscribers, by subject prefix',
    byPrefix((c) => c.msgsOut),
  );
  out.family(
    'millwright_datahub_bytes_out_total',
    'counter',
    'payload bytes delivered, by subject prefix',
    byPrefix((c) => c.bytesOut),
  );
  out.family(
    'millwright_datahub_drops_total',
    'counter',
    'messages dropped for a full subscriber buffer, by subject prefix',
    byPrefix((c) => c.drops),
  );
  out.family(
    'millwright_datahub_slow_consumers_total',
    'counter',
    'slow consumer events, by subject prefix',
    byPrefix((c) => c.slowConsumers),
  );
  out.family('millwright_datahub_subscriptions', 'gauge', 'subscriptions on the bus', [
    [undefined, input.subscriptions],
  ]);
  if (input.gateway) gatewayFamilies(out, input.gateway, input.connections);
  return out.text();
}

/** The NATS gateway's families: its connections, refusals and per-connection counters. */
function gatewayFamilies(
  out: PrometheusWriter,
  g: GatewayCounters,
  connections: readonly ConnectionCounters[],
): void {
  out.family('millwright_datahub_connections', 'gauge', 'open NATS gateway connections', [
    [undefined, g.connections],
  ]);
  out.family('millwright_datahub_connections_total', 'counter', 'NATS gateway connections accepted', [
    [undefined, g.connectionsTotal],
  ]);
  out.family(
    'millwright_datahub_gateway_slow_consumers_total',
    'counter',
    'gateway connections cut as slow consumers',
    [[undefined, g.slowConsumers]],
  );
  out.family(
    'millwright_datahub_auth_failures_total',
    'counter',
    'gateway connections refused for credentials',
    [[undefined, g.authFailures]],
  );
  out.family(
    'millwright_datahub_permission_violations_total',
    'counter',
    'publishes and subscriptions refused by an access key',
    [[undefined, g.permissionViolations]],
  );
  const conn = (f: (c: ConnectionCounters) => number) =>
    connections.map(
      (c) => [{ cid: c.cid, name: c.name, address: c.address } satisfies Labels, f(c)] as const,
    );
  out.family(
    'millwright_datahub_connection_messages_in_total',
    'counter',
    'messages received from a connection',
    conn((c) => c.msgsIn),
  );
  out.family(
    'millwright_datahub_connection_bytes_in_total',
    'counter',
    'payload bytes received from a connection',
    conn((c) => c.bytesIn),
  );
  out.family(
    'millwright_datahub_connection_messages_out_total',
    'counter',
    'messages sent to a connection',
    conn((c) => c.msgsOut),
  );
  out.family(
    'millwright_datahub_connection_bytes_out_total',
    'counter',
    'payload bytes sent to a connection',
    conn((c) => c.bytesOut),
  );
  out.family(
    'millwright_datahub_connection_pending_bytes',
    'gauge',
    'bytes waiting to be sent to a connection',
    conn((c) => c.pendingBytes),
  );
}
