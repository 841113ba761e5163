/**
 * The NATS gateway of the DataHub: the NATS client protocol on a TCP port, so that any NATS client
 * reaches the bus. Connections from this host ("local") need neither TLS nor credentials; every
 * other connection ("remote") must upgrade to TLS after INFO and present an access key as password
 * or token in CONNECT.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { createSecureContext, TLSSocket, type SecureContext } from 'node:tls';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { PortInUseError } from '../../../kernel/config.js';
import type { DataHub } from '../bus.js';
import { Connection, type ConnectionInfo } from './connection.js';
import { ANNOUNCED_VERSION, ERR } from './protocol.js';

/** What an access key allows; `null` lists allow everything. */
export interface AccessGrant {
  keyId: string;
  name: string;
  publish: string[] | null;
  subscribe: string[] | null;
}

export type Authenticate = (key: string) => AccessGrant | null | Promise<AccessGrant | null>;

export interface GatewayOptions {
  hub: DataHub;
  host: string;
  port: number;
  /** The edge's certificate; without it remote clients cannot connect at all. */
  tls?: { cert: string; key: string } | undefined;
  /**
   * Treat connections from this host (loopback and this host's own interface addresses) as local:
   * no TLS, no key. Default true; false makes every connection remote (tests, hardened sites).
   */
  trustLocal?: boolean;
  authenticate?: Authenticate;
  /** Largest message payload accepted (INFO `max_payload`), bytes; default 1 MiB. */
  maxPayload?: number;
  /** Bytes a connection may have waiting to be sent before it is cut as a slow consumer; default 64 MiB. */
  maxPending?: number;
  maxControlLine?: number;
  /** Milliseconds between server PINGs (default 120000); 0 switches them off. */
  pingInterval?: number;
  maxPingsOut?: number;
  /** Milliseconds a remote client has to complete TLS and CONNECT (default 2000). */
  authTimeout?: number;
  /** Milliseconds a connection closed after an error keeps writing (default 2000). */
  closeGrace?: number;
  /** Whether the hub is joined to an external cluster (no local no-responders answers then). */
  external?: boolean;
  serverName?: string;
  logger?: Logger | undefined;
  /** Option and variable named when the port is taken. */
  portOption?: { optionName: string; envName: string };
}

/** What a connection needs from its gateway. */
export interface GatewayCore {
  readonly hub: DataHub;
  readonly maxPayload: number;
  readonly maxPending: number;
  readonly maxControlLine: number;
  readonly authTimeout: number;
  readonly closeGrace: number;
  readonly external: boolean;
  authenticate(key: string): AccessGrant | null | Promise<AccessGrant | null>;
  scheduleFlush(conn: Connection): void;
  slowConsumer(conn: Connection, subject: string | undefined): void;
  authFailed(conn: Connection, why: string): void;
  permissionDenied(conn: Connection, op: 'publish' | 'subscribe', subject: string): void;
  protocolError(conn: Connection, text: string): void;
  closed(conn: Connection, reason: string): void;
}

export interface GatewayCounters {
  connectionsTotal: number;
  connections: number;
  slowConsumers: number;
  authFailures: number;
  permissionViolations: number;
  protocolErrors: number;
}

export class Gateway implements GatewayCore {
  readonly hub: DataHub;
  readonly maxPayload: number;
  readonly maxPending: number;
  readonly maxControlLine: number;
  readonly authTimeout: number;
  readonly closeGrace: number;
  readonly external: boolean;
  readonly counters: GatewayCounters = {
    connectionsTotal: 0,
    connections: 0,
    slowConsumers: 0,
    authFailures: 0,
    permissionViolations: 0,
    protocolErrors: 0,
  };
  readonly #server: Server;
  readonly #conns = new Set<Connection>();
  /** Every accepted TCP socket (under TLS too), so that close() can end them all. */
  readonly #sockets = new Set<Socket>();
  readonly #dirty: Connection[] = [];
  #flushScheduled = false;
  readonly #secure: SecureContext | undefined;
  readonly #trustLocal: boolean;
  readonly #localAddresses: Set<string>;
  readonly #authenticate: Authenticate;
  readonly #log: Logger | undefined;
  readonly #serverId = randomBytes(16).toString('hex').toUpperCase();
  readonly #serverName: string;
  readonly #pingTimer: NodeJS.Timeout | undefined;
  readonly #maxPingsOut: number;
  #nextCid = 1;
  #port = 0;
  readonly #host: string;

