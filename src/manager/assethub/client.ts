/**
 * The asset hub on the wire: another manager's marketplace catalogue (`/mpcs/v1/...`) over HTTPS,
 * with `Authorization: <API token>` (contract part 5), the hub's certificate checked against the
 * system's CAs or the configured `caCertificate` (a self-signed manager's own certificate). Each
 * call is bounded in time and in the size of the answer.
 */
import { request } from 'node:https';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';

/** The largest answer read from the hub (an item version's content and its envelope). */
export const HUB_MAX_ANSWER_BYTES = 32 * 1024 * 1024;

export interface HubConnection {
  url: string;
  token: string;
  caCertificate: string | null;
}

export interface HubAnswer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the hub's JSON, read field by field by the caller
  body: any;
}

/** The hub's base URL, checked: https, no credentials, no query; trailing slashes dropped. */
export function hubUrlOf(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest(`url "${raw}" is not a URL (e.g. https://hub.example.com:8444)`);
  }
  if (u.protocol !== 'https:') throw badRequest('url must be https:// (the token travels with every call)');
  if (u.username || u.password) throw badRequest('url must not carry credentials; send the token in token');
  if (u.search || u.hash) throw badRequest('url must not have a query or a fragment');
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

export class HubClient {
  constructor(
    readonly connection: HubConnection,
    readonly timeoutMs: number,
  ) {}

  /** One call; answers any HTTP status, throws `asset_hub_error` (502) when the hub cannot be reached. */
  call(method: string, path: string, json?: unknown): Promise<HubAnswer> {
    const url = new URL(`${this.connection.url}${path}`);
    const body = json === undefined ? undefined : Buffer.from(JSON.stringify(json));
    return new Promise<HubAnswer>((resolve, reject) => {
      const fail = (why: string, cause?: unknown) =>
        reject(
          new AppError(ERRORS.assetHubError, `the asset hub ${this.connection.url} ${why}`, {
            ...(cause === undefined ? {} : { cause }),
          }),
        );
      const req = request(
        url,
        {
          method,
          headers: {
            authorization: this.connection.token,
            accept: 'application/json',
            'user-agent': 'millwright-manager',
            ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}),
          },
          ...(this.connection.caCertificate ? { ca: this.connection.caCertificate } : {}),
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > HUB_MAX_ANSWER_BYTES) {
              req.destroy();
              fail(`answered more than ${HUB_MAX_ANSWER_BYTES} bytes`);
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text === '' ? null : JSON.parse(text);
            } catch {
              // not JSON: kept as text
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
          res.on('error', (err) => fail(`failed while answering: ${err.message}`, err));
        },
      );
      req.on('timeout', () => {
        req.destroy();
        fail(`did not answer within ${this.timeoutMs} ms`);
      });
      req.on('error', (err) => fail(`could not be reached: ${err.message}`, err));
      req.end(body);
    });
  }

  /** A JSON GET that must answer 2xx: the hub's 4xx passed on (404 stays 404), anything else 502. */
  async get(path: string, what: string): Promise<HubAnswer['body']> {
    const r = await this.call('GET', path);
    if (r.status >= 200 && r.status < 300) return r.body;
    throw hubError(what, r);
  }
}

/** The hub's error answer as the manager's: a 404 stays 404; 401/403 and the rest are 502. */
export function hubError(what: string, r: HubAnswer): AppError {
  const message =
    r.body && typeof r.body === 'object' && typeof r.body.message === 'string'
      ? r.body.message
      : `status ${r.status}`;
  const text = `${what}: the asset hub answered ${r.status}: ${message}`;
  if (r.status === 404) return new AppError(ERRORS.notFound, text);
  if (r.status === 400) return new AppError(ERRORS.badRequest, text);
  return new AppError(ERRORS.assetHubError, text, { details: { hubStatus: r.status } });
}
