/**
 * The HTTP(S) transport (undici): the webhook and the data-ingest providers. A batch is POSTed as
 * a JSON array `[{ subject, topic, ts, id, payload }]` (payload: the DataHub value as published)
 * to the URL; a 2xx answer acknowledges it. Anything else, a timeout or a network error, fails
 * the batch: the instance goes Disconnected with the reason and retries after reconnectInterval,
 * the batch still queued. `connect` checks that the server answers (a HEAD of the URL, any status).
 */
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici';
import type { Connector, ConnectorContext, OutMessage } from './types.js';

/** The provider's properties this connector reads (checked against the catalogue before). */
interface HttpConfig {
  url?: string;
  caCert?: string;
  rejectUnauthorized?: boolean;
  proxy?: string;
  proxyValue?: string;
  timeout?: number;
  headers?: Record<string, string>;
  token?: string;
}

export class HttpConnector implements Connector {
  readonly separator = '.' as const;
  readonly pipelined = false;
  readonly #ctx: ConnectorContext;
  #dispatcher: Dispatcher | undefined;

  constructor(ctx: ConnectorContext) {
    this.#ctx = ctx;
  }

  get #c(): HttpConfig {
    return this.#ctx.config as HttpConfig;
  }

  async connect(): Promise<void> {
    const c = this.#c;
    const ca = c.caCert ?? this.#ctx.trustedCa?.();
    const connect = {
      ...(ca ? { ca } : {}),
      rejectUnauthorized: c.rejectUnauthorized !== false,
    };
    this.#dispatcher =
      c.proxy === 'http' && c.proxyValue
        ? new ProxyAgent({ uri: String(c.proxyValue), requestTls: connect })
        : new Agent({ connect, keepAliveTimeout: 10_000 });
    const res = await request(String(c.url), {
      method: 'HEAD',
      dispatcher: this.#dispatcher,
      headersTimeout: Number(c.timeout ?? 10_000),
      bodyTimeout: Number(c.timeout ?? 10_000),
    });
    await res.body.dump();
  }

  async send(batch: OutMessage[]): Promise<void> {
    const c = this.#c;
    const dispatcher = this.#dispatcher;
    if (!dispatcher) throw new Error('not connected');
    let body = '[';
    for (let i = 0; i < batch.length; i++) {
      const m = batch[i]!;
      body += `${i ? ',' : ''}{"id":${JSON.stringify(`${this.#ctx.instanceId}:${m.seq}`)},"subject":${JSON.stringify(m.subject)},"topic":${JSON.stringify(m.topic)},"ts":${m.ts},"payload":${payloadJson(m.payload)}}`;
    }
    body += ']';
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(c.headers ?? {}) };
    if (c.token) headers.authorization = `Bearer ${c.token}`;
    const res = await request(String(c.url), {
      method: 'POST',
      body,
      headers,
      dispatcher,
      headersTimeout: Number(c.timeout ?? 10_000),
      bodyTimeout: Number(c.timeout ?? 10_000),
    });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new Error(`the server answered HTTP ${res.statusCode} to a batch of ${batch.length}`);
    }
  }

  async close(): Promise<void> {
    const d = this.#dispatcher;
    this.#dispatcher = undefined;
    await d?.close().catch(() => undefined);
  }
}

/** The payload as JSON text: itself when it is JSON, else a JSON string of it. */
export function payloadJson(payload: Buffer): string {
  const text = payload.toString('utf8');
  try {
    JSON.parse(text);
    return text;
  } catch {
    return JSON.stringify(text);
  }
}
