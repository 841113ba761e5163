/**
 * What the console shows of the broker's live state, read from aedes and the persistence without
 * changing them: the connected clients with their session and subscriptions, the metrics
 * (messages per second, connections, queued messages), and an administrator's disconnect.
 */
import type { Client } from 'aedes';
import type { AccountService } from '../accounts/index.js';
import { kick, remoteOf } from './aedes-support.js';
import type { UnsBroker } from './broker.js';
import { SqlPersistence } from './sql-persistence.js';

export interface SubscriptionView {
  topic: string;
  qos: number;
}

export interface ConnectionView {
  clientId: string;
  accountId: string | null;
  username: string | null;
  protoLevel: number;
  remote: string;
  /** A clean session (MQTT 3) / Clean Start (MQTT 5): nothing is kept once it disconnects. */
  cleanSession: boolean;
  /** MQTT 5 Session Expiry Interval, seconds (null for MQTT 3). */
  sessionExpiry: number | null;
  keepalive: number;
  subscriptions: SubscriptionView[];
  /** Outgoing QoS 1/2 messages queued for the session (SQL persistence; null with Redis). */
  queued: number | null;
}

/** Subscriptions listed per client at most (the rest are counted in `subscriptionCount`). */
export const MAX_LISTED_SUBSCRIPTIONS = 100;

interface AedesClients {
  clients: Record<string, Client & { keepalive?: number; subscriptions?: Record<string, { qos?: number }> }>;
}

function clientsOf(broker: UnsBroker) {
  return (broker.aedes as unknown as AedesClients).clients;
}

/** A page of the connected clients, by client id, optionally those whose id or user name contains `filter`. */
export function listConnections(
  broker: UnsBroker,
  accounts: AccountService,
  page: { offset: number; limit: number; filter?: string | null },
): { items: (ConnectionView & { subscriptionCount: number })[]; total: number } {
  const clients = clientsOf(broker);
  const store = broker.persistence instanceof SqlPersistence ? broker.persistence : null;
  const needle = page.filter?.toLowerCase() ?? '';
  const views = [];
  for (const id of Object.keys(clients).sort()) {
    const c = clients[id]!;
    if (!c.connected) continue;
    const accountId = broker.accountOf.get(c) ?? null;
    const username = accountId ? (accounts.get(accountId)?.username ?? null) : null;
    if (needle && !id.toLowerCase().includes(needle) && !username?.toLowerCase().includes(needle)) continue;
    views.push({ c, id, accountId, username });
  }
  const items = views.slice(page.offset, page.offset + page.limit).map(({ c, id, accountId, username }) => {
    const subs = Object.entries(c.subscriptions ?? {});
    return {
      clientId: id,
      accountId,
      username,
      protoLevel: c.version,
      remote: remoteOf(c),
      cleanSession: c.clean,
      sessionExpiry: c.version === 5 ? c.sessionExpiryInterval : null,
      keepalive: c.keepalive ?? 0,
      subscriptions: subs
        .slice(0, MAX_LISTED_SUBSCRIPTIONS)
        .map(([topic, s]) => ({ topic, qos: s.qos ?? 0 })),
      subscriptionCount: subs.length,
      queued: store ? store.queued(id).messages : null,
    };
  });
  return { items, total: views.length };
}

/**
 * Closes the connection of `clientId` (MQTT 5: DISCONNECT 0x98, Administrative action, first);
 * answers whether it was connected. A persistent session stays, as after any disconnect.
 */
export function disconnectClient(broker: UnsBroker, clientId: string): boolean {
  const client = clientsOf(broker)[clientId];
  if (!client?.connected) return false;
  kick(client, 0x98);
  return true;
}

export interface BrokerMetrics {
  messagesPerSecond: number;
  messagesTotal: number;
  connections: number;
  /** Outgoing QoS 1/2 messages queued in every session (null with Redis, which does not count). */
  queuedMessages: number | null;
  queuedBytes: number | null;
  /** Sessions that hold subscriptions, connected or not (aedes's `countOffline`). */
  sessions: number;
}

export async function brokerMetrics(broker: UnsBroker): Promise<BrokerMetrics> {
  const store = broker.persistence instanceof SqlPersistence ? broker.persistence : null;
  const queued = store?.queuedTotal();
  const offline = await broker.persistence.countOffline();
  return {
    messagesPerSecond: broker.meter.rate(),
    messagesTotal: broker.meter.total,
    connections: broker.connectedClients,
    queuedMessages: queued?.messages ?? null,
    queuedBytes: queued?.bytes ?? null,
    sessions: offline.clientsCount,
  };
}
