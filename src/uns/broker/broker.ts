/**
 * The MQTT broker of the namespace: aedes 2 (MQTT 3.1, 3.1.1 and 5) with policy in its hooks, as
 * aedes intends, and what aedes leaves to the application in wire.ts (per connection) and
 * shared.ts (shared subscriptions):
 * - `authenticate`: user name and password against the accounts (a disabled account is refused,
 *   CONNACK 4 / MQTT 5 0x86 for bad credentials, 5 / 0x87 for a missing user name);
 * - `authorizePublish` / `authorizeSubscribe`: the account's compiled rules, held per connection
 *   with a per-connection cache of topics seen (a shared subscription is judged by its filter).
 *   A refused SUBSCRIBE gets 0x80 (MQTT 5: 0x87) in its SUBACK; a refused PUBLISH closes an MQTT
 *   3.1.1 connection (it has no negative acknowledgement of a publish; 3.3.5-2 allows closing),
 *   an MQTT 5 one gets PUBACK/PUBREC 0x87 (0x90 for a topic the limits refuse) and stays; the
 *   message is delivered to nobody.
 * - Account changes act on live connections at once: a disabled or deleted account's connections
 *   are closed; new rules replace the old on its connections, and a connection holding a
 *   subscription that its rules no longer allow is closed.
 * Sessions, retained messages and queued QoS 1/2 messages are kept by `SqlPersistence` on the
 * service's database, or, with a Redis URL, by aedes-persistence-redis with mqemitter-redis, so
 * that several UNS processes share them.
 */
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { Aedes, type AedesPublishPacket, type Client, type Subscription } from 'aedes';
import type { Database } from '../../kernel/db/index.js';
import { RateLimiter } from '../../kernel/http/rate-limit.js';
import { ConnectionRules, type AccountChange, type AccountService } from '../accounts/index.js';
import { SqlPersistence, type AsyncPersistence, type QueueLimits } from './sql-persistence.js';
import { redisPersistence } from './redis-persistence.js';
import { SharedSubscriptions } from './shared.js';
import {
  mqttPacket,
  parseShared,
  REFUSED_PREFIX,
  sharedProblem,
  RC,
  underlyingFilter,
  Wire,
  wireOf,
  SHARE_PREFIX,
  SHARED_PREFIX,
  type WireClient,
  type WirePacket,
} from './wire.js';

const require = createRequire(import.meta.url);

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

interface ConnState {
  accountId: string;
  rules: ConnectionRules;
  info: ClientInfo;
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
  /** Failed CONNECTs (bad user name or password) per minute per address; past it, CONNACK 5. */
  authFailuresPerMinute: number;
}

export const DEFAULT_LIMITS: BrokerLimits = {
  maxPacketSize: 1024 * 1024,
  maxTopicLength: 1024,
  maxTopicLevels: 32,
  maxInflightInbound: 100,
  maxSubscriptions: 1000,
  topicAliasMaximum: 100,
  maxKeepAlive: 0,
  maxSessionExpiry: 0,
  queue: { maxMessages: 1000, maxBytes: 16 * 1024 * 1024, overflow: 'drop-newest' },
  authFailuresPerMinute: 30,
};

/** aedes's own bound on topic levels (its matcher cannot go deeper). */
const AEDES_MAX_TOPIC_LEVELS = 100;

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

/** Outbound QoS 1/2 messages held per connection beyond the client's Receive Maximum. */
const MAX_HELD = 1000;

/** The parts of aedes's Client this layer hooks (instance fields, not its source). */
interface ClientInternals {
  _parser: {
    packet: { length: number; cmd?: string };
    _parseLength: () => boolean;
    _emitError: (err: Error) => unknown;
  };
  conn: Duplex;
  connected: boolean;
  clean: boolean;
  rejectPacketTooLarge: (size: number) => void;
}

/** Messages the emitter hands on one inside the other before it goes on from a fresh stack. */
const MAX_SYNC_DEPTH = 32;

/** Disconnected clients remembered per account, for `clients { connected lastSeen }`. */
const REMEMBERED_PER_ACCOUNT = 100;

