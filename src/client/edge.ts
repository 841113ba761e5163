/**
 * A typed client of the edge service: OAuth client credentials exchanged for an access token and
 * renewed before it expires (or a given token), REST, GraphQL (`/devicehub/v2` and the other edge
 * endpoints) and the DataHub over NATS.
 *
 * ```ts
 * const edge = new EdgeClient({
 *   url: 'https://localhost:8443',
 *   credentials: { clientId, clientSecret },
 *   insecure: true, // the edge's self-signed certificate; or ca: readFileSync('server.crt')
 * });
 * const { ListDevices } = await edge.graphql('/devicehub/v2', 'query { ListDevices { Total } }');
 * const nc = await edge.nats({ accessKey: 'mwk_...' });
 * ```
 */
import { connect, type ConnectionOptions, type NatsConnection } from 'nats';
import type { ReadyService } from '../kernel/ready.js';
import { AuthenticationError, ConnectionError, GraphqlError, HttpError } from './errors.js';
import { Transport, type ClientResponse, type RequestOptions, type TransportOptions } from './transport.js';

export const EDGE_TOKEN_PATH = '/auth/v3/oauth/token';

/** How the client authenticates. */
export type EdgeCredentials =
  /** An API client: exchanged for access tokens (client credentials grant), renewed before expiry. */
  | { clientId: string; clientSecret: string }
  /** A token used as it is: an access token, a session token or an API token, sent as Bearer. */
  | { bearer: string }
  /** An API token sent as the legacy header token, `Authorization: Basic base64(<token>:)`. */
  | { apiToken: string };

export interface EdgeClientOptions extends TransportOptions {
  /** Base address of the edge, e.g. `https://localhost:8443`. */
  url: string;
  /** None: only open routes (health, version, token) answer. */
  credentials?: EdgeCredentials;
  /** The DataHub's NATS address; default `nats://<host of url>:4222`. */
  natsUrl?: string;
  /**
   * Renew an exchanged token when less than this many milliseconds of it remain. Default: a tenth
   * of its lifetime, at most 60 s.
   */
  renewBeforeMs?: number;
}

export interface NatsOptions {
  /**
   * A DataHub access key (`mwk_...`), sent as the password (user `admin`): needed by clients that
   * are not on the edge's host. Local clients need none.
   */
  accessKey?: string;
  /** Default: the client's `natsUrl`. */
  url?: string;
  /** Any other option of the `nats` client (name, reconnect...). */
  connect?: ConnectionOptions;
}

interface HeldToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  renewAt: number;
}

export class EdgeClient {
  readonly url: string;
  readonly natsUrl: string;
  readonly #transport: Transport;
  readonly #options: EdgeClientOptions;
  #held: HeldToken | undefined;
  #exchanging: Promise<HeldToken> | undefined;
  /** Access tokens obtained from the token endpoint so far (renewals included). */
  exchanges = 0;

  constructor(options: EdgeClientOptions) {
    this.#options = options;
    this.url = options.url.replace(/\/+$/, '');
    this.natsUrl = options.natsUrl ?? `nats://${new URL(this.url).hostname}:4222`;
    this.#transport = new Transport(options);
  }

  /** A client for the edge of a ready line (`millwright-ready {...}`, src/kernel/ready.ts). */
  static fromReady(
    service: ReadyService,
    options: Omit<EdgeClientOptions, 'url' | 'natsUrl'> = {},
  ): EdgeClient {
    return new EdgeClient({
      ...options,
      url: service.url,
      ...(service.natsUrl ? { natsUrl: service.natsUrl } : {}),
    });
  }

