/**
 * A transport over `fetch`, for the browser consoles: the edge's session cookie (`jwtAccess`,
 * HttpOnly) goes with every same-origin request, and every request that is not a GET or HEAD
 * echoes the `csrfToken` cookie in an `X-CSRF-Token` header (the edge refuses a cookie-
 * authenticated mutation without it). Nothing is kept but what the browser keeps.
 */
import { ConnectionError } from './errors.js';
import { parseJsonBody, type ClientResponse, type HttpTransport, type RequestOptions } from './http.js';

export interface FetchTransportOptions {
  /** Answers the CSRF token to send; default: the `csrfToken` cookie of `document.cookie`. */
  csrfToken?: () => string | undefined;
  /** Milliseconds before a request is abandoned; default 30,000. */
  timeoutMs?: number;
}

/** The value of cookie `name` in `document.cookie`, when there is a document. */
export function readCookie(name: string): string | undefined {
  const jar = (globalThis as { document?: { cookie?: string } }).document?.cookie ?? '';
  for (const part of jar.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

export class FetchTransport implements HttpTransport {
  readonly #csrf: () => string | undefined;
  readonly #timeoutMs: number;

  constructor(options: FetchTransportOptions = {}) {
    this.#csrf = options.csrfToken ?? (() => readCookie('csrfToken'));
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async request(method: string, url: string, options: RequestOptions = {}): Promise<ClientResponse> {
    const headers: Record<string, string> = { ...options.headers };
    let body: BodyInit | undefined = options.body as BodyInit | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form) {
      body = new URLSearchParams(options.form);
    } else if (options.formData) {
      body = options.formData;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      const token = this.#csrf();
      if (token) headers['x-csrf-token'] = token;
    }
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        credentials: 'same-origin',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new ConnectionError(url, err);
    }
    const text = await res.text();
    const out: Record<string, string> = {};
    res.headers.forEach((v, k) => (out[k] = v));
    return {
      status: res.status,
      headers: out,
      body: parseJsonBody(text, res.headers.get('content-type') ?? undefined),
      text,
    };
  }

  close(): void {
    /* fetch keeps nothing open that the browser does not manage */
  }
}
