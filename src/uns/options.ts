/** The unified namespace service's options: flags, `MILLWRIGHT_UNS_*` variables and config-file keys. */
import {
  COMMON_OPTIONS,
  configWith,
  defaultDataDir,
  toConfigObject,
  type ConfigValues,
  type HttpConfig,
  type OptionSpec,
} from '../kernel/config.js';
import type { BrokerLimits } from './broker/broker.js';

export const UNS_OPTIONS: readonly OptionSpec[] = [
  {
    name: 'port',
    type: 'int',
    min: 0,
    max: 65535,
    default: 9443,
    description: 'HTTPS port of /mqtt/gql, the token endpoints and MQTT over WebSocket (/mqtt)',
  },
  { name: 'mqtt-port', type: 'int', min: 0, max: 65535, default: 1883, description: 'MQTT over TCP port' },
  { name: 'mqtts-port', type: 'int', min: 0, max: 65535, default: 8883, description: 'MQTT over TLS port' },
  { name: 'host', type: 'string', default: '0.0.0.0', description: 'address to listen on' },
  {
    name: 'data-dir',
    type: 'path',
    default: defaultDataDir('uns'),
    description: 'directory of the database, logs and certificate',
  },
  {
    name: 'http',
    type: 'bool',
    default: false,
    description: 'serve plain HTTP and WebSocket (only behind a TLS-terminating proxy)',
  },
  {
    name: 'tls-cert',
    type: 'path',
    description: 'PEM certificate to serve (HTTPS and MQTT over TLS) instead of the self-signed one',
  },
  { name: 'tls-key', type: 'path', description: 'PEM private key of --tls-cert' },
  {
    name: 'database-url',
    type: 'url',
    secret: true,
    description: 'postgres://... to keep users, accounts, rules and sessions in PostgreSQL instead of SQLite',
  },
  {
    name: 'redis-url',
    type: 'url',
    secret: true,
    description: 'redis://... to share subscriptions, retained messages and sessions between UNS processes',
  },
  {
    name: 'admin-password',
    type: 'string',
    secret: true,
    description: 'first-run password of the administrator "admin" (else generated and printed once)',
  },
  {
    name: 'client-id',
    type: 'string',
    default: 'ide-ui',
    description: 'OAuth client id accepted by the token endpoints (its secret is empty)',
  },
  {
    name: 'token-lifetime',
    type: 'int',
    min: 15,
    max: 60,
    default: 30,
    description:
      'first-run realm policy: access token lifetime, minutes (15 to 60; later changed through GraphQL)',
  },
  {
    name: 'auth-rate-limit',
    type: 'int',
    min: 1,
    max: 1_000_000,
    default: 30,
    description: 'token and activation attempts per minute per client address',
  },
  {
    name: 'max-topics',
    type: 'int',
    min: 1000,
    max: 100_000_000,
    default: 1_000_000,
    description: 'topics kept in the namespace browser at most',
  },
  {
    name: 'max-topic-tree-bytes',
    type: 'int',
    min: 1024 * 1024,
    max: 64 * 1024 * 1024 * 1024,
    default: 256 * 1024 * 1024,
    description:
      'estimated memory of the namespace browser at most, bytes (topics beyond it are not recorded)',
  },
  {
    name: 'max-topic-length',
    type: 'int',
    min: 16,
    max: 65535,
    default: 1024,
    description: 'bytes of an MQTT topic or topic filter at most (a longer PUBLISH closes the connection)',
  },
  {
    name: 'max-topic-levels',
    type: 'int',
    min: 1,
    max: 100,
    default: 32,
    description: 'levels of an MQTT topic or topic filter at most (a deeper PUBLISH closes the connection)',
  },
  {
    name: 'max-packet-size',
    type: 'int',
    min: 1024,
    max: 268_435_460,
    default: 1024 * 1024,
    description: 'bytes of an MQTT packet at most, header included (a bigger one closes the connection)',
  },
  {
    name: 'max-queued-messages',
    type: 'int',
    min: 1,
    max: 10_000_000,
    default: 1000,
    description: 'QoS 1/2 messages queued per persistent session at most (see --queue-overflow)',
  },
  {
    name: 'max-queued-bytes',
    type: 'int',
    min: 1024,
    max: 64 * 1024 * 1024 * 1024,
    default: 16 * 1024 * 1024,
    description: 'payload and topic bytes queued per persistent session at most (see --queue-overflow)',
  },
  {
    name: 'queue-overflow',
    type: 'enum',
    values: ['drop-newest', 'drop-oldest'],
    default: 'drop-newest',
    description:
      'what a full session queue does with one more message: drop it, or drop the oldest not yet sent',
  },
  {
    name: 'max-inflight-inbound',
    type: 'int',
    min: 1,
    max: 65535,
    default: 100,
    description:
      'QoS 2 messages of one connection awaiting PUBREL at most (one more closes the connection); the Receive Maximum told to MQTT 5 clients',
  },
  {
    name: 'max-subscriptions',
    type: 'int',
    min: 1,
    max: 1_000_000,
    default: 1000,
    description:
      'subscriptions of one connection at most (one more is refused: SUBACK 0x97, MQTT 3.1.1 0x80)',
  },
  {
    name: 'topic-alias-maximum',
    type: 'int',
    min: 0,
    max: 65535,
    default: 100,
    description: 'topic aliases an MQTT 5 client may set per connection (0: none)',
  },
  {
    name: 'max-keep-alive',
    type: 'int',
    min: 0,
    max: 65535,
    default: 0,
    description:
      'keep alive in seconds at most: MQTT 5 clients asking more (or none) get it as Server Keep Alive, MQTT 3.1.1 ones are refused (0: no limit)',
  },
  {
    name: 'max-session-expiry',
    type: 'int',
    min: 0,
    max: 4_294_967_295,
    default: 0,
    description: 'MQTT 5 session expiry interval in seconds at most; a longer one is cut to it (0: no limit)',
  },
  ...COMMON_OPTIONS,
];

