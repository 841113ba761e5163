/** The broker's public shapes: what it is started with, what it says of its clients and its bounds. */
import type { Logger } from 'pino';
import type { AedesPublishPacket } from 'aedes';
import type { Database } from '../../kernel/db/index.js';
import type { AccountService } from '../accounts/index.js';
import type { BrokerLimits } from './options.js';

export interface ClientInfo {
  id: string;
  connected: boolean;
  /** MQTT protocol level of the CONNECT: 3 (3.1), 4 (3.1.1) or 5. */
  protoLevel: number;
  /** Peer address and port. */
  remote: string;
  /** Epoch ms of the connection's last sign of life (connect, ping, disconnect). */
  lastSeen: number;
}

export interface BrokerOptions {
  accounts: AccountService;
  database: Database;
  logger: Logger;
  /** Share sessions, retained messages and deliveries with other UNS processes through Redis. */
  redisUrl?: string | undefined;
  /** Called for every message a client publishes (after authorisation). */
  onPublish?: (packet: AedesPublishPacket) => void;
  /** What a client may send and have queued; each has a default (`DEFAULT_LIMITS`). */
  limits?: Partial<BrokerLimits> | undefined;
}

/** How many times each bound was hit since the start. */
export interface LimitCounters {
  packetTooLarge: number;
  topicRefused: number;
  inflightExceeded: number;
  queueDropped: number;
  connectThrottled: number;
  /** Messages not sent to an MQTT 5 client because they exceed its Maximum Packet Size. */
  oversizedDropped: number;
  /** Messages dropped waiting for room under an MQTT 5 client's Receive Maximum. */
  flowDropped: number;
  /** Subscriptions refused by `maxSubscriptions`. */
  subscriptionsRefused: number;
}
