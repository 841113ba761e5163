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
import { Aedes, type Client, type Subscription } from 'aedes';
import { AuthThrottle, retryAfterSeconds } from '../../kernel/auth-throttle.js';
import { ConnectionRules, type AccountChange, type AccountService } from '../accounts/index.js';
import {
  addressOf,
  breakEmitterRecursion,
  coalesceWrites,
  windowRetainedDelivery,
  kick,
  remoteOf,
  shortTopic,
  topicProblem,
  varintBytes,
  type ClientInternals,
  type EmitterInternals,
} from './aedes-support.js';
import { SqlPersistence, type AsyncPersistence } from './sql-persistence.js';
import { retainedRefusals } from './retained-set.js';
import { DEFAULT_LIMITS, type BrokerLimits } from './options.js';
import type { BrokerOptions, ClientInfo, LimitCounters } from './types.js';

export { DEFAULT_LIMITS, type BrokerLimits, type BrokerOptions, type ClientInfo, type LimitCounters };
import { redisPersistence } from './redis-persistence.js';
import { MessageMeter, publishProblem, subscribeProblem } from './verdict.js';
import { SharedSubscriptions } from './shared.js';
import {
  mqttPacket,
  parseShared,
  REFUSED_PREFIX,
  releaseRetainedAcks,
  RC,
  underlyingFilter,
  Wire,
  wireOf,
  type WireClient,
  type WireOptions,
  type WirePacket,
} from './wire.js';

const require = createRequire(import.meta.url);

interface ConnState {
  accountId: string;
  rules: ConnectionRules;
  info: ClientInfo;
}

/** aedes's own bound on topic levels (its matcher cannot go deeper). */
const AEDES_MAX_TOPIC_LEVELS = 100;

/** Outbound QoS 1/2 messages held per connection beyond the client's Receive Maximum. */
const MAX_HELD = 1000;

/** Disconnected clients remembered per account, for `clients { connected lastSeen }`. */
const REMEMBERED_PER_ACCOUNT = 100;

export class UnsBroker {
  readonly aedes: Aedes;
  readonly #accounts: AccountService;
  readonly #log: Logger;
  readonly persistence: AsyncPersistence;
  readonly #state = new WeakMap<Client, ConnState>();
  /** The account of each authenticated connection, kept after it closes (for a delayed will). */
  readonly accountOf = new WeakMap<Client, string>();
  readonly #live = new Map<string, Set<Client>>();
  readonly #seen = new Map<string, Map<string, ClientInfo>>();
  readonly #servers: Server[] = [];
  readonly #onChange: (change: AccountChange) => void;
  readonly limits: BrokerLimits;
  /** Failed CONNECTs per (address, user name), and user names per address (see AuthThrottle). */
  readonly #throttle: AuthThrottle;
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
  /** Messages clients published, per second (`brokerMetrics`). */
  readonly meter = new MessageMeter();
  #closed = false;

  private constructor(
    aedes: Aedes,
    persistence: AsyncPersistence,
    options: BrokerOptions,
    limits: BrokerLimits,
  ) {
    this.aedes = aedes;
    this.persistence = persistence;
    this.#accounts = options.accounts;
    this.#log = options.logger;
    this.limits = limits;
    this.#throttle = new AuthThrottle({ maxUsersPerAddress: limits.authFailuresPerMinute });
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
        ...limits.retained,
        onDrop: (id, dropped, reason) => ref.broker && ref.broker.#queueDropped(id, dropped, reason),
        onRefused: retainedRefusals(options.logger),
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
    releaseRetainedAcks(aedes, persistence instanceof SqlPersistence ? persistence : undefined);
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
    aedes.on('publish', (packet, client) => {
      if (!client) return;
      this.meter.mark();
      options.onPublish?.(packet);
    });
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
      { clientId, dropped, reason, ...this.limits.queue },
      `mqtt session queue full: ${dropped} message(s) dropped (${this.limits.queue.overflow})`,
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
    const verdict = this.#throttle.check(address, username);
    if (!verdict.ok) {
      this.counters.connectThrottled++;
      return refuse(
        5,
        verdict.reason === 'user'
          ? `too many failed attempts for "${username.slice(0, 200)}" from ${address}; retry in ${retryAfterSeconds(verdict.retryMs)} s`
          : `too many user names failed from ${address}; retry in ${retryAfterSeconds(verdict.retryMs)} s`,
      );
    }
    this.#accounts.authenticate(username, password ? password.toString('utf8') : '').then(
      (account) => {
        if (!account) {
          // Counted for this user name from this address (see AuthThrottle): others go on.
          this.#throttle.failure(address, username);
          return refuse(4, 'bad user name or password, or account disabled');
        }
        this.#throttle.success(address, username);
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
        this.accountOf.set(client, account.id);
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
    const problem = publishProblem(packet.topic, this.limits);
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
      const accountId = this.accountOf.get(client);
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
    const problem = subscribeProblem(sub.topic, this.limits);
    if (problem) {
      this.counters.topicRefused++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(sub.topic) },
        `mqtt subscribe refused (${client.version === 5 ? '0x8F' : '0x80'}): ${problem}`,
      );
      return done(null, null);
    }
    if (wire?.wasRefused(sub)) {
      this.counters.subscriptionsRefused++;
      this.#log.warn(
        { clientId: client.id, remote: remoteOf(client), topic: shortTopic(sub.topic) },
        `mqtt subscribe refused (${client.version === 5 ? '0x97' : '0x80'}): more than ${this.limits.maxSubscriptions} subscriptions (--max-subscriptions)`,
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
    new Wire(client as unknown as WireClient, (this.#wireOptions ??= this.#makeWireOptions()));
    windowRetainedDelivery(client);
    this.#limitPacketSize(client);
  }

  /** The options of every connection's Wire: one object and one set of closures for all (memory per connection). */
  #wireOptions: WireOptions | undefined;

  #makeWireOptions(): WireOptions {
    return {
      maxInflightInbound: this.limits.maxInflightInbound,
      maxSubscriptions: this.limits.maxSubscriptions,
      maxOutboundAliases: this.limits.topicAliasMaximum,
      maxHeld: MAX_HELD,
      topicProblem: (topic) => topicProblem(topic, this.limits),
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
    };
  }

  /**
   * Refuses a packet bigger than `maxPacketSize` as soon as its fixed header is read, before its
   * body is buffered: the connection is closed (MQTT 3.1.1 has no other answer). A hook on the
   * connection's own parser instance, not a change to mqtt-packet.
   */
  #limitPacketSize(client: Client & ClientInternals): void {
    const parser = client._parser;
    const parseLength = parser._parseLength;
    const max = this.limits.maxPacketSize;
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
      this.persistence.outgoingClearMessageId({ id: client.id }, packet as never).catch(() => {});
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
    await this.persistence.destroy();
  }
}