export interface UnsConfig extends HttpConfig {
  port: number;
  mqttPort: number;
  mqttsPort: number;
  host: string;
  dataDir: string;
  http: boolean;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  databaseUrl?: string | undefined;
  redisUrl?: string | undefined;
  adminPassword?: string | undefined;
  clientId: string;
  tokenLifetime: number;
  authRateLimit: number;
  maxTopics: number;
  maxTopicTreeBytes: number;
  maxTopicLength: number;
  maxTopicLevels: number;
  maxPacketSize: number;
  maxQueuedMessages: number;
  maxQueuedBytes: number;
  queueOverflow: 'drop-newest' | 'drop-oldest';
  maxInflightInbound: number;
  maxSubscriptions: number;
  topicAliasMaximum: number;
  maxKeepAlive: number;
  maxSessionExpiry: number;
  logLevel: string;
  logFormat: string;
  logRetentionEntries: number;
  logRetentionDays: number;
  shutdownTimeout: number;
  graphqlMaxQueryBytes: number;
  graphqlMaxAliases: number;
  graphqlMaxFields: number;
  graphqlCacheBytes: number;
}

/** The broker's limits from the configuration. */
export function brokerLimits(config: UnsConfig): BrokerLimits {
  return {
    maxPacketSize: config.maxPacketSize,
    maxTopicLength: config.maxTopicLength,
    maxTopicLevels: config.maxTopicLevels,
    maxInflightInbound: config.maxInflightInbound,
    maxSubscriptions: config.maxSubscriptions,
    topicAliasMaximum: config.topicAliasMaximum,
    maxKeepAlive: config.maxKeepAlive,
    maxSessionExpiry: config.maxSessionExpiry,
    queue: {
      maxMessages: config.maxQueuedMessages,
      maxBytes: config.maxQueuedBytes,
      overflow: config.queueOverflow,
    },
    authFailuresPerMinute: config.authRateLimit,
  };
}

export function toUnsConfig(v: ConfigValues): UnsConfig {
  return toConfigObject<UnsConfig>(v);
}

/** The defaults, with `overrides` on top: for tests and for composing services in one process. */
export function unsConfigWith(overrides: Partial<UnsConfig>): UnsConfig {
  return configWith<UnsConfig>(UNS_OPTIONS, overrides);
}
