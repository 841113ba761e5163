/** The DataHub's counters as Prometheus text (exposition format 0.0.4). */
import type { PrefixCounters } from './bus.js';
import type { GatewayCounters } from './gateway/server.js';
import type { ConnectionInfo } from './gateway/connection.js';

const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export function prometheusText(input: {
  prefixes: PrefixCounters[];
  subscriptions: number;
  gateway: GatewayCounters | null;
  connections: ConnectionInfo[];
}): string {
  const lines: string[] = [];
  const family = (name: string, type: 'counter' | 'gauge', help: string, samples: [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`);
  };
  const byPrefix = (f: (c: PrefixCounters) => number): [string, number][] =>
    input.prefixes.map((c) => [`{prefix="${escape(c.prefix)}"}`, f(c)]);
  family(
    'millwright_datahub_messages_in_total',
    'counter',
    'messages published, by subject prefix',
    byPrefix((c) => c.msgsIn),
  );
  family(
    'millwright_datahub_bytes_in_total',
    'counter',
    'payload bytes published (bytes and text payloads), by subject prefix',
    byPrefix((c) => c.bytesIn),
  );
  family(
    'millwright_datahub_messages_out_total',
    'counter',
    'messages delivered to subscribers, by subject prefix',
    byPrefix((c) => c.msgsOut),
  );
  family(
    'millwright_datahub_bytes_out_total',
    'counter',
    'payload bytes delivered, by subject prefix',
    byPrefix((c) => c.bytesOut),
  );
  family(
    'millwright_datahub_drops_total',
    'counter',
    'messages dropped for a full subscriber buffer, by subject prefix',
    byPrefix((c) => c.drops),
  );
  family(
    'millwright_datahub_slow_consumers_total',
    'counter',
    'slow consumer events, by subject prefix',
    byPrefix((c) => c.slowConsumers),
  );
  family('millwright_datahub_subscriptions', 'gauge', 'subscriptions on the bus', [
    ['', input.subscriptions],
  ]);
  if (input.gateway) {
    const g = input.gateway;
    family('millwright_datahub_connections', 'gauge', 'open NATS gateway connections', [['', g.connections]]);
    family('millwright_datahub_connections_total', 'counter', 'NATS gateway connections accepted', [
      ['', g.connectionsTotal],
    ]);
    family(
      'millwright_datahub_gateway_slow_consumers_total',
      'counter',
      'gateway connections cut as slow consumers',
      [['', g.slowConsumers]],
    );
    family(
      'millwright_datahub_auth_failures_total',
      'counter',
      'gateway connections refused for credentials',
      [['', g.authFailures]],
    );
    family(
      'millwright_datahub_permission_violations_total',
      'counter',
      'publishes and subscriptions refused by an access key',
      [['', g.permissionViolations]],
    );
    const conn = (f: (c: ConnectionInfo) => number): [string, number][] =>
      input.connections.map((c) => [
        `{cid="${c.cid}",name="${escape(c.name)}",address="${escape(c.address)}"}`,
        f(c),
      ]);
    family(
      'millwright_datahub_connection_messages_in_total',
      'counter',
      'messages received from a connection',
      conn((c) => c.msgsIn),
    );
    family(
      'millwright_datahub_connection_bytes_in_total',
      'counter',
      'payload bytes received from a connection',
      conn((c) => c.bytesIn),
    );
    family(
      'millwright_datahub_connection_messages_out_total',
      'counter',
      'messages sent to a connection',
      conn((c) => c.msgsOut),
    );
    family(
      'millwright_datahub_connection_bytes_out_total',
      'counter',
      'payload bytes sent to a connection',
      conn((c) => c.bytesOut),
    );
    family(
      'millwright_datahub_connection_pending_bytes',
      'gauge',
      'bytes waiting to be sent to a connection',
      conn((c) => c.pendingBytes),
    );
  }
  return `${lines.join('\n')}\n`;
}
