/**
 * Bridged WebSockets on the manager (`wsopen` on the link, see src/kernel/link/protocol.ts): a
 * browser's GraphQL subscription socket at the bridge's prefix, relayed message by message to a
 * socket the edge opens to its own endpoint. The hub (hub.ts) hands this relay the link's socket
 * messages; the bridge's route (src/manager/bridge/routes.ts) opens them for signed-in users.
 *
 * Bounds (docs/security.md): sockets per device (`bridgeMaxSockets`) and per manager user or
 * token (`bridgeMaxSocketsPerUser`), 1013 beyond; messages of at most `LINK_SOCKET_MAX_MESSAGE`
 * bytes (1009), text only (1003); at most `MAX_HELD` browser messages while the edge opens its
 * side (4429), which must happen within the bridge's timeout (`LINK_SOCKET_CLOSE_TIMEOUT`).
 * Back-pressure: a browser is not read while the link's queue is over its high-water mark; a
 * browser with more than `LINK_SOCKET_MAX_BUFFERED` bytes unread is closed (1013) rather than
 * buffered without end. A link that ends closes its sockets with `LINK_SOCKET_CLOSE_OFFLINE`.
 */
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import {
  LINK_FEATURE_SOCKETS,
  LINK_SOCKET_CLOSE_OFFLINE,
  LINK_SOCKET_CLOSE_TIMEOUT,
  LINK_SOCKET_MAX_BUFFERED,
  LINK_SOCKET_MAX_MESSAGE,
  bodyFrame,
  closeReason,
  sendableCloseCode,
  type BridgeActor,
  type LinkHeaders,
  type LinkMessage,
} from '../../kernel/link/protocol.js';

/** Browser messages held while the edge opens its side of a socket. */
export const MAX_HELD = 16;
/** The close code of a socket to an edge too old to carry them (no `sockets` in its hello). */
export const SOCKET_CLOSE_UNSUPPORTED = 4501;
/** Bytes queued on a link above which browsers' sockets to that edge are not read. */
const LINK_HIGH_WATER = 4 * 1024 * 1024;

/** A browser's socket to open on an edge. */
export interface SocketRequest {
  /** The edge path (`/devicehub/v2`). */
  path: string;
  /** Headers for the edge's upgrade: the edge's credential, none of the caller's. */
  headers: LinkHeaders;
  /** The subprotocol the browser's socket speaks. */
  protocol: string;
  actor: BridgeActor;
  /** Whom the per-user bound counts it against (the caller's subject). */
  owner: string;
  /**
   * Checks the browser's first message (its `connection_init` payload) before anything reaches
   * the edge; throws to refuse (the socket closes 4403 with the message).
   */
  checkInit(payload: unknown): void;
}

/** What the relay needs of a link (the hub's `Link`). */
export interface RelayLink {
  readonly deviceId: string;
  readonly socket: WebSocket;
  /** What the edge offered in its hello. */
  readonly features: ReadonlySet<string>;
  readonly sockets: Map<number, BridgedSocket>;
  nextId(): number;
  send(message: LinkMessage): void;
  hold(): void;
}

export interface BridgedSocket {
  readonly id: number;
  readonly owner: string;
  readonly browser: WebSocket;
  open: boolean;
  held: Buffer[];
  timer: NodeJS.Timeout | undefined;
}

export interface SocketRelayOptions {
  logger: Logger;
  openTimeoutMs: number;
  maxPerDevice: number;
  maxPerUser: number;
}

/** A browser's close code as the edge's socket takes it (1005, 1006: a normal end, going away). */
const towardEdge = (code: number): number => (code === 1005 ? 1000 : code === 1006 ? 1001 : code);

export class SocketRelay {
  readonly #o: SocketRelayOptions;
  /** Open sockets by owner (entries removed at zero). */
  readonly #perOwner = new Map<string, number>();

  constructor(options: SocketRelayOptions) {
    this.#o = options;
  }