  /**
   * The current access token: exchanged on first use, and again when the held one is within its
   * renewal margin (one exchange at a time, however many calls wait for it). With `{ bearer }`
   * credentials, that token.
   */
  async token(): Promise<string> {
    const c = this.#options.credentials;
    if (!c) throw new AuthenticationError(this.url, 0, undefined, { cause: new Error('no credentials') });
    if ('bearer' in c) return c.bearer;
    if ('apiToken' in c) return c.apiToken;
    if (this.#held && Date.now() < this.#held.renewAt) return this.#held.token;
    return (await this.#exchange()).token;
  }

  /** When the held access token expires (epoch ms), or undefined before the first exchange. */
  get tokenExpiresAt(): number | undefined {
    return this.#held?.expiresAt;
  }

  #exchange(): Promise<HeldToken> {
    this.#exchanging ??= this.#doExchange().finally(() => (this.#exchanging = undefined));
    return this.#exchanging;
  }

  async #doExchange(): Promise<HeldToken> {
    const c = this.#options.credentials as { clientId: string; clientSecret: string };
    const url = `${this.url}${EDGE_TOKEN_PATH}`;
    const res = await this.#transport.request('POST', url, {
      form: { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret },
    });
    if (res.status !== 200 || typeof res.body?.access_token !== 'string') {
      throw new AuthenticationError(url, res.status, res.body ?? res.text);
    }
    this.exchanges++;
    const now = Date.now();
    const lifetime = Number(res.body.expires_in ?? 3600) * 1000;
    const margin = this.#options.renewBeforeMs ?? Math.min(60_000, lifetime / 10);
    this.#held = {
      token: res.body.access_token,
      expiresAt: now + lifetime,
      renewAt: now + lifetime - margin,
    };
    return this.#held;
  }

  /** The `Authorization` header value for the credentials, or undefined without credentials. */
  async authorization(): Promise<string | undefined> {
    const c = this.#options.credentials;
    if (!c) return undefined;
    if ('apiToken' in c) return `Basic ${Buffer.from(`${c.apiToken}:`).toString('base64')}`;
    return `Bearer ${await this.token()}`;
  }

  /**
   * Any request, answered whatever its status (nothing is thrown but `ConnectionError` and
   * `AuthenticationError`). The credentials' `Authorization` is added unless `auth: false` or
   * `headers.authorization` is given. An exchanged token refused with 401 is exchanged again
   * once and the request repeated (the edge may have been restarted with a new signing key).
   */
  async request(
    method: string,
    path: string,
    options: RequestOptions & { auth?: boolean } = {},
  ): Promise<ClientResponse> {
    const url = `${this.url}${path}`;
    const given =
      options.headers && Object.keys(options.headers).some((h) => h.toLowerCase() === 'authorization');
    const useAuth = options.auth !== false && !given;
    const send = async () => {
      const authorization = useAuth ? await this.authorization() : undefined;
      return this.#transport.request(method, url, {
        ...options,
        headers: { ...options.headers, ...(authorization ? { authorization } : {}) },
      });
    };
    let res = await send();
    const c = this.#options.credentials;
    if (res.status === 401 && useAuth && c && 'clientId' in c) {
      this.#held = undefined;
      res = await send();
    }
    return res;
  }

  /**
   * A REST call: `body` is sent as JSON; answers the parsed JSON body (undefined for 204).
   * Throws `HttpError` when the status is not 2xx.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the default of an ad-hoc call (tests, scripts); a caller that knows the answer's shape passes T
  async rest<T = any>(
    method: string,
    path: string,
    body?: unknown,
    options: Omit<RequestOptions, 'json'> = {},
  ): Promise<T> {
    const res = await this.request(method, path, {
      ...options,
      ...(body !== undefined ? { json: body } : {}),
    });
    if (res.status < 200 || res.status > 299) {
      throw new HttpError(method, `${this.url}${path}`, res.status, res.body, res.text);
    }
    return res.body as T;
  }

  /** A GraphQL request answered whatever its status and errors. */
  graphqlRaw(
    path: string,
    query: string,
    variables?: Record<string, unknown>,
    options: { operationName?: string; headers?: Record<string, string> } = {},
  ): Promise<ClientResponse> {
    return this.request('POST', path, {
      ...(options.headers ? { headers: options.headers } : {}),
      json: {
        query,
        ...(variables ? { variables } : {}),
        ...(options.operationName ? { operationName: options.operationName } : {}),
      },
    });
  }

  /**
   * Runs a GraphQL document at `path` (e.g. `/devicehub/v2`) and answers its `data`. Throws
   * `GraphqlError` when the answer has errors or is not a GraphQL answer.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the default of an ad-hoc call (tests, scripts); a caller that knows the answer's shape passes T
  async graphql<T = any>(
    path: string,
    query: string,
    variables?: Record<string, unknown>,
    options: { operationName?: string } = {},
  ): Promise<T> {
    const res = await this.graphqlRaw(path, query, variables, options);
    return graphqlData<T>(`${this.url}${path}`, res);
  }

  /**
   * Connects to the DataHub with the `nats` client. With `ca` or `insecure`, TLS is used when the
   * DataHub offers it (remote clients must use it); a DataHub that trusts local clients offers
   * none to them, and the connection stays in plain text.
   */
  async nats(options: NatsOptions = {}): Promise<NatsConnection> {
    const url = options.url ?? this.natsUrl;
    const tls = this.#options.ca
      ? { ca: this.#options.ca.toString() }
      : this.#options.insecure
        ? { rejectUnauthorized: false }
        : undefined;
    const attempt = (withTls: boolean) =>
      connect({
        servers: url,
        ...(options.accessKey ? { user: 'admin', pass: options.accessKey } : {}),
        ...(withTls && tls ? { tls: tls as ConnectionOptions['tls'] } : {}),
        ...options.connect,
      });
    try {
      try {
        return await attempt(true);
      } catch (err) {
        // A DataHub that trusts local clients offers no TLS to them: connect in plain text.
        if (tls && (err as { code?: string }).code === 'SERVER_OPT_NA') return await attempt(false);
        throw err;
      }
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'AUTHORIZATION_VIOLATION') {
        throw new AuthenticationError(url, 0, undefined, { cause: err, detail: (err as Error).message });
      }
      throw new ConnectionError(url, err);
    }
  }

  /** Closes kept-alive HTTP connections (NATS connections are closed by their owner). */
  close(): void {
    this.#transport.close();
  }
}

/** The `data` of a GraphQL answer, or a `GraphqlError`. */
export function graphqlData<T>(url: string, res: ClientResponse): T {
  const body = res.body as { data?: unknown; errors?: unknown } | undefined;
  if (res.status === 200 && body && body.data !== undefined && body.data !== null && !body.errors) {
    return body.data as T;
  }
  const errors = Array.isArray(body?.errors)
    ? (body.errors as GraphqlError['errors'])
    : [
        {
          message:
            (body as { message?: string } | undefined)?.message ?? (res.text.slice(0, 300) || 'no data'),
          extensions: { code: (body as { code?: string } | undefined)?.code ?? `http_${res.status}` },
        },
      ];
  throw new GraphqlError(url, res.status, errors, body?.data);
}