export class UnsBroker {
  readonly aedes: Aedes;
  readonly #accounts: AccountService;
  readonly #log: Logger;
  readonly #persistence: AsyncPersistence;
  readonly #state = new WeakMap<Client, ConnState>();
  /** The account of each authenticated connection, kept after it closes (for a delayed will). */
  readonly #accountOf = new WeakMap<Client, string>();
  readonly #live = new Map<string, Set<Client>>();
  readonly #seen = new Map<string, Map<string, ClientInfo>>();
  readonly #servers: Server[] = [];
  readonly #onChange: (change: AccountChange) => void;
  readonly #limits: BrokerLimits;
  readonly #failures: RateLimiter;
  /** Addresses refused without a password check until the time given (epoch ms). */
  readonly #blocked = new Map<string, number>();
  readonly counters: LimitCounters = {
    packetTooLarge: 0,
    topicRefused: 0,
    inflightExceeded: 0,
    queueDropped: 0,
    connectThrottled: 0,
    oversizedDropped: 0,
    flowDropped: 0,
    subscriptionsRefused: 0,
  };
  readonly shared: SharedSubscriptions;
  #closed = false;

  private constructor(
    aedes: Aedes,
    persistence: AsyncPersistence,
    options: BrokerOptions,
    limits: BrokerLimits,
  ) {
    this.aedes = aedes;
    this.#persistence = persistence;
    this.#accounts = options.accounts;
    this.#log = options.logger;
    this.#limits = limits;
    this.#failures = new RateLimiter({ max: limits.authFailuresPerMinute, windowMs: 60_000 });
    this.#onChange = (change) => this.#applyChange(change);
    this.shared = new SharedSubscriptions(aedes, persistence, Boolean(options.redisUrl));
    this.#accounts.on('change', this.#onChange);
  }

  static async start(options: BrokerOptions): Promise<UnsBroker> {
    const limits: BrokerLimits = {
      ...DEFAULT_LIMITS,
      ...options.limits,
      queue: { ...DEFAULT_LIMITS.queue, ...options.limits?.queue },
    };
    limits.maxTopicLevels = Math.min(limits.maxTopicLevels, AEDES_MAX_TOPIC_LEVELS);
    const ref: { broker?: UnsBroker } = {};
    let persistence: AsyncPersistence;
    let mq: unknown;
    if (options.redisUrl) {
      const MQEmitterRedis = require('mqemitter-redis') as new (opts: object) => unknown;
      persistence = redisPersistence(options.redisUrl);
      mq = new MQEmitterRedis({ connectionString: options.redisUrl });
    } else {
      persistence = new SqlPersistence(options.database, {
        ...limits.queue,
        onDrop: (clientId, dropped, reason) => {
          if (ref.broker) ref.broker.#queueDropped(clientId, dropped, reason);
        },
      });
    }
    const aedes = new Aedes({
      persistence,
      ...(mq ? { mq } : {}),
      // Deeper topics are refused by this layer first (logged, counted); aedes's bound stays at its
      // maximum so that a too deep SUBSCRIBE is answered 0x80 here rather than closed by aedes.
      maxTopicLevels: AEDES_MAX_TOPIC_LEVELS,
      // MQTT 5: advertised in the CONNACK (and enforced: aedes, and wire.ts / #limitPacketSize).
      maximumPacketSize: limits.maxPacketSize,
      receiveMaximum: limits.maxInflightInbound,
      topicAliasMaximum: limits.topicAliasMaximum,
      keepaliveLimit: limits.maxKeepAlive,
      sessionExpiryIntervalLimit: limits.maxSessionExpiry,
      authenticate: (client, username, password, done) =>
        ref.broker!.authenticate(client, username, password, done),
      authorizePublish: (client, packet, done) => ref.broker!.authorizePublish(client, packet, done),
      authorizeSubscribe: (client, sub, done) => ref.broker!.authorizeSubscribe(client, sub, done),
    });
    breakEmitterRecursion((aedes as unknown as { mq: EmitterInternals }).mq);
    const broker = new UnsBroker(aedes, persistence, options, limits);
    ref.broker = broker;
    try {
      await aedes.listen();
    } catch (err) {
      broker.#accounts.off('change', broker.#onChange);
      throw err;
    }
    broker.#wire(options);
    await broker.shared.start();
    return broker;
  }