  /** Sockets open through this manager process. */
  get size(): number {
    let n = 0;
    for (const c of this.#perOwner.values()) n += c;
    return n;
  }

  /** Opens `browser`'s socket on the edge of `link` (null: offline here). */
  open(link: RelayLink | null, deviceId: string, req: SocketRequest, browser: WebSocket): void {
    const refuse = (code: number, reason: string) => browser.close(code, closeReason(reason));
    if (!link || link.socket.readyState !== link.socket.OPEN)
      return refuse(
        LINK_SOCKET_CLOSE_OFFLINE,
        `device "${deviceId}" is offline: its edge is not linked here`,
      );
    if (!link.features.has(LINK_FEATURE_SOCKETS))
      return refuse(SOCKET_CLOSE_UNSUPPORTED, 'this edge is too old to carry subscriptions: update it');
    if (link.sockets.size >= this.#o.maxPerDevice)
      return refuse(1013, `device "${deviceId}" has ${link.sockets.size} bridged sockets, the most allowed`);
    const mine = this.#perOwner.get(req.owner) ?? 0;
    if (mine >= this.#o.maxPerUser)
      return refuse(1013, `you hold ${mine} bridged sockets, the most allowed; close one first`);
    const s: BridgedSocket = {
      id: link.nextId(),
      owner: req.owner,
      browser,
      open: false,
      held: [],
      timer: undefined,
    };
    link.sockets.set(s.id, s);
    this.#perOwner.set(req.owner, mine + 1);
    let first = true;
    browser.on('message', (data: Buffer, binary: boolean) => {
      if (link.sockets.get(s.id) !== s) return;
      if (binary) return this.#end(link, s, 1003, 'bridged sockets carry text messages only', true);
      if (data.length > LINK_SOCKET_MAX_MESSAGE) return this.#end(link, s, 1009, 'message too big', true);
      if (first) {
        first = false;
        const refusal = initRefusal(data, req.checkInit);
        if (refusal) return this.#end(link, s, 4403, `Forbidden: ${refusal}`, true);
      }
      if (s.open) return this.#forward(link, s, data);
      if (s.held.length >= MAX_HELD)
        return this.#end(link, s, 4429, 'Too many messages before the edge opened the socket', true);
      s.held.push(data);
    });
    browser.on('close', (code: number, reason: Buffer) =>
      this.#end(link, s, towardEdge(code), reason.toString(), true),
    );
    browser.on('error', (err) => this.#o.logger.debug({ err, deviceId }, 'bridged socket error'));
    s.timer = setTimeout(
      () =>
        this.#end(
          link,
          s,
          LINK_SOCKET_CLOSE_TIMEOUT,
          `device "${deviceId}" did not open the socket within ${this.#o.openTimeoutMs} ms`,
          true,
        ),
      this.#o.openTimeoutMs,
    );
    s.timer.unref();
    link.send({
      t: 'wsopen',
      id: s.id,
      path: req.path,
      headers: req.headers,
      protocols: [req.protocol],
      actor: req.actor,
    });
  }

  /** The edge's `wsup`: its side is open; the held messages go. */
  up(link: RelayLink, id: number): void {
    const s = link.sockets.get(id);
    if (!s || s.open) return;
    s.open = true;
    clearTimeout(s.timer);
    for (const data of s.held.splice(0)) this.#forward(link, s, data);
  }

  /** The edge's `wsclose`: the browser's socket closes with its code. */
  closed(link: RelayLink, id: number, code: number, reason: string): void {
    const s = link.sockets.get(id);
    if (s) this.#end(link, s, sendableCloseCode(code), reason, false);
  }

  /** A message from the edge for socket `id`; false when it is no socket here. */
  frame(link: RelayLink, id: number, chunk: Buffer): boolean {
    const s = link.sockets.get(id);
    if (!s) return false;
    if (s.browser.bufferedAmount > LINK_SOCKET_MAX_BUFFERED)
      this.#end(link, s, 1013, 'the browser reads the subscription too slowly', true);
    else s.browser.send(chunk, { binary: false });
    return true;
  }

  /** The link ended: its sockets close with `LINK_SOCKET_CLOSE_OFFLINE`. */
  linkDown(link: RelayLink): void {
    for (const s of [...link.sockets.values()]) {
      this.#end(
        link,
        s,
        LINK_SOCKET_CLOSE_OFFLINE,
        `device "${link.deviceId}" went offline: its link to the manager ended`,
        false,
      );
    }
  }

  #forward(link: RelayLink, s: BridgedSocket, data: Buffer): void {
    if (link.socket.readyState !== link.socket.OPEN) return;
    link.hold();
    link.socket.send(bodyFrame(s.id, data));
    if (link.socket.bufferedAmount <= LINK_HIGH_WATER) return;
    s.browser.pause();
    const check = () => {
      if (link.sockets.get(s.id) !== s) return;
      if (link.socket.bufferedAmount > LINK_HIGH_WATER && link.socket.readyState === link.socket.OPEN)
        setTimeout(check, 5);
      else s.browser.resume();
    };
    setTimeout(check, 5);
  }

  /** Ends socket `s`: forgets it, closes the browser's side, and tells the edge when asked. */
  #end(link: RelayLink, s: BridgedSocket, code: number, reason: string, toEdge: boolean): void {
    if (link.sockets.get(s.id) !== s) return;
    link.sockets.delete(s.id);
    clearTimeout(s.timer);
    s.held.length = 0;
    const left = (this.#perOwner.get(s.owner) ?? 1) - 1;
    if (left > 0) this.#perOwner.set(s.owner, left);
    else this.#perOwner.delete(s.owner);
    const why = closeReason(reason);
    const sendable = sendableCloseCode(code);
    if (toEdge && link.socket.readyState === link.socket.OPEN)
      link.send({ t: 'wsclose', id: s.id, code: sendable, reason: why });
    if (s.browser.readyState === s.browser.OPEN) s.browser.close(sendable, why);
    else s.browser.terminate();
  }
}

/** Why the browser's first message is refused (not `connection_init`, or its check threw); null: fine. */
function initRefusal(data: Buffer, check: (payload: unknown) => void): string | null {
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    return 'the first message must be connection_init';
  }
  if (!message || typeof message !== 'object' || (message as { type?: unknown }).type !== 'connection_init')
    return 'the first message must be connection_init';
  try {
    check((message as { payload?: unknown }).payload);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
