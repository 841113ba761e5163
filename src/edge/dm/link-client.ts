/**
 * The edge's end of the link: one WebSocket over TLS to the manager, pinned to the certificate
 * confirmed at enrolment, authenticated with the device's identifier and link secret. It sends a
 * hello (version, host facts), then heartbeats with metrics; it executes the bridged requests the
 * manager sends by dispatching them into the edge's own HTTP app in process (`dispatch`; the
 * edge's auth hook checks the per-device credential the manager adds, and runs the call as the
 * manager caller's role carried in the frame, never more), streaming bodies both ways; and the
 * WebSockets (GraphQL subscriptions) the manager bridges for its users (`link-sockets.ts`). It
 * reconnects with capped exponential backoff and jitter.
 */
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import WebSocket from 'ws';
import {
  LINK_CHUNK,
  LINK_FEATURE_INLINE,
  LINK_FEATURE_SOCKETS,
  LINK_INLINE_MAX,
  LINK_MAX_MESSAGE,
  LINK_PATH,
  bodyFrame,
  parseBodyFrame,
  parseBridgeActor,
  parseMessage,
  reconnectDelay,
  type LinkMessage,
} from '../../kernel/link/protocol.js';
import { holdWrites } from '../../kernel/link/batch.js';
import { dispatch, type Exchange, type ResponseSink } from '../../kernel/http/in-process.js';
import { pinnedConnection, type Fingerprint } from '../../kernel/link/pinned.js';
import type { HaState } from './ha.js';
import { BridgedSockets } from './link-sockets.js';

/** Bridged requests executed at once at most; more are answered 503 by the edge. */
export const MAX_BRIDGED_IN_FLIGHT = 64;
const RECONNECT_BASE_MS = 500;
const DEFAULT_RECONNECT_MAX_MS = 30_000;
const DEFAULT_HEARTBEAT_MS = 10_000;

export interface LinkIdentity {
  managerUrl: string;
  fingerprint: Fingerprint;
  deviceId: string;
  linkSecret: string;
}

export interface LinkClientOptions {
  identity: LinkIdentity;
  /** The app bridged requests are dispatched to. */
  app: FastifyInstance;
  logger: Logger;
  version: string;
  millwright: string;
  hostFacts: () => Record<string, unknown>;
  /** More facts for each heartbeat (disk use, certificate expiry, integrations down...). */
  extraMetrics?: () => Record<string, unknown>;
  /** High availability: told of the link's ups and downs, and of the manager's `ha` messages. */
  ha?: HaState;
}

interface Exec {
  exchange: Exchange | null;
}

export class LinkClient {
  readonly #o: LinkClientOptions;
  #ws: WebSocket | null = null;
  #attempt = 0;
  #heartbeatMs = DEFAULT_HEARTBEAT_MS;
  #reconnectMaxMs = DEFAULT_RECONNECT_MAX_MS;
  #hbTimer: NodeJS.Timeout | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #connected = false;
  /** The manager takes small answers in one frame (its welcome offered `inline`). */
  #inline = false;
  /** Frames sent in one turn of the event loop leave in one write (see holdWrites). */
  #hold: () => void = () => {};
  #lastError: string | null = null;
  readonly #execs = new Map<number, Exec>();
  readonly #sockets: BridgedSockets;
  #cpu = process.cpuUsage();
  #cpuAt = Date.now();

  constructor(options: LinkClientOptions) {
    this.#o = options;
    this.#sockets = new BridgedSockets(options.app, this.#outbox, options.logger);
  }

  get connected(): boolean {
    return this.#connected;
  }

  get lastError(): string | null {
    return this.#lastError;
  }

  start(): void {
    this.#stopped = false;
    this.#connect();
  }

