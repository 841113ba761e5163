/**
 * The MQTT broker of the namespace: aedes (MQTT 3.1 and 3.1.1; aedes has no MQTT 5) with
 * policy in its hooks, as aedes intends:
 * - `authenticate`: user name and password against the accounts (a disabled account is refused,
 *   CONNACK 4 for bad credentials, 5 for a missing user name);
 * - `authorizePublish` / `authorizeSubscribe`: the account's compiled rules, held per connection
 *   with a per-connection cache of topics seen. A refused SUBSCRIBE gets the failure return code
 *   0x80 in its SUBACK; a refused PUBLISH closes the connection (MQTT 3.1.1 has no negative
 *   acknowledgement of a publish; 3.3.5-2 allows closing) and is delivered to nobody.
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
import { Aedes, type AedesPublishPacket, type Client } from 'aedes';
import type { Database } from '../../kernel/db/index.js';
import { ConnectionRules, type AccountChange, type AccountService } from '../accounts/index.js';
import { SqlPersistence, type AsyncPersistence } from './sql-persistence.js';
import { redisPersistence } from './redis-persistence.js';

const require = createRequire(import.meta.url);

export interface ClientInfo {
  id: string;
  connected: boolean;
  /** MQTT protocol level of the CONNECT: 3 (3.1) or 4 (3.1.1). */
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
}

/** Disconnected clients remembered per account, for `clients { connected lastSeen }`. */
const REMEMBERED_PER_ACCOUNT = 100;

export class UnsBroker {
  readonly aedes: Aedes;
  readonly #accounts: AccountService;
  readonly #log: Logger;
  readonly #persistence: AsyncPersistence;
  readonly #state = new WeakMap<Client, ConnState>();
  readonly #live = new Map<string, Set<Client>>();
  readonly #seen = new Map<string, Map<string, ClientInfo>>();
  readonly #servers: Server[] = [];
  readonly #onChange: (change: AccountChange) => void;
  #closed = false;

  private constructor(aedes: Aedes, persistence: AsyncPersistence, options: BrokerOptions) {
    this.aedes = aedes;
    this.#persistence = persistence;
    this.#accounts = options.accounts;
    this.#log = options.logger;
    this.#onChange = (change) => this.#applyChange(change);
    this.#accounts.on('change', this.#onChange);
  }

  static async start(options: BrokerOptions): Promise<UnsBroker> {
    let persistence: AsyncPersistence;
    let mq: unknown;
    if (options.redisUrl) {
      const MQEmitterRedis = require('mqemitter-redis') as new (opts: object) => unknown;
      persistence = redisPersistence(options.redisUrl);
      mq = new MQEmitterRedis({ connectionString: options.redisUrl });
    } else {
      persistence = new SqlPersistence(options.database);
    }
    const ref: { broker?: UnsBroker } = {};
    const aedes = new Aedes({
      persistence,
      ...(mq ? { mq } : {}),
      authenticate: (client, username, password, done) =>
        ref.broker!.authenticate(client, username, password, done),
      authorizePublish: (client, packet, done) => ref.broker!.authorizePublish(client, packet, done),
      authorizeSubscribe: (client, sub, done) => ref.broker!.authorizeSubscribe(client, sub, done),
    });
    const broker = new UnsBroker(aedes, persistence, options);
    ref.broker = broker;
    try {
      await aedes.listen();
    } catch (err) {
      broker.#accounts.off('change', broker.#onChange);
      throw err;
    }
    broker.#wire(options);
    return broker;
  }

  #wire(options: BrokerOptions): void {
    const aedes = this.aedes;
    aedes.on('clientReady', (client) => {
      const state = this.#state.get(client);
      if (!state) return;
      state.info.connected = true;
      state.info.lastSeen = Date.now();
    });
    aedes.on('clientDisconnect', (client) => this.#forget(client));
    aedes.on('clientError', (client) => this.#forget(client));
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
    const refuse = (returnCode: number, message: string) => {
      this.#log.warn({ clientId: client.id, username }, `mqtt connection refused: ${message}`);
      done(Object.assign(new Error(message), { returnCode }), false);
    };
    if (!username) return refuse(5, 'no user name');
    this.#accounts.authenticate(username, password ? password.toString('utf8') : '').then(
      (account) => {
        if (!account) return refuse(4, 'bad user name or password, or account disabled');
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
    const state = this.#state.get(client);
    if (state && state.rules.canPublish(packet.topic)) return done(null);
    this.#log.info({ clientId: client.id, topic: packet.topic }, 'mqtt publish refused by the account rules');
    done(new Error(`publish to "${packet.topic}" not allowed`));
  }

  authorizeSubscribe(
    client: Client,
    sub: { topic: string; qos: number },
    done: (error: Error | null, subscription?: any) => void,
  ): void {
    const state = this.#state.get(client);
    if (state && state.rules.canSubscribe(sub.topic)) return done(null, sub);
    this.#log.info({ clientId: client.id, topic: sub.topic }, 'mqtt subscribe refused by the account rules');
    done(null, null); // SUBACK return code 0x80
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
        client.close();
        continue;
      }
      state.rules.replace(change.compiled);
      const subs = Object.keys(
        (client as unknown as { subscriptions: Record<string, unknown> }).subscriptions ?? {},
      );
      const lost = subs.find((topic) => !change.compiled!.canSubscribe(topic));
      if (lost !== undefined) {
        this.#log.info(
          { clientId: client.id, topic: lost },
          'subscription no longer allowed by the account rules: closing the connection',
        );
        this.#forget(client);
        client.close();
      }
    }
  }

  // --- listeners -----------------------------------------------------------------------------

  /** Serves one connection (a TCP or TLS socket, or a WebSocket stream). */
  handle(stream: Duplex, request?: IncomingMessage): void {
    coalesceWrites(stream);
    this.aedes.handle(stream, request);
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

function remoteOf(client: Client): string {
  const req = client.req;
  const socket = (req?.socket ?? (client.conn as { remoteAddress?: string; remotePort?: number })) as {
    remoteAddress?: string;
    remotePort?: number;
  };
  const addr = socket.remoteAddress ?? 'unknown';
  return `${addr.includes(':') ? `[${addr}]` : addr}:${socket.remotePort ?? 0}`;
}
