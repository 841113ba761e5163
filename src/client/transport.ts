/**
 * The HTTP(S) transport the clients share: node's own `http`/`https` with a keep-alive agent, so
 * that the clients need no dependency. Certificates are verified unless the caller gives the CA
 * (`ca`) or asks to accept any certificate (`insecure: true`, as the product family's clients do
 * with an edge's self-signed certificate).
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { ConnectionError } from './errors.js';
import { parseJsonBody, type ClientResponse, type HttpTransport, type RequestOptions } from './http.js';

export interface TlsOptions {
  /** CA certificate(s) to trust, PEM (e.g. the edge's `<data-dir>/tls/server.crt`). */
  ca?: string | Buffer;
  /** Accept any certificate (self-signed, wrong name). Off unless asked for. */
  insecure?: boolean;
}

export interface TransportOptions extends TlsOptions {
  /** Milliseconds before a request without an answer is abandoned; default 30,000. */
  timeoutMs?: number;
}

export type { ClientResponse, RequestOptions } from './http.js';

/** The largest answer whose buffer is made at its announced length, before its bytes arrive. */
const PREALLOCATE_MAX = 128 * 1024 * 1024;

/**
 * An answer's bytes as they arrive. With a `content-length` (up to `PREALLOCATE_MAX`), each chunk
 * is copied into one buffer of that length as it comes, while the rest is still on its way: no
 * concatenation of the chunks at the end (for a 27 MB export, a pass over fresh memory after the
 * last byte). Without one, or past it, the chunks are kept and concatenated.
 */
class BodyBuffer {
  #sized: Buffer | undefined;
  #at = 0;
  readonly #chunks: Buffer[] = [];

  constructor(contentLength: string | undefined) {
    const length = Number(contentLength);
    if (Number.isSafeInteger(length) && length > 0 && length <= PREALLOCATE_MAX)
      this.#sized = Buffer.allocUnsafe(length);
  }

  add(chunk: Buffer): void {
    const sized = this.#sized;
    if (sized && this.#at + chunk.length <= sized.length) {
      this.#at += chunk.copy(sized, this.#at);
      return;
    }
    if (sized) {
      // More than announced: what came so far, then the chunks.
      this.#chunks.push(sized.subarray(0, this.#at));
      this.#sized = undefined;
    }
    this.#chunks.push(chunk);
  }

  /** Every byte received, in order. */
  bytes(): Buffer {
    return this.#sized ? this.#sized.subarray(0, this.#at) : Buffer.concat(this.#chunks);
  }
}

/** A request that failed on a kept-alive connection the server had closed (sent again once). */
class StaleSocketError extends Error {}

/** The node implementation of `HttpTransport`: http/https with keep-alive agents. */
export class Transport implements HttpTransport {
  readonly #https: HttpsAgent;
  readonly #http = new HttpAgent({ keepAlive: true });
  readonly #timeoutMs: number;

  constructor(options: TransportOptions = {}) {
    this.#https = new HttpsAgent({
      keepAlive: true,
      ...(options.ca ? { ca: options.ca } : {}),
      rejectUnauthorized: !options.insecure,
    });
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async request(method: string, url: string, options: RequestOptions = {}): Promise<ClientResponse> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | Uint8Array | undefined = options.body;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    } else if (options.formData) {
      // The platform's own multipart encoder: a Response over the form gives bytes and boundary.
      const encoded = new Response(options.formData);
      headers['content-type'] = encoded.headers.get('content-type')!;
      body = Buffer.from(await encoded.arrayBuffer());
    }
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const target = new URL(url);
    try {
      return await this.#send(method, target, headers, body);
    } catch (err) {
      // A kept-alive connection the server closed as idle just as this request went out on it
      // (the race of every keep-alive client): nothing reached the server, send it again once on
      // a new connection.
      if (err instanceof StaleSocketError) {
        // Its idle companions are as old: drop them, so that the second try opens a connection.
        const agent = target.protocol === 'https:' ? this.#https : this.#http;
        for (const list of Object.values(agent.freeSockets))
          for (const socket of list ?? []) socket.destroy();
        return this.#send(method, target, headers, body, true);
      }
      throw err;
    }
  }

  #send(
    method: string,
    target: URL,
    headers: Record<string, string>,
    body: string | Uint8Array | undefined,
    fresh = false,
  ): Promise<ClientResponse> {
    const url = target.href;
    const secure = target.protocol === 'https:';
    return new Promise<ClientResponse>((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(
        target,
        { method, headers, agent: secure ? this.#https : this.#http, timeout: this.#timeoutMs },
        (res) => {
          const body = new BodyBuffer(res.headers['content-length']);
          res.on('data', (c: Buffer) => body.add(c));
          res.on('error', (err) => reject(new ConnectionError(url, err)));
          res.on('end', () => {
            const text = body.bytes().toString('utf8');
            const parsed = parseJsonBody(text, String(res.headers['content-type'] ?? 'json'));
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed, text });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.#timeoutMs} ms`)));
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (!fresh && req.reusedSocket && err.code === 'ECONNRESET') reject(new StaleSocketError());
        else reject(new ConnectionError(url, err));
      });
      req.end(body);
    });
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.#https.destroy();
    this.#http.destroy();
  }
}
