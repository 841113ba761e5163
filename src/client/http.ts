/**
 * What every transport of the clients answers and takes, with no Node.js module behind it, so that
 * the browser consoles use the same typed clients as the CLI: `Transport` (transport.ts, node's
 * http/https) and `FetchTransport` (fetch-transport.ts, `fetch` with the session cookie).
 */
import type { IncomingHttpHeaders } from 'node:http';

/** One answer, whatever its status. `body` is the parsed JSON, or undefined when it is not JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the parsed JSON of any answer; a caller that knows its shape passes T
export interface ClientResponse<T = any> {
  status: number;
  /** Header names in lower case (`set-cookie` as a list), as node gives them. */
  headers: IncomingHttpHeaders;
  body: T;
  text: string;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** A JSON body (sets `content-type: application/json`). */
  json?: unknown;
  /** A form body (`application/x-www-form-urlencoded`). */
  form?: Record<string, string>;
  /** A `FormData` body (multipart, e.g. GraphQL multipart upload). */
  formData?: FormData;
  /** Raw bytes; give `content-type` in `headers`. */
  body?: string | Uint8Array;
}

/** Sends one request and answers whatever status comes back; throws only `ConnectionError`. */
export interface HttpTransport {
  request(method: string, url: string, options?: RequestOptions): Promise<ClientResponse>;
  /** Releases kept-alive connections (nothing to do for `fetch`). */
  close(): void;
}

/** The JSON of a body, or undefined when the body is empty or not JSON. */
export function parseJsonBody(text: string, contentType: string | undefined): unknown {
  if (!text || !/json/.test(contentType ?? 'json')) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