  private constructor(options: GatewayOptions) {
    this.hub = options.hub;
    this.maxPayload = options.maxPayload ?? 1024 * 1024;
    this.maxPending = options.maxPending ?? 64 * 1024 * 1024;
    this.maxControlLine = options.maxControlLine ?? 4096;
    this.authTimeout = options.authTimeout ?? 2000;
    this.closeGrace = options.closeGrace ?? 2000;
    this.external = options.external ?? false;
    this.#trustLocal = options.trustLocal ?? true;
    this.#localAddresses = hostAddresses();
    this.#authenticate = options.authenticate ?? (() => null);
    this.#log = options.logger;
    this.#serverName = options.serverName ?? 'millwright-datahub';
    this.#maxPingsOut = options.maxPingsOut ?? 2;
    this.#host = options.host;
    this.#secure = options.tls
      ? createSecureContext({ cert: options.tls.cert, key: options.tls.key })
      : undefined;
    this.#server = createServer({ noDelay: true }, (socket) => this.#accept(socket));
    const interval = options.pingInterval ?? 120_000;
    if (interval > 0) {
      this.#pingTimer = setInterval(() => this.#ping(), interval);
      this.#pingTimer.unref();
    }
  }

  /** Starts listening; a taken port fails with a `PortInUseError` naming the option. */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const gw = new Gateway(options);
    await new Promise<void>((resolve, reject) => {
      gw.#server.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EADDRINUSE') {
          const o = options.portOption;
          reject(
            new PortInUseError(
              `port ${options.port} is already in use` +
                (o ? `; choose another with --${o.optionName} or ${o.envName}` : ''),
            ),
          );
        } else reject(err);
      });
      gw.#server.listen({ host: options.host, port: options.port }, () => resolve());
    });
    const addr = gw.#server.address();
    gw.#port = typeof addr === 'object' && addr ? addr.port : options.port;
    gw.#server.on('error', (err) => gw.#log?.error({ err }, 'datahub gateway listener error'));
    return gw;
  }

  get port(): number {
    return this.#port;
  }

  /** `nats://host:port` (loopback when listening on every address). */
  get url(): string {
    const h = this.#host === '0.0.0.0' || this.#host === '::' ? '127.0.0.1' : this.#host;
    return `nats://${h.includes(':') ? `[${h}]` : h}:${this.#port}`;
  }

  isLocal(address: string): boolean {
    if (!this.#trustLocal) return false;
    return isLoopback(address) || this.#localAddresses.has(address.replace(/^::ffff:/, ''));
  }

  #accept(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const port = socket.remotePort ?? 0;
    const local = this.isLocal(address);
    const cid = this.#nextCid++;
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    const remote = `${address.includes(':') ? `[${address}]` : address}:${port}`;
    const info: Record<string, unknown> = {
      server_id: this.#serverId,
      server_name: this.#serverName,
      version: ANNOUNCED_VERSION,
      proto: 1,
      host: this.#host,
      port: this.#port,
      headers: true,
      max_payload: this.maxPayload,
      client_id: cid,
      client_ip: address.replace(/^::ffff:/, ''),
    };
    if (!local) {
      info.auth_required = true;
      info.tls_required = true;
    }
    socket.write(`INFO ${JSON.stringify(info)} \r\n`);
    if (local) {
      this.#attach(new Connection(this, socket, cid, remote, true, false), socket);
      return;
    }
    if (!this.#secure) {
      this.#log?.warn(
        { address: remote },
        'datahub: remote connection refused, the gateway has no TLS certificate',
      );
      socket.end(`-ERR '${ERR.tlsRequired}'\r\n`);
      return;
    }
    const tls = new TLSSocket(socket, { isServer: true, secureContext: this.#secure });
    tls.on('error', (err) => {
      this.#log?.debug({ err, address: remote }, 'datahub: TLS failed');
      tls.destroy();
      socket.destroy();
    });
    tls.setNoDelay?.(true);
    // The connection (and its auth timer) starts at once: a client that never handshakes is cut.
    this.#attach(new Connection(this, tls, cid, remote, false, true), tls);
  }

  #attach(conn: Connection, socket: Socket): void {
    this.#conns.add(conn);
    this.counters.connectionsTotal++;
    this.counters.connections++;
    socket.on('data', (chunk: Buffer) => conn.onData(chunk));
    socket.on('close', () => conn.close('client closed'));
    socket.on('end', () => conn.close('client closed'));
    this.#log?.debug({ cid: conn.cid, address: conn.address, local: conn.local }, 'datahub client connected');
  }

  authenticate(key: string): AccessGrant | null | Promise<AccessGrant | null> {
    return this.#authenticate(key);
  }

  scheduleFlush(conn: Connection): void {
    this.#dirty.push(conn);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(this.#flushAll);
    }
  }

  readonly #flushAll = (): void => {
    this.#flushScheduled = false;
    const list = this.#dirty;
    for (let i = 0; i < list.length; i++) list[i]!.flush();
    list.length = 0;
  };

  slowConsumer(conn: Connection, subject: string | undefined): void {
    this.counters.slowConsumers++;
    this.#log?.warn(
      { cid: conn.cid, name: conn.name, address: conn.address, subject, pendingBytes: conn.pendingBytes },
      'datahub slow consumer: connection closed',
    );
    this.hub.onSlowConsumer?.({ subject: subject ?? '', connection: conn.address });
  }

  authFailed(conn: Connection, why: string): void {
    this.counters.authFailures++;
    this.#log?.warn({ cid: conn.cid, address: conn.address, why }, 'datahub: authorization violation');
  }

  permissionDenied(conn: Connection, op: 'publish' | 'subscribe', subject: string): void {
    this.counters.permissionViolations++;
    this.#log?.warn(
      { cid: conn.cid, address: conn.address, op, subject, key: conn.grant?.keyId },
      'datahub: permission violation',
    );
  }

  protocolError(conn: Connection, text: string): void {
    if (text === ERR.slowConsumer || text === ERR.authViolation) return;
    this.counters.protocolErrors++;
    this.#log?.debug(
      { cid: conn.cid, address: conn.address, error: text },
      'datahub: connection closed on error',
    );
  }

  closed(conn: Connection, reason: string): void {
    if (this.#conns.delete(conn)) this.counters.connections--;
    this.#log?.debug({ cid: conn.cid, reason }, 'datahub client disconnected');
  }

  #ping(): void {
    for (const conn of this.#conns) {
      if (conn.pingsOut >= this.#maxPingsOut) conn.fail(ERR.staleConnection);
      else conn.sendPing();
    }
  }

  /** The open connections. */
  connections(): ConnectionInfo[] {
    return [...this.#conns].map((c) => c.info());
  }

  /** Per-connection totals without the subscription lists (for metrics). */
  connectionObjects(): readonly Connection[] {
    return [...this.#conns];
  }

  /** Cuts every connection authenticated with an access key (it was revoked); answers how many. */
  closeKey(keyId: string): number {
    let n = 0;
    for (const conn of [...this.#conns]) {
      if (conn.grant?.keyId === keyId) {
        conn.fail(ERR.authViolation);
        n++;
      }
    }
    if (n > 0)
      this.#log?.info({ keyId, connections: n }, 'datahub: connections of a revoked access key closed');
    return n;
  }

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    if (this.#pingTimer) clearInterval(this.#pingTimer);
    for (const conn of [...this.#conns]) conn.close('server shutting down');
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }
}

function isLoopback(address: string): boolean {
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

/** Addresses of this host's own interfaces: a connection from one of them comes from this host. */
function hostAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) out.add(a.address);
  }
  return out;
}
