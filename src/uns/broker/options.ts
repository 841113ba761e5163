/** The MQTT broker's settings: its ports, Redis cluster mode and its limits. */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { QueueLimits } from './sql-persistence.js';
import type { RetainedLimits } from './retained-set.js';
import { Option } from '../../kernel/service/options.js';

export const brokerOptions = Type.Object({
  mqttPort: Option.port({ default: 1883, description: 'MQTT over TCP port' }),
  mqttsPort: Option.port({ default: 8883, description: 'MQTT over TLS port' }),
  redisUrl: Option.optional.url({
    secret: true,
    description: 'redis://... to share subscriptions, retained messages and sessions between UNS processes',
  }),
  maxTopicLength: Option.int({
    minimum: 16,
    maximum: 65_535,
    default: 1024,
    description: 'bytes of an MQTT topic or topic filter at most (a longer PUBLISH closes the connection)',
  }),
  maxTopicLevels: Option.int({
    minimum: 1,
    maximum: 100,
    default: 32,
    description: 'levels of an MQTT topic or topic filter at most (a deeper PUBLISH closes the connection)',
  }),
  maxPacketSize: Option.int({
    minimum: 1024,
    maximum: 268_435_460,
    default: 1_048_576,
    description: 'bytes of an MQTT packet at most, header included (a bigger one closes the connection)',
  }),
  maxQueuedMessages: Option.int({
    minimum: 1,
    maximum: 10_000_000,
    default: 1000,
    description: 'QoS 1/2 messages queued per persistent session at most (see --queue-overflow)',
  }),
  maxQueuedBytes: Option.int({
    minimum: 1024,
    maximum: 68_719_476_736,
    default: 16_777_216,
    description: 'payload and topic bytes queued per persistent session at most (see --queue-overflow)',
  }),
  queueOverflow: Option.enum(['drop-newest', 'drop-oldest'], {
    default: 'drop-newest',
    description:
      'what a full session queue does with one more message: drop it, or drop the oldest not yet sent',
  }),
  maxRetained: Option.int({
    minimum: 1,
    maximum: 100_000_000,
    default: 1_000_000,
    description:
      'topics with a retained message at most (a retained message for one more topic is delivered, not retained)',
  }),
  maxRetainedBytes: Option.int({
    minimum: 1024,
    maximum: 68_719_476_736,
    default: 268_435_456,
    description: 'bytes of retained messages (topics and payloads) at most, as above',
  }),
  maxInflightInbound: Option.int({
    minimum: 1,
    maximum: 65_535,
    default: 100,
    description:
      'QoS 2 messages of one connection awaiting PUBREL at most (one more closes the connection); the Receive Maximum told to MQTT 5 clients',
  }),
  maxSubscriptions: Option.int({
    minimum: 1,
    maximum: 1_000_000,
    default: 1000,
    description:
      'subscriptions of one connection at most (one more is refused: SUBACK 0x97, MQTT 3.1.1 0x80)',
  }),
  topicAliasMaximum: Option.port({
    default: 100,
    description: 'topic aliases an MQTT 5 client may set per connection (0: none)',
  }),
  maxKeepAlive: Option.port({
    default: 0,
    description:
      'keep alive in seconds at most: MQTT 5 clients asking more (or none) get it as Server Keep Alive, MQTT 3.1.1 ones are refused (0: no limit)',
  }),
  maxSessionExpiry: Option.int({
    minimum: 0,
    maximum: 4_294_967_295,
    default: 0,
    description: 'MQTT 5 session expiry interval in seconds at most; a longer one is cut to it (0: no limit)',
  }),
});

/** The broker's limits from its options; `authFailuresPerMinute` is the identity module's rate limit. */
export function brokerLimits(
  config: Static<typeof brokerOptions>,
  authFailuresPerMinute: number,
): BrokerLimits {
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
    retained: { maxRetained: config.maxRetained, maxRetainedBytes: config.maxRetainedBytes },
    authFailuresPerMinute,
  };
}

/** The broker's bounds (docs/security.md lists them with what a client gets past each). */
export interface BrokerLimits {
  /** Bytes of one MQTT packet, fixed header included; a bigger one closes the connection. */
  maxPacketSize: number;
  /** Bytes of a topic or topic filter: a longer PUBLISH closes the connection, a SUBSCRIBE gets 0x80. */
  maxTopicLength: number;
  /** Levels of a topic or topic filter (at most 100, aedes's own bound), refused as above. */
  maxTopicLevels: number;
  /**
   * Inbound QoS 2 messages of one connection awaiting PUBREL; one more closes the connection
   * (MQTT 5: DISCONNECT 0x93). Told to MQTT 5 clients as the Receive Maximum.
   */
  maxInflightInbound: number;
  /** Subscriptions of one connection; one more is refused (SUBACK 0x97, MQTT 3.1.1 0x80). */
  maxSubscriptions: number;
  /** Topic aliases an MQTT 5 client may set (0: none). */
  topicAliasMaximum: number;
  /** Keep alive in seconds at most (MQTT 5: Server Keep Alive; 0: no limit). */
  maxKeepAlive: number;
  /** MQTT 5 session expiry interval in seconds at most (0: no limit). */
  maxSessionExpiry: number;
  /** QoS 1/2 messages and bytes queued per persistent session, and what a full queue drops. */
  queue: QueueLimits;
  /** Retained messages kept (topics, bytes); past them a new one is delivered, not retained. */
  retained: Pick<RetainedLimits, 'maxRetained' | 'maxRetainedBytes'>;
  /** Failed CONNECTs (bad user name or password) per minute per address; past it, CONNACK 5. */
  authFailuresPerMinute: number;
}

/**
 * The limits of a broker started without options (tests, embedding): the options' defaults, and
 * the identity module's default sign-in rate limit (30 a minute).
 */
export const DEFAULT_LIMITS: BrokerLimits = brokerLimits(
  Value.Default(brokerOptions, {}) as Static<typeof brokerOptions>,
  30,
);
