/**
 * The manager's end of the edge links: one WebSocket per enrolled edge. It authenticates the
 * device, records the connection (history, online flag, version, host facts), keeps the heartbeat
 * watch (three missed heartbeats end the link and mark the device offline), and carries bridged
 * requests down and their answers back up, streamed, with bounds on everything an edge or a client
 * can grow: links at once, requests in flight per device, message size, waiting time.
 */
import { PassThrough, type Duplex, type Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { AppError, ERRORS } from '../../kernel/errors.js';
import {
  LINK_CHUNK,
  LINK_CLOSE_MOVED,
  LINK_FEATURE_INLINE,
  LINK_INLINE_MAX,
  bodyFrame,
  parseBodyFrame,
  parseMessage,
  type LinkHeaders,
  type LinkMessage,
  type BridgeActor,
} from '../../kernel/link/protocol.js';
import { holdWrites } from '../../kernel/link/batch.js';
import type { FleetService } from '../fleet/index.js';
import type { LinkPeers } from './peers.js';
import { SocketRelay, type BridgedSocket, type SocketRequest } from './sockets.js';

export interface LinkHubOptions {
  fleet: FleetService;
  logger: Logger;
  heartbeatMs: number;
  bridgeTimeoutMs: number;
  maxPendingPerDevice: number;
  maxLinks: number;
  /** Bridged WebSockets per device, and per manager user or token, at most (sockets.ts). */
  maxSocketsPerDevice: number;
  maxSocketsPerUser: number;
  /** Other manager processes on the same database (links held there are reached through them). */
  peers?: LinkPeers | undefined;
}

export interface BridgeRequest {
  method: string;
  path: string;
  headers: LinkHeaders;
  /** The request body, streamed to the edge; null for none. */
  body: Readable | null;
  /** Who makes the call; sent in the `req` frame (the edge runs the call as its role at most). */
  actor?: BridgeActor | undefined;
}

export interface BridgeResponse {
  status: number;
  headers: LinkHeaders;
  /** Streamed, or the whole body when the edge answered in one frame (small answers). */
  body: Readable | Buffer;
}

interface Pending {
  resolve(res: BridgeResponse): void;
  reject(err: Error): void;
  /** When the edge's answer (or its next body slice) is due: a 504 after it (see #expire). */
  deadline: number;
  /** Set once the edge answered `res`. */
  body: PassThrough | null;
  upload: Readable | null;
}

/** Most bytes queued on one link before the bridge waits for the socket to drain. */
const HIGH_WATER = 4 * 1024 * 1024;

class Link {
  readonly pending = new Map<number, Pending>();
  /** Bridged WebSockets (GraphQL subscriptions) relayed over this link. */
  readonly sockets = new Map<number, BridgedSocket>();
  /** What the edge offered in its hello (`sockets`...). */
  features: ReadonlySet<string> = new Set();
  lastSeen = Date.now();
  metrics: Record<string, unknown> | null = null;
  dirty = false;
  #nextId = 1;
  /** Frames sent in one turn of the event loop leave in one write (see holdWrites). */
  readonly hold: () => void;

  constructor(
    readonly deviceId: string,
    readonly socket: WebSocket,
    readonly connectionId: string,
    raw?: Duplex | null,
  ) {
    this.hold = holdWrites(raw);
  }

  nextId(): number {
    const id = this.#nextId;
    this.#nextId = this.#nextId >= 0xfffffff0 ? 1 : this.#nextId + 1;
    return id;
  }

  send(message: LinkMessage): void {
    this.hold();
    this.socket.send(JSON.stringify(message));
  }

  /** Resolves once the socket's queue is under the high-water mark. */
  async drained(): Promise<void> {
    while (this.socket.bufferedAmount > HIGH_WATER && this.socket.readyState === this.socket.OPEN) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/** An edge's sign-in at `/dm/link` (its device id and link secret), without the secret. */
export interface LinkSignIn {
  deviceId: string;
  projectId: string | null;
  ok: boolean;
  remote: string | null;
  at: number;
}

export class LinkHub {
  readonly #o: LinkHubOptions;
  readonly #links = new Map<string, Link>();
  readonly #timer: NodeJS.Timeout;
  /** One timer for every bridged request's deadline (instead of a timer per request). */
  readonly #deadlines: NodeJS.Timeout;
  readonly #linkedListeners: ((deviceId: string) => void)[] = [];
  readonly #signInListeners = new Set<(event: LinkSignIn) => void>();
  readonly #leaseListeners = new Set<(deviceId: string, seq: number) => void>();
  readonly #sockets: SocketRelay;
  #closed = false;

  constructor(options: LinkHubOptions) {
    this.#o = options;
    this.#sockets = new SocketRelay({
      logger: options.logger,
      openTimeoutMs: options.bridgeTimeoutMs,
      maxPerDevice: options.maxSocketsPerDevice,
      maxPerUser: options.maxSocketsPerUser,
    });
    this.#timer = setInterval(() => void this.#sweep(), options.heartbeatMs);
    this.#timer.unref();
    this.#deadlines = setInterval(
      () => this.#expire(),
      Math.min(1000, Math.max(20, Math.floor(options.bridgeTimeoutMs / 10))),
    );
    this.#deadlines.unref();
  }

  get size(): number {
    return this.#links.size;
  }

  isOnline(deviceId: string): boolean {
    return this.#links.has(deviceId);
  }

  /** The devices whose link this process holds (the task runner claims only their subtasks). */
  linkedDevices(): string[] {
    return [...this.#links.keys()];
  }

  /**
   * Calls `listener` on each sign-in of an edge at `/dm/link`: a success, or a wrong secret for a
   * device that exists (the audit trail records them; an unknown device id is not reported).
   */
  onSignIn(listener: (event: LinkSignIn) => void): () => void {
    this.#signInListeners.add(listener);
    return () => this.#signInListeners.delete(listener);
  }

  /** Reports a sign-in to the listeners (`onSignIn`). */
  signedIn(event: LinkSignIn): void {
    for (const l of this.#signInListeners) {
      try {
        l(event);
      } catch (err) {
        this.#o.logger.warn({ err }, 'a sign-in listener failed');
      }
    }
  }

  /** Calls `listener` on each high-availability `lease` request of an edge (answer with `send`). */
  onLease(listener: (deviceId: string, seq: number) => void): () => void {
    this.#leaseListeners.add(listener);
    return () => this.#leaseListeners.delete(listener);
  }

  /**
   * Sends a control message down the link of `deviceId` when this process holds it; answers
   * whether it was sent.
   */
  send(deviceId: string, message: LinkMessage): boolean {
    const link = this.#links.get(deviceId);
    if (!link || link.socket.readyState !== link.socket.OPEN) return false;
    link.send(message);
    return true;
  }

  /** Calls `listener` each time a device's link is up (after its welcome). */
  onLinked(listener: (deviceId: string) => void): void {
    this.#linkedListeners.push(listener);
  }

  /**
   * A new link from an authenticated device. `raw` is the connection under the WebSocket (its
   * writes are batched per turn of the event loop).
   */
  async accept(
    deviceId: string,
    socket: WebSocket,
    remote: string | null,
    raw?: Duplex | null,
  ): Promise<void> {
    if (this.#closed) {
      socket.close(1001, 'manager stopping');
      return;
    }
    const previous = this.#links.get(deviceId);
    if (!previous && this.#links.size >= this.#o.maxLinks) {
      this.#o.logger.warn({ deviceId, max: this.#o.maxLinks }, 'link refused: too many links');
      socket.close(1013, 'too many links; try again later');
      return;
    }
    // The first message must be the hello; later ones wait here until the link is recorded.
    let link: Link | null = null;
    const early: { data: Buffer; binary: boolean }[] = [];
    let hello: ((m: LinkMessage | null) => void) | null = null;
    const helloP = new Promise<LinkMessage | null>((resolve) => (hello = resolve));
    const timer = setTimeout(() => hello?.(null), Math.max(5000, this.#o.heartbeatMs * 3));
    socket.on('message', (data: Buffer, binary: boolean) => {
      if (link) return this.#onMessage(link, data, binary);
      if (hello) {
        const h = hello;
        hello = null;
        clearTimeout(timer);
        return h(binary ? null : parseMessage(data.toString('utf8')));
      }
      if (early.length < 100) early.push({ data, binary });
    });
    socket.once('close', () => {
      clearTimeout(timer);
      hello?.(null);
    });
    const first = await helloP;
    if (!first || first.t !== 'hello') {
      if (socket.readyState === socket.OPEN) socket.close(1002, 'expected hello');
      return;
    }
    if (previous) previous.socket.terminate();
    const connectionId = await this.#o.fleet.linkUp(deviceId, remote, {
      version: String(first.version ?? ''),
      host: JSON.stringify(first.host ?? {}),
    });
    const current = new Link(deviceId, socket, connectionId, raw);
    if (Array.isArray(first.features))
      current.features = new Set(first.features.filter((f): f is string => typeof f === 'string'));
    if (socket.readyState !== socket.OPEN) {
      await this.#o.fleet.linkDown(deviceId, connectionId, 'closed during hello', this.#links.has(deviceId));
      return;
    }
    this.#links.set(deviceId, current);
    link = current;
    if (this.#o.peers) {
      try {
        await this.#o.peers.held(deviceId);
      } catch (err) {
        this.#o.logger.warn({ err, deviceId }, 'recording the link holder failed');
      }
    }
    for (const m of early) this.#onMessage(current, m.data, m.binary);
    socket.once(
      'close',
      (code: number, reason: Buffer) => void this.#onClose(current, code, reason.toString()),
    );
    socket.on('error', (err) => this.#o.logger.debug({ err, deviceId }, 'link error'));
    current.send({
      t: 'welcome',
      deviceId,
      heartbeatMs: this.#o.heartbeatMs,
      reconnectMaxMs: Math.min(60_000, Math.max(1000, this.#o.heartbeatMs * 3)),
      features: [LINK_FEATURE_INLINE],
    });
    this.#o.logger.info({ deviceId, remote, version: first.version }, 'edge linked');
    for (const l of this.#linkedListeners) l(deviceId);
  }

  #onMessage(link: Link, data: Buffer, binary: boolean): void {
    link.lastSeen = Date.now();
    if (binary) {
      const frame = parseBodyFrame(data);
      if (frame && this.#sockets.frame(link, frame.id, frame.chunk)) return;
      const p = frame ? link.pending.get(frame.id) : undefined;
      if (!frame || !p?.body) return;
      this.#arm(p);
      if (!p.body.write(frame.chunk)) link.socket.pause();
      return;
    }
    const m = parseMessage(data.toString('utf8'));
    if (!m) {
      link.socket.close(1002, 'malformed message');
      return;
    }
    switch (m.t) {
      case 'hb':
        link.metrics = m.metrics && typeof m.metrics === 'object' ? m.metrics : {};
        link.dirty = true;
        return;
      case 'res': {
        const p = link.pending.get(m.id);
        if (!p || p.body) return;
        if (typeof m.body === 'string') {
          // The whole answer in one frame.
          this.#finish(link, m.id, p);
          const body = Buffer.from(m.body, 'base64');
          if (body.length > LINK_INLINE_MAX) {
            p.reject(new AppError(ERRORS.edgeError, 'the edge answered an oversized inline body'));
            return;
          }
          p.resolve({ status: m.status, headers: m.headers ?? {}, body });
          return;
        }
        const body = new PassThrough({ highWaterMark: 1024 * 1024 });
        body.on('drain', () => link.socket.resume());
        p.body = body;
        this.#arm(p);
        p.resolve({ status: m.status, headers: m.headers ?? {}, body });
        return;
      }
      case 'end': {
        const p = link.pending.get(m.id);
        if (!p) return;
        this.#finish(link, m.id, p);
        p.body?.end();
        return;
      }
      case 'err': {
        const p = link.pending.get(m.id);
        if (!p) return;
        this.#finish(link, m.id, p);
        const err = new AppError(ERRORS.edgeError, `the edge answered: ${m.message}`, {
          status: m.status >= 400 ? m.status : 502,
        });
        if (p.body) p.body.destroy(err);
        else p.reject(err);
        return;
      }
      case 'wsup':
        this.#sockets.up(link, m.id);
        return;
      case 'wsclose':
        this.#sockets.closed(link, m.id, m.code, m.reason);
        return;
      case 'lease':
        if (typeof m.seq !== 'number') return;
        for (const l of this.#leaseListeners) {
          try {
            l(link.deviceId, m.seq);
          } catch (err) {
            this.#o.logger.warn({ err }, 'a lease listener failed');
          }
        }
        return;
      default:
        return;
    }
  }

  #finish(link: Link, id: number, p: Pending): void {
    link.pending.delete(id);
    p.upload?.destroy();
  }

  /** (Re)starts the wait for the edge: no answer (or no next body slice) in time is a 504. */
  #arm(p: Pending): void {
    p.deadline = Date.now() + this.#o.bridgeTimeoutMs;
  }

  /** Ends the requests whose edge did not answer in time: 504 to the caller, `cancel` to the edge. */
  #expire(): void {
    const now = Date.now();
    for (const link of this.#links.values()) {
      if (link.pending.size === 0) continue;
      for (const [id, p] of link.pending) {
        if (p.deadline > now) continue;
        this.#finish(link, id, p);
        if (link.socket.readyState === link.socket.OPEN) link.send({ t: 'cancel', id });
        const err = new AppError(
          ERRORS.edgeTimeout,
          `device "${link.deviceId}" did not answer within ${this.#o.bridgeTimeoutMs} ms`,
        );
        if (p.body) p.body.destroy(err);
        else p.reject(err);
      }
    }
  }

  async #onClose(link: Link, code: number, reason: string): Promise<void> {
    this.#sockets.linkDown(link);
    for (const [id, p] of link.pending) {
      this.#finish(link, id, p);
      const err = new AppError(
        ERRORS.deviceOffline,
        `device "${link.deviceId}" went offline during the request`,
      );
      if (p.body) p.body.destroy(err);
      else p.reject(err);
    }
    const current = this.#links.get(link.deviceId) === link;
    if (current) {
      this.#links.delete(link.deviceId);
      await this.#o.peers
        ?.released(link.deviceId)
        .catch((err: unknown) => this.#o.logger.warn({ err }, 'recording the end of a link holder failed'));
    }
    const why = reason || (code === 1006 ? 'connection lost' : `closed (${code})`);
    this.#o.logger.info({ deviceId: link.deviceId, code, reason: why }, 'edge unlinked');
    try {
      if (code === LINK_CLOSE_MOVED) return await this.#o.fleet.retireMoved(link.deviceId, why);
      await this.#o.fleet.linkDown(link.deviceId, link.connectionId, why, this.#links.has(link.deviceId));
    } catch (err) {
      this.#o.logger.warn({ err, deviceId: link.deviceId }, 'recording the end of a link failed');
    }
  }

  /**
   * Sends a request to the edge of `deviceId`: down its link when this process holds it, else
   * through the manager process that does (same database); answers once the edge sent status and
   * headers.
   */
  request(deviceId: string, req: BridgeRequest): Promise<BridgeResponse> {
    if (!this.#links.has(deviceId) && this.#o.peers) return this.#viaPeer(deviceId, this.#o.peers, req);
    return this.requestLocal(deviceId, req);
  }

  async #viaPeer(deviceId: string, peers: LinkPeers, req: BridgeRequest): Promise<BridgeResponse> {
    const owner = await peers.ownerOf(deviceId);
    if (owner) return peers.forward(owner, deviceId, req, this.#o.bridgeTimeoutMs);
    return this.requestLocal(deviceId, req);
  }

  /** Sends a request down the link of `deviceId` that this process holds (503 when it does not). */
  async requestLocal(deviceId: string, req: BridgeRequest): Promise<BridgeResponse> {
    const link = this.#links.get(deviceId);
    if (!link || link.socket.readyState !== link.socket.OPEN) {
      throw new AppError(
        ERRORS.deviceOffline,
        `device "${deviceId}" is offline: its edge is not connected to the manager`,
      );
    }
    if (link.pending.size >= this.#o.maxPendingPerDevice) {
      throw new AppError(
        ERRORS.bridgeBusy,
        `device "${deviceId}" has ${link.pending.size} bridged requests in flight, the most allowed; retry later`,
      );
    }
    const id = link.nextId();
    const answer = new Promise<BridgeResponse>((resolve, reject) => {
      const p: Pending = {
        resolve,
        reject,
        deadline: 0,
        body: null,
        upload: req.body,
      };
      link.pending.set(id, p);
      this.#arm(p);
    });
    link.send({
      t: 'req',
      id,
      method: req.method,
      path: req.path,
      headers: req.headers,
      body: req.body !== null,
      ...(req.actor ? { actor: req.actor } : {}),
    });
    if (req.body) void this.#upload(link, id, req.body);
    return answer;
  }

  async #upload(link: Link, id: number, body: Readable): Promise<void> {
    try {
      for await (const chunk of body) {
        if (!link.pending.has(id)) return;
        const buf = chunk as Buffer;
        for (let off = 0; off < buf.length; off += LINK_CHUNK) {
          link.hold();
          link.socket.send(bodyFrame(id, buf.subarray(off, off + LINK_CHUNK)));
        }
        await link.drained();
      }
      if (link.pending.has(id)) link.send({ t: 'end', id });
    } catch (err) {
      const p = link.pending.get(id);
      if (!p) return;
      this.#finish(link, id, p);
      if (link.socket.readyState === link.socket.OPEN) link.send({ t: 'cancel', id });
      const e = new AppError(
        ERRORS.requestAborted,
        `the request body could not be read: ${(err as Error).message}`,
      );
      if (p.body) p.body.destroy(e);
      else p.reject(e);
    }
  }

  /** Heartbeat watch: links silent for three heartbeats end; heartbeats reach the database. */
  async #sweep(): Promise<void> {
    const now = Date.now();
    const beats: { id: string; at: number; metrics: Record<string, unknown> }[] = [];
    for (const link of this.#links.values()) {
      if (now - link.lastSeen > this.#o.heartbeatMs * 3) {
        this.#o.logger.warn({ deviceId: link.deviceId }, 'edge missed three heartbeats; ending its link');
        link.socket.terminate();
        continue;
      }
      if (link.dirty) {
        link.dirty = false;
        beats.push({ id: link.deviceId, at: link.lastSeen, metrics: link.metrics ?? {} });
      }
    }
    try {
      await this.#o.fleet.recordHeartbeats(beats);
    } catch (err) {
      this.#o.logger.warn({ err }, 'recording heartbeats failed');
    }
  }

  /** Ends every link (edges reconnect to the next manager) and stops the watch. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    clearInterval(this.#deadlines);
    const links = [...this.#links.values()];
    await Promise.all(
      links.map(
        (l) =>
          new Promise<void>((resolve) => {
            l.socket.once('close', () => resolve());
            l.socket.close(1001, 'manager stopping');
            setTimeout(() => {
              l.socket.terminate();
              resolve();
            }, 1000).unref();
          }),
      ),
    );
    // Let the close handlers record the end of each link.
    await new Promise((r) => setTimeout(r, 20));
  }

  /**
   * Relays a browser's WebSocket (a GraphQL subscription) to the edge of `deviceId` over its link,
   * when this process holds it (see sockets.ts); refusals close `browser` with their code.
   */
  openSocket(deviceId: string, req: SocketRequest, browser: WebSocket): void {
    this.#sockets.open(this.#links.get(deviceId) ?? null, deviceId, req, browser);
  }

  /** Bridged WebSockets open through this process. */
  get sockets(): number {
    return this.#sockets.size;
  }

  /** A link's device, for the bridge (undefined when offline). */
  has(deviceId: string): boolean {
    return this.#links.has(deviceId);
  }
}