  #wire(options: BrokerOptions): void {
    const aedes = this.aedes;
    aedes.on('clientReady', (client) => {
      this.shared.connected(client);
      const state = this.#state.get(client);
      if (!state) return;
      state.info.connected = true;
      state.info.lastSeen = Date.now();
    });
    aedes.on('clientDisconnect', (client) => {
      this.#forget(client);
      this.shared.disconnected(client);
    });
    aedes.on('sessionExpired', (client: Client) => this.shared.expired(client.id));
    aedes.on('subscribe', () => this.shared.changed());
    aedes.on('unsubscribe', () => this.shared.changed());
    aedes.on('keepaliveTimeout', (client: Client) => {
      // MQTT 5: say why before aedes closes the connection (DISCONNECT 0x8D).
      const c = client as unknown as ClientInternals & { version: number };
      if (c.version !== 5 || !c.connected) return;
      try {
        mqttPacket.writeToStream({ cmd: 'disconnect', reasonCode: RC.KEEP_ALIVE_TIMEOUT }, c.conn, {
          protocolVersion: 5,
        });
        // Flush now: aedes destroys the socket right after this event (mqtt-packet corks too).
        while (c.conn.writableCorked > 0) c.conn.uncork();
      } catch {
        // the connection is closing anyway
      }
    });
    aedes.on('clientError', (client, err) => {
      // MQTT 5 refusals (0x87, 0x90, ...) are reported here too; the connection stays.
      const c = client as unknown as { errored?: boolean; closed?: boolean };
      if (c.errored || c.closed) this.#forget(client);
      this.#logClientError(client, err);
    });
    aedes.on('connectionError', (client, err) => this.#logClientError(client, err));
    aedes.on('ping', (_packet, client) => {
      const state = this.#state.get(client);
      if (state) state.info.lastSeen = Date.now();
    });
    const onPublish = options.onPublish;
    if (onPublish) {
      aedes.on('publish', (packet, client) => {
        if (client) onPublish(packet);
      });
    }
  }

