/**
 * In-process dispatch: one HTTP exchange handed to a Fastify app without a socket, for requests
 * that arrive by another way than the app's own listener (the edge link's bridged calls).
 *
 * `inject` (light-my-request) is built for tests: it copies every header twice, runs a full
 * `http.ServerResponse` over a null socket (header text, chunked framing, a `setImmediate` per
 * write), then gathers the payload and re-parses the headers. On the edge that cost more than a
 * whole request over TLS. Here the request is a `Readable` fed by the caller and the response a
 * `Writable` whose status, headers and body go straight to a `ResponseSink`: a buffered answer
 * (Fastify's usual `writeHead` + `end(payload)`) arrives as one call with the whole body, a
 * streamed one as `head`, `chunk`s and `end`.
 *
 * The objects carry what Fastify and its plugins use of `IncomingMessage`/`ServerResponse`
 * (method, url, headers, socket address, `aborted`; status, header methods, `headersSent`,
 * `writeHead`, `write`/`end`, `destroy`, `finish`/`close`/`drain` events).
 */
import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http';
import { Readable, Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { BridgeActor } from '../link/protocol.js';

export type ExchangeHeaders = Record<string, string | string[]>;

/** Where the answer goes. Exactly one of `whole`, `end` or `fail` ends an exchange. */
export interface ResponseSink {
  /** The whole answer at once (nothing written before `end(payload)`). */
  whole(status: number, headers: ExchangeHeaders, body: Buffer): void;
  /** Status and headers of a streamed answer; `chunk`s and `end` (or `fail`) follow. */
  head(status: number, headers: ExchangeHeaders): void;
  /** A body slice; `done` once it may be followed (back-pressure). */
  chunk(bytes: Buffer, done: (err?: Error | null) => void): void;
  end(): void;
  /** The app destroyed the response (before or after `head`). */
  fail(err: Error): void;
}

export interface InProcessRequest {
  method: string;
  /** Path and query, as on the request line. */
  url: string;
  headers: ExchangeHeaders;
  /** Whether a body follows (fed with `Exchange.push`, ended with `Exchange.push(null)`). */
  body: boolean;
  remoteAddress?: string;
  /** A bridged call's actor: read by the service's authentication (`bridgeActorOf`). */
  actor?: BridgeActor;
}

/** Where a bridged call's actor is kept: on the request object, or on an in-process socket. */
export const kActor = Symbol('millwright.bridgeActor');

/**
 * The actor of a request dispatched in process for the manager's bridge (or of a WebSocket
 * upgrade over an in-process connection, `in-process-socket.ts`); undefined for any other request
 * (it is a property of the request or socket object, never a header: a client of the service's
 * own listener cannot set it).
 */
export function bridgeActorOf(raw: object): BridgeActor | undefined {
  const r = raw as { [kActor]?: BridgeActor; socket?: { [kActor]?: BridgeActor } };
  return r[kActor] ?? r.socket?.[kActor];
}

/** A socket stand-in: the address Fastify reads and the events it may listen to. */
class NoSocket extends EventEmitter {
  readonly encrypted = false;
  readonly remotePort = 0;
  readonly remoteFamily = 'IPv4';
  readonly destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  setTimeout(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  destroy(): this {
    return this;
  }
}

const LOCAL_SOCKET = new NoSocket('127.0.0.1');

class ExchangeRequest extends Readable {
  readonly httpVersion = '1.1';
  readonly httpVersionMajor = 1;
  readonly httpVersionMinor = 1;
  aborted = false;
  complete = false;
  readonly method: string;
  url: string;
  readonly headers: Record<string, string | string[]>;
  readonly socket: NoSocket;
  readonly [kActor]: BridgeActor | undefined;
  #wants: (() => void) | null = null;
  /** No body follows: the first read ends the stream (nothing is done unless the app reads). */
  readonly #bodiless: boolean;

  constructor(r: InProcessRequest) {
    super({ highWaterMark: 1024 * 1024, autoDestroy: false });
    this.method = r.method.toUpperCase();
    this.url = r.url;
    this.headers = requestHeaders(r.headers, r.body);
    this.socket =
      r.remoteAddress === undefined || r.remoteAddress === '127.0.0.1'
        ? LOCAL_SOCKET
        : new NoSocket(r.remoteAddress);
    this[kActor] = r.actor;
    this.#bodiless = !r.body;
    if (this.#bodiless) this.complete = true;
  }

  get connection(): NoSocket {
    return this.socket;
  }

  get rawHeaders(): string[] {
    const raw: string[] = [];
    for (const [k, v] of Object.entries(this.headers)) {
      if (Array.isArray(v)) for (const x of v) raw.push(k, x);
      else raw.push(k, v);
    }
    return raw;
  }

  /** Calls `resume` once the app read what was pushed (after a push answered false). */
  whenRead(resume: () => void): void {
    this.#wants = resume;
  }

  override _read(): void {
    if (this.#bodiless) {
      this.push(null);
      return;
    }
    const w = this.#wants;
    this.#wants = null;
    w?.();
  }
}

class ExchangeResponse extends Writable {
  statusCode = 200;
  statusMessage = '';
  sendDate = false;
  #headers: Record<string, string | string[]> = Object.create(null);
  #headersSent = false;
  #sink: ResponseSink;
  #done = false;
  readonly req: ExchangeRequest;

  constructor(req: ExchangeRequest, sink: ResponseSink) {
    super({ highWaterMark: 64 * 1024, decodeStrings: true });
    this.req = req;
    this.#sink = sink;
  }

  get socket(): NoSocket {
    return this.req.socket;
  }

  get connection(): NoSocket {
    return this.req.socket;
  }

  get headersSent(): boolean {
    return this.#headersSent;
  }

  get finished(): boolean {
    return this.writableEnded;
  }

  setHeader(name: string, value: number | string | readonly string[]): this {
    this.#headers[name.toLowerCase()] = headerValue(value);
    return this;
  }

  appendHeader(name: string, value: string | readonly string[]): this {
    const key = name.toLowerCase();
    const prev = this.#headers[key];
    const add = headerValue(value);
    this.#headers[key] =
      prev === undefined
        ? add
        : [...(Array.isArray(prev) ? prev : [prev]), ...(Array.isArray(add) ? add : [add])];
    return this;
  }

  getHeader(name: string): string | string[] | undefined {
    return this.#headers[name.toLowerCase()];
  }

  getHeaders(): Record<string, string | string[]> {
    return { ...this.#headers };
  }

  getHeaderNames(): string[] {
    return Object.keys(this.#headers);
  }

  hasHeader(name: string): boolean {
    return this.#headers[name.toLowerCase()] !== undefined;
  }

  removeHeader(name: string): void {
    delete this.#headers[name.toLowerCase()];
  }

  writeHead(status: number, message?: string | OutgoingHttpHeaders, headers?: OutgoingHttpHeaders): this {
    this.statusCode = status;
    const h = typeof message === 'object' ? message : headers;
    if (typeof message === 'string') this.statusMessage = message;
    if (h) {
      for (const k of Object.keys(h)) {
        const v = h[k];
        if (v !== undefined) this.#headers[k.toLowerCase()] = headerValue(v);
      }
    }
    return this;
  }

  flushHeaders(): void {
    this.#sendHead();
  }

  writeEarlyHints(): void {}

  addTrailers(): void {}

  /** Fastify ends a buffered answer with `end(payload)`: that is the whole body, sent as one. */
  override end(chunk?: unknown, encoding?: unknown, cb?: unknown): this {
    if (
      !this.#headersSent &&
      !this.#done &&
      this.writableLength === 0 &&
      chunk !== undefined &&
      chunk !== null &&
      typeof chunk !== 'function'
    ) {
      const body =
        typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
          : Buffer.isBuffer(chunk)
            ? chunk
            : Buffer.from(chunk as Uint8Array);
      this.#headersSent = true;
      this.#done = true;
      this.#sink.whole(this.statusCode, this.#headers, body);
      return super.end(typeof encoding === 'function' ? encoding : (cb as (() => void) | undefined));
    }
    return super.end(chunk as never, encoding as never, cb as never);
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.#sendHead();
    if (this.#done || chunk.length === 0) return done();
    this.#sink.chunk(chunk, done);
  }

  override _final(done: (err?: Error | null) => void): void {
    if (!this.#done) {
      if (!this.#headersSent) {
        // No body at all (HEAD, 204, an empty answer): one message.
        this.#headersSent = true;
        this.#done = true;
        this.#sink.whole(this.statusCode, this.#headers, EMPTY);
      } else {
        this.#done = true;
        this.#sink.end();
      }
    }
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    if (!this.#done) {
      this.#done = true;
      this.#sink.fail(err ?? new Error('the response was closed before it ended'));
    }
    done(null);
  }

  /** Nothing reaches the sink after this; false when the answer had already ended. */
  detach(): boolean {
    if (this.#done) return false;
    this.#done = true;
    return true;
  }

  #sendHead(): void {
    if (this.#done || this.#headersSent) return;
    this.#headersSent = true;
    this.#sink.head(this.statusCode, this.#headers);
  }
}

const EMPTY = Buffer.alloc(0);

/** One exchange in flight: feed its body, or abort it. */
export interface Exchange {
  /** Feeds the request body (null ends it); false: wait for `whenRead`. */
  push(chunk: Buffer | null): boolean;
  /** Calls `resume` once the app read the body pushed so far. */
  whenRead(resume: () => void): void;
  /** The caller went away: the request reads as aborted, the answer is dropped. */
  abort(): void;
}

/** Hands one request to `app` (which must be ready); the answer goes to `sink`. */
export function dispatch(app: FastifyInstance, request: InProcessRequest, sink: ResponseSink): Exchange {
  const exchange = new InProcessExchange(request, sink);
  app.routing(exchange.req as never, exchange.res as never);
  return exchange;
}

class InProcessExchange implements Exchange {
  readonly req: ExchangeRequest;
  readonly res: ExchangeResponse;

  constructor(request: InProcessRequest, sink: ResponseSink) {
    this.req = new ExchangeRequest(request);
    this.res = new ExchangeResponse(this.req, sink);
  }

  push(chunk: Buffer | null): boolean {
    if (chunk === null) this.req.complete = true;
    return this.req.push(chunk);
  }

  whenRead(resume: () => void): void {
    this.req.whenRead(resume);
  }

  abort(): void {
    if (!this.res.detach()) return;
    this.req.aborted = true;
    this.req.destroy();
    this.res.destroy();
  }
}

function headerValue(v: number | string | readonly string[]): string | string[] {
  return Array.isArray(v) ? v.map(String) : String(v);
}

/**
 * The request's headers as Node's HTTP parser gives them: lower-case names, repeated ones joined
 * (`cookie` with `; `, `set-cookie` kept as a list), `host` present, and a body without a length
 * announced as chunked (so Fastify reads it).
 */
function requestHeaders(headers: ExchangeHeaders, body: boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const k of Object.keys(headers)) {
    const v = headers[k]!;
    const key = k.toLowerCase();
    if (!Array.isArray(v)) out[key] = v;
    else if (key === 'set-cookie') out[key] = v.map(String);
    else out[key] = v.join(key === 'cookie' ? '; ' : ', ');
  }
  out.host ??= 'localhost';
  if (body && out['content-length'] === undefined) out['transfer-encoding'] = 'chunked';
  return out;
}