  /**
   * Closes the link; `reason` is what the manager logs (a move or an unenrolment is not a stop);
   * `code` LINK_CLOSE_MOVED asks the manager to retire this device record (the edge moved).
   */
  async stop(reason = 'edge stopping', code = 1001): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#hbTimer);
    const ws = this.#ws;
    this.#ws = null;
    if (ws && ws.readyState !== ws.CLOSED) {
      await new Promise<void>((resolve) => {
        ws.once('close', () => resolve());
        ws.close(code, reason);
        setTimeout(() => {
          ws.terminate();
          resolve();
        }, 1000).unref();
      });
    }
  }

  #connect(): void {
    if (this.#stopped) return;
    const { identity } = this.#o;
    const url = `${identity.managerUrl.replace(/^http/, 'ws').replace(/\/+$/, '')}${LINK_PATH}`;
    const ws = new WebSocket(url, {
      headers: { 'x-device-id': identity.deviceId, 'x-device-secret': identity.linkSecret },
      maxPayload: LINK_MAX_MESSAGE,
      perMessageDeflate: false,
      handshakeTimeout: 15_000,
      ...(url.startsWith('wss:')
        ? {
            createConnection: pinnedConnection(
              identity.fingerprint,
            ) as unknown as WebSocket.ClientOptions['createConnection'],
          }
        : {}),
    });
    this.#ws = ws;
    this.#hold = () => {};
    ws.on('upgrade', (res) => {
      if (this.#ws === ws) this.#hold = holdWrites(res.socket);
    });
    ws.on('open', () => {
      this.#send(ws, {
        t: 'hello',
        version: this.#o.version,
        millwright: this.#o.millwright,
        host: this.#o.hostFacts(),
        features: [LINK_FEATURE_SOCKETS],
      });
      this.#startHeartbeat(ws);
    });
    ws.on('message', (data: Buffer, binary: boolean) => this.#onMessage(ws, data, binary));
    ws.on('unexpected-response', (_req, res) => {
      this.#lastError = `the manager refused the link: HTTP ${res.statusCode}`;
      res.resume();
      ws.terminate();
    });
    ws.on('error', (err) => {
      this.#lastError = err.message;
      this.#o.logger.debug({ err }, 'link error');
    });
    ws.on('close', (code, reason) => {
      clearInterval(this.#hbTimer);
      this.#inline = false;
      if (this.#ws === ws || this.#ws === null) this.#o.ha?.unlinked();
      if (this.#connected)
        this.#o.logger.warn({ code, reason: reason.toString() }, 'link to the manager lost');
      this.#connected = false;
      const execs = [...this.#execs.values()];
      this.#execs.clear();
      for (const e of execs) e.exchange?.abort();
      this.#sockets.closeAll();
      if (this.#ws === ws) this.#ws = null;
      this.#scheduleReconnect();
    });
  }

  #scheduleReconnect(): void {
    if (this.#stopped) return;
    const delay = reconnectDelay(this.#attempt++, RECONNECT_BASE_MS, this.#reconnectMaxMs);
    this.#retryTimer = setTimeout(() => this.#connect(), delay);
    this.#retryTimer.unref();
  }

  #startHeartbeat(ws: WebSocket): void {
    clearInterval(this.#hbTimer);
    this.#hbTimer = setInterval(
      () => this.#send(ws, { t: 'hb', metrics: this.#metrics() }),
      this.#heartbeatMs,
    );
    this.#hbTimer.unref();
  }

  #metrics(): Record<string, unknown> {
    const now = Date.now();
    const used = process.cpuUsage(this.#cpu);
    const elapsedUs = Math.max(1, (now - this.#cpuAt) * 1000);
    this.#cpu = process.cpuUsage();
    this.#cpuAt = now;
    return {
      cpuPercent: Math.round(((used.user + used.system) / elapsedUs) * 1000) / 10,
      memoryBytes: process.memoryUsage().rss,
      load1: os.loadavg()[0],
      uptimeSeconds: Math.round(process.uptime()),
      bridgedInFlight: this.#execs.size,
      bridgedSockets: this.#sockets.size,
      memoryPercent: Math.round((1 - os.freemem() / os.totalmem()) * 1000) / 10,
      ...this.#o.extraMetrics?.(),
    };
  }

  #send(ws: WebSocket, m: LinkMessage): void {
    if (ws.readyState !== ws.OPEN) return;
    if (ws === this.#ws) this.#hold();
    ws.send(JSON.stringify(m));
  }

  #onMessage(ws: WebSocket, data: Buffer, binary: boolean): void {
    if (binary) {
      const frame = parseBodyFrame(data);
      if (frame && this.#sockets.frame(frame.id, frame.chunk)) return;
      const exchange = frame ? this.#execs.get(frame.id)?.exchange : undefined;
      if (frame && exchange && !exchange.push(frame.chunk)) {
        ws.pause();
        exchange.whenRead(() => ws.resume());
      }
      return;
    }
    const m = parseMessage(data.toString('utf8'));
    if (!m) return;
    switch (m.t) {
      case 'welcome':
        this.#connected = true;
        this.#inline = Array.isArray(m.features) && m.features.includes(LINK_FEATURE_INLINE);
        this.#attempt = 0;
        this.#lastError = null;
        this.#heartbeatMs = Math.max(100, m.heartbeatMs);
        this.#reconnectMaxMs = Math.max(1000, m.reconnectMaxMs);
        this.#startHeartbeat(ws);
        this.#send(ws, { t: 'hb', metrics: this.#metrics() });
        this.#o.logger.info({ deviceId: m.deviceId }, 'linked to the manager');
        this.#o.ha?.linked((msg) => this.#send(ws, msg));
        return;
      case 'ha':
        this.#o.ha
          ?.onMessage(m)
          .catch((err: unknown) => this.#o.logger.warn({ err }, 'high availability: role not recorded'));
        return;
      case 'req':
        this.#execute(ws, m);
        return;
      case 'wsopen':
        this.#sockets.open(ws, m);
        return;
      case 'wsclose':
        this.#sockets.closed(m.id, m.code, m.reason);
        return;
      case 'end':
        this.#execs.get(m.id)?.exchange?.push(null);
        return;
      case 'cancel': {
        const e = this.#execs.get(m.id);
        if (e) {
          this.#execs.delete(m.id);
          e.exchange?.abort();
        }
        return;
      }
      default:
        return;
    }
  }

  #execute(ws: WebSocket, m: Extract<LinkMessage, { t: 'req' }>): void {
    if (this.#execs.size >= MAX_BRIDGED_IN_FLIGHT) {
      this.#send(ws, {
        t: 'err',
        id: m.id,
        status: 503,
        message: 'the edge is executing too many bridged requests',
      });
      return;
    }
    // Registered before dispatch: a synchronous answer finds (and removes) its entry.
    const call = new BridgedCall(this.#outbox, ws, m.id);
    this.#execs.set(m.id, call);
    try {
      call.exchange = dispatch(
        this.#o.app,
        {
          method: m.method,
          url: m.path,
          headers: m.headers,
          body: m.body,
          remoteAddress: '127.0.0.1',
          // The edge runs the call as this actor's role at most (the auth hook); none is a viewer.
          actor: parseBridgeActor(m.actor),
        },
        call,
      );
    } catch (err) {
      call.fail(err as Error);
    }
  }

  /** What a bridged call needs of this client (one object per client, not per call). */
  readonly #outbox: Outbox = {
    live: (ws, id) => ws.readyState === ws.OPEN && this.#execs.has(id),
    done: (id) => this.#execs.delete(id),
    inline: () => this.#inline,
    send: (ws, m) => this.#send(ws, m),
    frame: (ws, bytes) => {
      if (ws === this.#ws) this.#hold();
      ws.send(bytes);
    },
  };
}

interface Outbox {
  live(ws: WebSocket, id: number): boolean;
  done(id: number): void;
  inline(): boolean;
  send(ws: WebSocket, m: LinkMessage): void;
  frame(ws: WebSocket, bytes: Buffer): void;
}

/** One bridged request on the edge: the sink its answer is written to, as link messages. */
class BridgedCall implements ResponseSink, Exec {
  /** Set once dispatched (null only while `dispatch` runs). */
  exchange: Exchange | null = null;

  constructor(
    private readonly out: Outbox,
    private readonly ws: WebSocket,
    private readonly id: number,
  ) {}

  whole(status: number, headers: Record<string, string | string[]>, body: Buffer): void {
    const { out, ws, id } = this;
    if (!out.live(ws, id)) return;
    if (out.inline() && body.length <= LINK_INLINE_MAX) {
      out.done(id);
      out.send(ws, { t: 'res', id, status, headers, body: body.toString('base64') });
      return;
    }
    out.send(ws, { t: 'res', id, status, headers });
    this.#frames(body, () => this.end());
  }

  head(status: number, headers: Record<string, string | string[]>): void {
    if (this.out.live(this.ws, this.id)) this.out.send(this.ws, { t: 'res', id: this.id, status, headers });
  }

  chunk(bytes: Buffer, next: (err?: Error | null) => void): void {
    if (this.out.live(this.ws, this.id)) this.#frames(bytes, () => next());
    else next();
  }

  end(): void {
    if (!this.out.live(this.ws, this.id)) return;
    this.out.done(this.id);
    this.out.send(this.ws, { t: 'end', id: this.id });
  }

  fail(err: Error): void {
    if (!this.out.live(this.ws, this.id)) return;
    this.out.done(this.id);
    this.out.send(this.ws, { t: 'err', id: this.id, status: 502, message: err.message });
  }

  /** Body frames of `bytes`; `then` once the link's queue is short enough again. */
  #frames(bytes: Buffer, then: () => void): void {
    for (let off = 0; off < bytes.length; off += LINK_CHUNK) {
      this.out.frame(this.ws, bodyFrame(this.id, bytes.subarray(off, off + LINK_CHUNK)));
    }
    const wait = () => {
      if (this.ws.bufferedAmount > 4 * 1024 * 1024 && this.out.live(this.ws, this.id)) setTimeout(wait, 5);
      else then();
    };
    wait();
  }
}