  /** Protocol errors that close a connection are logged; a peer going away is not news. */
  #logClientError(client: Client, err: Error): void {
    const message = err?.message ?? String(err);
    if ((err as { logged?: boolean }).logged) return;
    if (/ECONNRESET|EPIPE|connection closed|write after end|drain timeout|ETIMEDOUT/.test(message)) {
      this.#log.debug({ clientId: client.id, err: message }, 'mqtt connection closed');
      return;
    }
    if (/maxInflightInbound/.test(message)) this.counters.inflightExceeded++;
    if (/too many levels/.test(message)) this.counters.topicRefused++;
    this.#log.warn(
      { clientId: client.id, remote: remoteOf(client), err: message },
      `mqtt connection closed: ${message}`,
    );
  }

  #queueDropped(clientId: string, dropped: number, reason: string): void {
    this.counters.queueDropped += dropped;
    this.#log.warn(
      { clientId, dropped, reason, ...this.#limits.queue },
      `mqtt session queue full: ${dropped} message(s) dropped (${this.#limits.queue.overflow})`,
    );
  }

  #forget(client: Client): void {
    const state = this.#state.get(client);
    if (!state) return;
    this.#state.delete(client);
    state.info.connected = false;
    state.info.lastSeen = Date.now();
    const live = this.#live.get(state.accountId);
    live?.delete(client);
    if (live && live.size === 0) this.#live.delete(state.accountId);
  }

  // --- hooks ---------------------------------------------------------------------------------

  authenticate(
    client: Client,
    username: string | undefined,
    password: Buffer | undefined,
    done: (error: (Error & { returnCode: number }) | null, success: boolean | null) => void,
  ): void {
    const address = addressOf(client);
    const refuse = (returnCode: number, message: string) => {
      this.#log.warn({ clientId: client.id, username, address }, `mqtt connection refused: ${message}`);
      done(Object.assign(new Error(message), { returnCode }), false);
    };
    if (!username) return refuse(5, 'no user name');
    const now = Date.now();
    const until = this.#blocked.get(address);
    if (until !== undefined) {
      if (until > now) {
        this.counters.connectThrottled++;
        return refuse(
          5,
          `too many failed attempts from ${address}; retry in ${Math.ceil((until - now) / 1000)} s`,
        );
      }
      this.#blocked.delete(address);
    }
    this.#accounts.authenticate(username, password ? password.toString('utf8') : '').then(
      (account) => {
        if (!account) {
          // The same per-address limit as the HTTP token routes: past it, no password is checked.
          const wait = this.#failures.hit(address);
          if (wait > 0) {
            if (this.#blocked.size >= 100_000) this.#blocked.clear();
            this.#blocked.set(address, Date.now() + wait * 1000);
          }
          return refuse(4, 'bad user name or password, or account disabled');
        }
        const compiled = this.#accounts.compiled(account.id);
        if (!compiled) return refuse(4, 'account deleted');
        const info: ClientInfo = {
          id: client.id,
          connected: false,
          protoLevel: client.version,
          remote: remoteOf(client),
          lastSeen: Date.now(),
        };
        this.#state.set(client, { accountId: account.id, rules: new ConnectionRules(compiled), info });
        this.#accountOf.set(client, account.id);
        let live = this.#live.get(account.id);
        if (!live) this.#live.set(account.id, (live = new Set()));
        live.add(client);
        let seen = this.#seen.get(account.id);
        if (!seen) this.#seen.set(account.id, (seen = new Map()));
        seen.delete(client.id);
        seen.set(client.id, info);
        if (seen.size > REMEMBERED_PER_ACCOUNT) {
          for (const [id, i] of seen) {
            if (seen.size <= REMEMBERED_PER_ACCOUNT) break;
            if (!i.connected) seen.delete(id);
          }
        }
        done(null, true);
      },
      (err: unknown) => {
        this.#log.error({ err }, 'mqtt authentication failed');
        refuse(3, 'server unavailable');
      },
    );
  }

  authorizePublish(
    client: Client | null,
    packet: { topic: string },
    done: (error?: Error | null) => void,
  ): void {
    if (!client) return done(null); // the broker's own messages ($SYS, wills it replays)
    const problem = this.#topicProblem(packet.topic) ?? reservedProblem(packet.topic);
    if (problem && client.version === 5) {
      // MQTT 5: PUBACK/PUBREC 0x90 (Topic Name invalid), the connection stays.
      this.counters.topicRefused++;
      const messageId = (packet as { messageId?: number }).messageId;
      if (typeof messageId === 'number') wireOf(client)?.pubackCodes.set(messageId, RC.TOPIC_NAME_INVALID);
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(packet.topic) },
        `mqtt publish refused (0x90): ${problem}`,
      );
      return done(Object.assign(new Error('topic name invalid'), { logged: true }));
    }
    if (problem) {
      // MQTT 3.1.1 has no negative acknowledgement of a PUBLISH: the connection is closed
      // (1.5.3-2 for NUL; 3.3.5-2 for what the server refuses).
      this.counters.topicRefused++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(packet.topic) },
        `mqtt publish refused, connection closed: ${problem}`,
      );
      return done(Object.assign(new Error(`publish refused: ${problem}`), { logged: true }));
    }
    const state = this.#state.get(client);
    if (state && state.rules.canPublish(packet.topic)) return done(null);
    if (!state && client.closed) {
      // A will published after its connection closed (MQTT 5 will delay): the account's rules now.
      const accountId = this.#accountOf.get(client);
      const account = accountId ? this.#accounts.get(accountId) : undefined;
      const compiled = accountId ? this.#accounts.compiled(accountId) : undefined;
      if (account?.enabled && compiled?.canPublish(packet.topic)) return done(null);
    }
    this.#log.info({ clientId: client.id, topic: packet.topic }, 'mqtt publish refused by the account rules');
    // MQTT 5: aedes answers PUBACK/PUBREC 0x87 with this message as the reason string.
    const err = new Error(`publish to "${packet.topic}" not allowed`);
    done(client.version === 5 ? Object.assign(err, { logged: true }) : err);
  }

  authorizeSubscribe(
    client: Client,
    sub: Subscription,
    done: (error: Error | null, subscription?: Subscription | null) => void,
  ): void {
    if (sub.topic.includes('\u0000')) {
      // 1.5.3-2: a UTF-8 string with U+0000 closes the connection.
      this.counters.topicRefused++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(sub.topic) },
        'mqtt subscribe refused, connection closed: a topic filter cannot contain NUL (U+0000)',
      );
      return done(Object.assign(new Error('topic filter with NUL'), { logged: true }));
    }
    const wire = wireOf(client);
    if (sub.topic.startsWith(REFUSED_PREFIX)) return done(null, null); // refused by wire.ts
    const filter = underlyingFilter(sub.topic);
    const problem = sharedProblem(sub.topic) ?? this.#topicProblem(filter);
    if (problem) {
      this.counters.topicRefused++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(sub.topic) },
        `mqtt subscribe refused (${client.version === 5 ? '0x8F' : '0x80'}): ${problem}`,
      );
      return done(null, null);
    }
    if (wire?.refused.has(sub)) {
      this.counters.subscriptionsRefused++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(sub.topic) },
        `mqtt subscribe refused (${client.version === 5 ? '0x97' : '0x80'}): more than ${this.#limits.maxSubscriptions} subscriptions (--max-subscriptions)`,
      );
      return done(null, null);
    }
    const state = this.#state.get(client);
    if (state && state.rules.canSubscribe(filter)) {
      if (parseShared(sub.topic)) this.shared.join(client, sub.topic);
      return done(null, sub);
    }
    this.#log.info({ clientId: client.id, topic: sub.topic }, 'mqtt subscribe refused by the account rules');
    const held = (client as unknown as { subscriptions?: Record<string, unknown> }).subscriptions;
    if (!held?.[sub.topic]) wire?.admitted.delete(sub.topic);
    done(null, null); // SUBACK 0x80 (MQTT 5: 0x87)
  }

  /** Why a topic or filter is refused by the limits, or null. Cheap: one pass over the string. */
  #topicProblem(topic: string): string | null {
    const { maxTopicLength, maxTopicLevels } = this.#limits;
    let levels = 1;
    for (let i = 0; i < topic.length; i++) {
      const c = topic.charCodeAt(i);
      if (c === 47) levels++;
      else if (c === 0) return 'a topic cannot contain NUL (U+0000)';
    }
    if (levels > maxTopicLevels)
      return `topic has ${levels} levels; at most ${maxTopicLevels} (--max-topic-levels)`;
    if (topic.length * 3 > maxTopicLength) {
      const bytes = Buffer.byteLength(topic);
      if (bytes > maxTopicLength)
        return `topic has ${bytes} bytes; at most ${maxTopicLength} (--max-topic-length)`;
    }
    return null;
  }

  #applyChange(change: AccountChange): void {
    const live = this.#live.get(change.accountId);
    if (!live) return;
    for (const client of [...live]) {
      const state = this.#state.get(client);
      if (!state) continue;
      if (!change.account || !change.account.enabled || !change.compiled) {
        this.#log.info(
          { clientId: client.id, accountId: change.accountId },
          'account disabled or deleted: closing its connection',
        );
        this.#forget(client);
        // MQTT 5: DISCONNECT 0x98 (Administrative action) first.
        kick(client, 0x98);
        continue;
      }
      state.rules.replace(change.compiled);
      const subs = Object.keys(
        (client as unknown as { subscriptions: Record<string, unknown> }).subscriptions ?? {},
      );
      const lost = subs.find((topic) => !change.compiled!.canSubscribe(underlyingFilter(topic)));
      if (lost !== undefined) {
        this.#log.info(
          { clientId: client.id, topic: lost },
          'subscription no longer allowed by the account rules: closing the connection',
        );
        this.#forget(client);
        // MQTT 5: DISCONNECT 0x87 (Not authorized) first.
        kick(client, RC.NOT_AUTHORIZED);
      }
    }
  }

  // --- listeners -----------------------------------------------------------------------------

  /** Serves one connection (a TCP or TLS socket, or a WebSocket stream). */
  handle(stream: Duplex, request?: IncomingMessage): void {
    coalesceWrites(stream);
    const client = this.aedes.handle(stream, request) as unknown as Client & ClientInternals;
    new Wire(client as unknown as WireClient, {
      maxInflightInbound: this.#limits.maxInflightInbound,
      maxSubscriptions: this.#limits.maxSubscriptions,
      maxOutboundAliases: this.#limits.topicAliasMaximum,
      maxHeld: MAX_HELD,
      topicProblem: (topic) => this.#topicProblem(topic),
      onOversized: (c, packet) => this.#oversized(c, packet),
      onHeldDropped: (c, packet) => {
        this.counters.flowDropped++;
        this.#log.warn(
          { clientId: c.id, topic: shortTopic(String(packet.topic)), held: MAX_HELD },
          'mqtt message dropped: the client acknowledges too slowly (Receive Maximum)',
        );
      },
      onInflightExceeded: (c, err) => {
        this.counters.inflightExceeded++;
        this.#log.warn(
          { clientId: c.id, remote: remoteOf(c as unknown as Client) },
          `mqtt connection closed: ${err.message}`,
        );
      },
      onDelivered: (w, messageId) => this.shared.onAcked(w, messageId),
      onPublishOut: (w, packet) => this.shared.onPublishOut(w, packet),
      onUnsubscribe: (w, topic) => {
        if (parseShared(topic) && w.client.id) this.shared.leave(w.client.id, topic);
      },
    });
    this.#limitPacketSize(client);
  }

  /**
   * Refuses a packet bigger than `maxPacketSize` as soon as its fixed header is read, before its
   * body is buffered: the connection is closed (MQTT 3.1.1 has no other answer). A hook on the
   * connection's own parser instance, not a change to mqtt-packet.
   */
  #limitPacketSize(client: Client & ClientInternals): void {
    const parser = client._parser;
    const parseLength = parser._parseLength;
    const max = this.#limits.maxPacketSize;
    parser._parseLength = () => {
      if (!parseLength.call(parser)) return false;
      const remaining = parser.packet.length;
      const size = 1 + varintBytes(remaining) + remaining;
      if (size <= max) return true;
      this.counters.packetTooLarge++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), cmd: parser.packet.cmd, size, max },
        `mqtt packet of ${size} bytes refused (at most ${max}, --max-packet-size): connection closed`,
      );
      if ((client as unknown as { version: number }).version === 5 && client.connected) {
        // MQTT 5: DISCONNECT 0x95 (Packet too large), then aedes closes the connection.
        client.rejectPacketTooLarge(size);
        return false;
      }
      parser._emitError(
        Object.assign(new Error(`packet of ${size} bytes exceeds the maximum of ${max}`), { logged: true }),
      );
      return false;
    };
  }

  /** A message bigger than the MQTT 5 client's Maximum Packet Size: not sent, counted as delivered. */
  #oversized(client: WireClient, packet: WirePacket): void {
    this.counters.oversizedDropped++;
    this.#log.warn(
      { clientId: client.id, topic: shortTopic(String(packet.topic)), max: client.maximumPacketSize },
      'mqtt message not sent: bigger than the Maximum Packet Size of the client',
    );
    if ((packet.qos ?? 0) > 0 && !client.clean && client.id) {
      this.#persistence.outgoingClearMessageId({ id: client.id }, packet as never).catch(() => {});
    }
  }

  /** Listens for MQTT over TCP, or over TLS with `tls`; answers the port. */
  listen(host: string, port: number, tls?: { cert: string; key: string }): Promise<number> {
    // No Nagle delay: writes are already gathered per event-loop turn (see coalesceWrites).
    const server = tls
      ? createTlsServer({ cert: tls.cert, key: tls.key, noDelay: true }, (s) => this.handle(s))
      : createServer({ noDelay: true }, (s) => this.handle(s));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        this.#servers.push(server);
        const addr = server.address();
        resolve(typeof addr === 'object' && addr ? addr.port : port);
      });
    });
  }

  // --- reads ---------------------------------------------------------------------------------

  /** The clients of an account: connected ones and the last disconnected ones. */
  clientsOf(accountId: string): ClientInfo[] {
    return [...(this.#seen.get(accountId)?.values() ?? [])].map((i) => ({ ...i }));
  }

  get connectedClients(): number {
    return this.aedes.connectedClients;
  }

  /** Publishes as the broker itself (no account rules). */
  publish(
    topic: string,
    payload: Buffer | string,
    options: { qos?: 0 | 1 | 2; retain?: boolean } = {},
  ): Promise<void> {
    return new Promise((resolve, reject) =>
      this.aedes.publish(
        {
          cmd: 'publish',
          topic,
          payload: typeof payload === 'string' ? Buffer.from(payload) : payload,
          qos: options.qos ?? 0,
          retain: options.retain ?? false,
          dup: false,
        } as never,
        (err?: Error) => (err ? reject(err) : resolve()),
      ),
    );
  }

  /** Stops listening, closes every connection, then the persistence (flushing what it holds). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#accounts.off('change', this.#onChange);
    this.shared.stop();
    // Stop accepting first; a server's close completes once aedes has closed its connections.
    const stopped = Promise.all(this.#servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    await new Promise<void>((r) => this.aedes.close(() => r()));
    await stopped;
    await this.#persistence.destroy();
  }
}

/**
 * Gathers what is written to a connection during one turn of the event loop into one system call:
 * the first write of a turn corks the stream, the end of the turn uncorks it. A fan-out writes a
 * packet to each subscriber in its own tick; without this, each becomes its own `writev`.
 */
function coalesceWrites(stream: Duplex): void {
  const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    stream.uncork();
  };
  stream.write = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      stream.cork();
      setImmediate(uncork);
    }
    return write(...args);
  }) as typeof stream.write;
}

