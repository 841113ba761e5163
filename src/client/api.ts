/**
 * The edge's typed API without any Node.js module: credentials (OAuth client credentials exchanged
 * for an access token and renewed, a given token, or none: the browser's session cookie), REST and
 * GraphQL over any `HttpTransport`. `EdgeClient` (edge.ts) adds node's transport and the DataHub
 * over NATS; the browser console uses this class with `FetchTransport`:
 *
 * ```ts
 * const api = new EdgeApi({ url: location.origin, transport: new FetchTransport() });
 * const { ListDevices } = await api.graphql('/devicehub/v2', 'query { ListDevices { Total } }');
 * ```
 */
import { AuthenticationError, GraphqlError, HttpError } from './errors.js';
import type { ClientResponse, HttpTransport, RequestOptions } from './http.js';

export const EDGE_TOKEN_PATH = '/auth/v3/oauth/token';

/** How the client authenticates. */
export type EdgeCredentials =
  /** An API client: exchanged for access tokens (client credentials grant), renewed before expiry. */
  | { clientId: string; clientSecret: string }
  /** A token used as it is: an access token, a session token or an API token, sent as Bearer. */
  | { bearer: string }
  /** An API token sent as the legacy header token, `Authorization: Basic base64(<token>:)`. */
  | { apiToken: string };

export interface EdgeApiOptions {
  /** Base address of the edge, e.g. `https://localhost:8443` (`''`: the page's own origin). */
  url: string;
  /** None: only open routes answer, or the browser's session cookie authenticates. */
  credentials?: EdgeCredentials;
  /**
   * Renew an exchanged token when less than this many milliseconds of it remain. Default: a tenth
   * of its lifetime, at most 60 s.
   */
  renewBeforeMs?: number;
  /** How requests are sent: node's `Transport` or the browser's `FetchTransport`. */
  transport: HttpTransport;
}

interface HeldToken {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  renewAt: number;
}

export class EdgeApi {
  readonly url: string;
  readonly #transport: HttpTransport;
  readonly #options: EdgeApiOptions;
  #held: HeldToken | undefined;
  #exchanging: Promise<HeldToken> | undefined;
  /** Access tokens obtained from the token endpoint so far (renewals included). */
  exchanges = 0;

  constructor(options: EdgeApiOptions) {
    this.#options = options;
    this.url = options.url.replace(/\/+$/, '');
    this.#transport = options.transport;
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
    if ('apiToken' in c) return `Basic ${btoa(`${c.apiToken}:`)}`;
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
