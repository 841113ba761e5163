/**
 * A WebSocket to a Fastify app's own routes without its listener: the manager's bridge opens the
 * edge's GraphQL subscription endpoints this way for a browser on the manager (see
 * src/kernel/link/protocol.ts, `wsopen`). The app's Node server is handed one end of an in-process
 * connection (as Node documents for injecting connections), and a `ws` client speaks over the
 * other end: the upgrade goes through the app's routing and every hook (authentication included),
 * exactly as one that came over the network, and the app's socket checks apply to its messages.
 *
 * The caller's bridge actor rides on the connection object (`kActor`, read by `bridgeActorOf`), never
 * in a header. The connection's address is 127.0.0.1, as for a bridged request.
 */
import { Duplex } from 'node:stream';
import { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import WebSocket from 'ws';
import type { BridgeActor } from '../link/protocol.js';
import { kActor } from './in-process.js';

/** One end of an in-process connection: what Node's HTTP server and `ws` use of a socket. */
class PipeEnd extends Duplex {
  peer: PipeEnd | null = null;
  readonly remoteAddress = '127.0.0.1';
  readonly remotePort = 0;
  readonly remoteFamily = 'IPv4';
  readonly encrypted = false;
  [kActor]?: BridgeActor;
  /** The other end's write waiting for this end to be read (back-pressure). */
  waiting: (() => void) | null = null;

  override _read(): void {
    // Data arrives by `push` from the other end; reading lets its next write through.
    const next = this.waiting;
    this.waiting = null;
    next?.();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    const peer = this.peer;
    if (!peer || peer.destroyed) return done();
    if (peer.push(chunk)) done();
    else peer.waiting = () => done();
  }

  override _final(done: () => void): void {
    this.peer?.push(null);
    done();
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    if (this.peer && !this.peer.destroyed) this.peer.destroy();
    done(err);
  }

  setTimeout(): this {
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }
}

export interface InProcessSocketRequest {
  /** Path and query on the app, e.g. `/devicehub/v2`. */
  path: string;
  /** Headers of the upgrade request (credentials included). */
  headers: Record<string, string | string[]>;
  /** The subprotocols offered. */
  protocols: string[];
  /** The bridged caller; the app's authentication reads it with `bridgeActorOf`. */
  actor?: BridgeActor;
  /** Largest message the client side takes (a bigger one closes the socket, 1009). */
  maxPayload: number;
}

export interface InProcessSocket {
  /**
   * The client socket, still connecting. Listen to `open`, `unexpected-response` (the app refused
   * the upgrade over HTTP), `message`, `close` and `error`.
   */
  socket: WebSocket;
  /** Bytes the app's side has written that the client side has not read yet (it is paused). */
  backlog(): number;
}

/** A `ws` client socket to `request.path` on `app`, over an in-process connection. */
export function openInProcessSocket(app: FastifyInstance, request: InProcessSocketRequest): InProcessSocket {
  const server = new PipeEnd();
  const client = new PipeEnd();
  server.peer = client;
  client.peer = server;
  if (request.actor) server[kActor] = request.actor;
  // An HTTPS server's HTTP side listens to `secureConnection` (the TLS layer is not needed here).
  app.server.emit(app.server instanceof TlsServer ? 'secureConnection' : 'connection', server);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(request.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  const socket = new WebSocket(`ws://in-process${request.path}`, request.protocols, {
    createConnection: (() => client) as unknown as WebSocket.ClientOptions['createConnection'],
    headers,
    maxPayload: request.maxPayload,
    perMessageDeflate: false,
    handshakeTimeout: 15_000,
  });
  return { socket, backlog: () => server.writableLength + client.readableLength };
}