/** The part of mqemitter this layer hooks: its per-message step (an instance field). */
interface EmitterInternals {
  _do?: (message: unknown, callback: unknown) => unknown;
  current?: number;
}

/**
 * mqemitter hands at most `concurrency` (100) messages to subscribers at once and queues the
 * rest; when one is done, the next queued one is handed on from inside that completion. A message
 * nobody is subscribed to completes at once, inside the call, so a long queue whose subscriber has
 * just gone (a slow QoS 0 subscriber of a fast publisher disconnecting: `npm run bench -- uns`,
 * QoS 0 1→1) was drained one stack frame deeper per message, through each publisher's read loop
 * (`nextBatch → PublishState → published → nextBatch`), until `RangeError: Maximum call stack
 * size exceeded` killed the process. This bounds the depth: past `MAX_SYNC_DEPTH` nested hand-ons,
 * the next one starts from a fresh stack on the next turn of the event loop (letting I/O in).
 */
function breakEmitterRecursion(mq: EmitterInternals): void {
  const step = mq._do;
  if (typeof step !== 'function') return;
  let depth = 0;
  const guarded = function (this: unknown, message: unknown, callback: unknown): unknown {
    if (depth >= MAX_SYNC_DEPTH) {
      // Hold the message's slot meanwhile, so that a newer message queues behind it (order kept).
      if (typeof mq.current === 'number') mq.current++;
      setImmediate(() => {
        if (typeof mq.current === 'number') mq.current--;
        guarded.call(mq, message, callback);
      });
      return mq;
    }
    depth++;
    try {
      return step.call(mq, message, callback);
    } finally {
      depth--;
    }
  };
  mq._do = guarded;
}

