/**
 * The edge's end of bridged WebSockets (`wsopen` on the link, see src/kernel/link/protocol.ts):
 * each one is a WebSocket to the edge's own GraphQL endpoint over an in-process connection
 * (src/kernel/http/in-process-socket.ts), authenticated as a bridged request is (the manager's
 * per-device credential in the headers, the manager caller's role in the frame, never more), its
 * messages relayed as binary link frames.
 *
 * Bounds: `LINK_SOCKET_MAX_PER_EDGE` sockets at once (more: `wsclose` 1013), messages of at most
 * `LINK_SOCKET_MAX_MESSAGE` bytes either way (1009), text only (1003). Back-pressure: while the
 * link's queue is over its high-water mark, the socket is not read, and once more than
 * `LINK_SOCKET_MAX_BUFFERED` bytes of the endpoint's wait, the socket is closed (1013); a message
 * from the manager for an endpoint that is not reading that much is refused the same way.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type WebSocket from 'ws';
import {
  LINK_SOCKET_MAX_BUFFERED,
  LINK_SOCKET_MAX_MESSAGE,
  LINK_SOCKET_MAX_PER_EDGE,
  LINK_SOCKET_PROTOCOLS,
  bodyFrame,
  closeReason,
  parseBridgeActor,
  sendableCloseCode,
  type LinkMessage,
} from '../../kernel/link/protocol.js';
import { openInProcessSocket, type InProcessSocket } from '../../kernel/http/in-process-socket.js';

/** Bytes queued on the link above which a bridged socket is not read until they drain. */
const LINK_HIGH_WATER = 4 * 1024 * 1024;

/** How the relay writes on the link (the link client's, with its write batching). */
export interface SocketOutbox {
  send(link: WebSocket, m: LinkMessage): void;
  frame(link: WebSocket, bytes: Buffer): void;
}

type OpenMessage = Extract<LinkMessage, { t: 'wsopen' }>;

interface Bridged extends InProcessSocket {
  /** Ends the socket on both sides: `wsclose` to the manager, the edge's endpoint cut. */
  end(code: number, reason: string): void;
}

export class BridgedSockets {
  readonly #open = new Map<number, Bridged>();

  constructor(
    private readonly app: FastifyInstance,
    private readonly out: SocketOutbox,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.#open.size;
  }

  /** The manager's `wsopen`: the socket to the edge's own endpoint, `wsup` once it is open. */
  open(link: WebSocket, m: OpenMessage): void {
    const id = m.id;
    const refuse = (code: number, reason: string) =>
      this.out.send(link, { t: 'wsclose', id, code, reason: closeReason(reason) });
    if (this.#open.has(id)) return refuse(1008, 'a bridged socket with this id is open');
    if (this.#open.size >= LINK_SOCKET_MAX_PER_EDGE)
      return refuse(1013, `the edge holds ${LINK_SOCKET_MAX_PER_EDGE} bridged sockets, the most allowed`);
    const protocols = (Array.isArray(m.protocols) ? m.protocols : []).filter((p) =>
      LINK_SOCKET_PROTOCOLS.includes(p),
    );
    if (protocols.length === 0 || typeof m.path !== 'string' || !m.path.startsWith('/'))
      return refuse(1008, 'a bridged socket needs a path and a GraphQL subprotocol');
    const conn: Bridged = {
      ...openInProcessSocket(this.app, {
        path: m.path,
        headers: m.headers && typeof m.headers === 'object' ? m.headers : {},
        protocols,
        actor: parseBridgeActor(m.actor),
        maxPayload: LINK_SOCKET_MAX_MESSAGE,
      }),
      end: (code, reason) => {
        if (this.#open.get(id) !== conn) return;
        this.#open.delete(id);
        refuse(sendableCloseCode(code), reason);
        socket.terminate();
      },
    };
    this.#open.set(id, conn);
    const { socket, end } = conn;
    socket.on('open', () => this.out.send(link, { t: 'wsup', id, protocol: socket.protocol }));
    socket.on('unexpected-response', (_req, res) => {
      res.resume();
      const status = res.statusCode ?? 502;
      // 401 → 4401, 403 → 4403, 404 → 4404...; the edge's 5xx is a server error.
      end(
        status >= 400 && status < 500 ? 4000 + status : 1011,
        `the edge refused the socket: HTTP ${status}`,
      );
    });
    socket.on('message', (data: Buffer, binary: boolean) => {
      if (binary) return end(1003, 'bridged sockets carry text messages only');
      this.out.frame(link, bodyFrame(id, data));
      if (link.bufferedAmount > LINK_HIGH_WATER) this.#wait(link, id, conn);
    });
    // Closed by the endpoint without a code (the edge's app stopping): the endpoint went away.
    socket.on('close', (code: number, reason: Buffer) => end(code === 1005 ? 1001 : code, reason.toString()));
    socket.on('error', (err) => this.log.debug({ err, id }, 'bridged socket error'));
  }

  /** A message from the manager for socket `id`; false when no such socket is open here. */
  frame(id: number, chunk: Buffer): boolean {
    const conn = this.#open.get(id);
    if (!conn) return false;
    const { socket } = conn;
    if (chunk.length > LINK_SOCKET_MAX_MESSAGE) this.#close(id, 1009, 'message too big');
    else if (socket.readyState !== socket.OPEN) this.#close(id, 1008, 'a message before the socket opened');
    else if (socket.bufferedAmount > LINK_SOCKET_MAX_BUFFERED)
      this.#close(id, 1013, 'the edge endpoint reads too slowly');
    else socket.send(chunk, { binary: false });
    return true;
  }

  /** The manager's `wsclose`: the socket is closed with its code (no `wsclose` back). */
  closed(id: number, code: number, reason: string): void {
    const conn = this.#open.get(id);
    if (!conn) return;
    this.#open.delete(id);
    if (conn.socket.readyState === conn.socket.OPEN)
      conn.socket.close(sendableCloseCode(code), closeReason(reason));
    else conn.socket.terminate();
  }

  /** The link ended: every bridged socket with it. */
  closeAll(): void {
    const all = [...this.#open.values()];
    this.#open.clear();
    for (const conn of all) conn.socket.terminate();
  }

  /** Ends socket `id` on both sides (this edge's endpoint and the manager's). */
  #close(id: number, code: number, reason: string): void {
    this.#open.get(id)?.end(code, reason);
  }

  /** Reads socket `id` again once the link drained; closes it if too much waits meanwhile. */
  #wait(link: WebSocket, id: number, conn: Bridged): void {
    conn.socket.pause();
    const check = () => {
      if (this.#open.get(id) !== conn) return;
      if (conn.backlog() > LINK_SOCKET_MAX_BUFFERED) {
        this.#close(id, 1013, 'the link to the manager is too slow for this socket');
        return;
      }
      if (link.bufferedAmount > LINK_HIGH_WATER && link.readyState === link.OPEN) setTimeout(check, 5);
      else conn.socket.resume();
    };
    setTimeout(check, 5);
  }
}