/** Closes a connection; an MQTT 5 client is told why with a DISCONNECT first. */
function kick(client: Client, reasonCode: number): void {
  const c = client as unknown as { disconnect: (o: { reasonCode: number }) => void };
  c.disconnect({ reasonCode });
}

/** Topics no client publishes to: the internal names of shared subscriptions. */
function reservedProblem(topic: string): string | null {
  if (topic.startsWith(SHARE_PREFIX) || topic.startsWith(SHARED_PREFIX))
    return `a topic cannot start with ${SHARE_PREFIX} or ${SHARED_PREFIX}`;
  return null;
}

function varintBytes(n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4;
}

function shortTopic(topic: string): string {
  return topic.length > 200 ? `${topic.slice(0, 200)}... (${topic.length} characters)` : topic;
}

/** The peer's address without its port: the unit of the CONNECT failure limit. */
function addressOf(client: Client): string {
  const req = client.req;
  const socket = (req?.socket ?? (client.conn as { remoteAddress?: string })) as { remoteAddress?: string };
  return socket.remoteAddress ?? 'unknown';
}

function remoteOf(client: Client): string {
  const req = client.req;
  const socket = (req?.socket ?? (client.conn as { remoteAddress?: string; remotePort?: number })) as {
    remoteAddress?: string;
    remotePort?: number;
  };
  const addr = socket.remoteAddress ?? 'unknown';
  return `${addr.includes(':') ? `[${addr}]` : addr}:${socket.remotePort ?? 0}`;
}
