/**
 * A typed client of the unified namespace service: the OAuth password grant (client `ide-ui`),
 * GraphQL at `/mqtt/gql`, and MQTT connections with the `mqtt` client.
 *
 * ```ts
 * const uns = new UnsClient({ url: 'https://localhost:9443', username: 'admin', password, insecure: true });
 * const { account } = await uns.graphql('query($id: ID!) { account(id: $id) { id username } }', { id });
 * const client = await uns.mqtt({ username: 'line-7', password: 'account-password' });
 * ```
 */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { ReadyService } from '../kernel/ready.js';
import { graphqlData } from './edge.js';
import { AuthenticationError, ConnectionError } from './errors.js';
import { Transport, type ClientResponse, type RequestOptions, type TransportOptions } from './transport.js';

/** The token endpoint of the contract; `/auth/v3/oauth/token` answers the same. */
export const UNS_TOKEN_PATH = '/auth/realms/standalone/protocol/openid-connect/token';
export const UNS_GRAPHQL_PATH = '/mqtt/gql';

export interface UnsClientOptions extends TransportOptions {
  /** Base address of the UNS's HTTPS API, e.g. `https://localhost:9443`. */
  url: string;
  /** A user of the service (administrator or operator): the password grant. */
  username?: string;
  password?: string;
  /** Or a token used as it is. */
  bearer?: string;
  /** OAuth client of the password grant; default `ide-ui`. */
  clientId?: string;
  /** MQTT address for `mqtt()`; default `mqtts://<host of url>:8883` (TLS). */
  mqttUrl?: string;
  /** Renew when less than this many ms of the token remain; default a tenth of its lifetime, at most 60 s. */
  renewBeforeMs?: number;
}

export class UnsClient {
  readonly url: string;
  readonly mqttUrl: string;
  readonly #transport: Transport;
  readonly #options: UnsClientOptions;
  #held: { token: string; renewAt: number } | undefined;
  #granting: Promise<string> | undefined;

  constructor(options: UnsClientOptions) {
    this.#options = options;
    this.url = options.url.replace(/\/+$/, '');
    this.mqttUrl = options.mqttUrl ?? `mqtts://${new URL(this.url).hostname}:8883`;
    this.#transport = new Transport(options);
  }

  /** A client for the UNS of a ready line; MQTT over TLS when the line has it, else plain MQTT. */
  static fromReady(
    service: ReadyService,
    options: Omit<UnsClientOptions, 'url' | 'mqttUrl'> = {},
  ): UnsClient {
    const mqttUrl = service.mqttsUrl ?? service.mqttUrl;
    return new UnsClient({ ...options, url: service.url, ...(mqttUrl ? { mqttUrl } : {}) });
  }

  /** The current access token: the password grant on first use and again before it expires. */
  async token(): Promise<string> {
    if (this.#options.bearer) return this.#options.bearer;
    if (this.#held && Date.now() < this.#held.renewAt) return this.#held.token;
    this.#granting ??= this.#grant().finally(() => (this.#granting = undefined));
    return this.#granting;
  }

  async #grant(): Promise<string> {
    const url = `${this.url}${UNS_TOKEN_PATH}`;
    const { username, password } = this.#options;
    if (username === undefined || password === undefined) {
      throw new AuthenticationError(url, 0, undefined, { cause: new Error('no username and password') });
    }
    const res = await this.#transport.request('POST', url, {
      form: {
        grant_type: 'password',
        client_id: this.#options.clientId ?? 'ide-ui',
        username,
        password,
        scope: 'openid',
      },
    });
    if (res.status !== 200 || typeof res.body?.access_token !== 'string') {
      throw new AuthenticationError(url, res.status, res.body ?? res.text);
    }
    const now = Date.now();
    const lifetime = Number(res.body.expires_in ?? 1800) * 1000;
    const margin = this.#options.renewBeforeMs ?? Math.min(60_000, lifetime / 10);
    this.#held = { token: res.body.access_token, renewAt: now + lifetime - margin };
    return this.#held.token;
  }

  /** Any request, answered whatever its status; Bearer added unless `auth: false` or given. */
  async request(
    method: string,
    path: string,
    options: RequestOptions & { auth?: boolean } = {},
  ): Promise<ClientResponse> {
    const given =
      options.headers && Object.keys(options.headers).some((h) => h.toLowerCase() === 'authorization');
    const useAuth = options.auth !== false && !given;
    const send = async () =>
      this.#transport.request(method, `${this.url}${path}`, {
        ...options,
        headers: {
          ...options.headers,
          ...(useAuth ? { authorization: `Bearer ${await this.token()}` } : {}),
        },
      });
    let res = await send();
    if (res.status === 401 && useAuth && !this.#options.bearer) {
      this.#held = undefined;
      res = await send();
    }
    return res;
  }

  /** A GraphQL request at `/mqtt/gql` answered whatever its status and errors. */
  graphqlRaw(
    query: string,
    variables?: Record<string, unknown>,
    options: { operationName?: string; auth?: boolean } = {},
  ): Promise<ClientResponse> {
    return this.request('POST', UNS_GRAPHQL_PATH, {
      ...(options.auth === false ? { auth: false } : {}),
      json: {
        query,
        ...(variables ? { variables } : {}),
        ...(options.operationName ? { operationName: options.operationName } : {}),
      },
    });
  }

  /** Runs a GraphQL document at `/mqtt/gql` and answers its `data`; `GraphqlError` otherwise. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the default of an ad-hoc call (tests, scripts); a caller that knows the answer's shape passes T
  async graphql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    options: { operationName?: string } = {},
  ): Promise<T> {
    return graphqlData<T>(`${this.url}${UNS_GRAPHQL_PATH}`, await this.graphqlRaw(query, variables, options));
  }

  /**
   * Connects an MQTT client (an account's user name and password) to the broker; resolves on
   * CONNACK. TLS follows the client's `ca`/`insecure` options.
   */
  mqtt(options: IClientOptions & { url?: string } = {}): Promise<MqttClient> {
    const { url = this.mqttUrl, ...rest } = options;
    return connectMqtt(url, {
      ...(this.#options.ca ? { ca: this.#options.ca } : {}),
      ...(this.#options.insecure ? { rejectUnauthorized: false } : {}),
      ...rest,
    });
  }

  close(): void {
    this.#transport.close();
  }
}

/**
 * Connects with the `mqtt` client without reconnecting; resolves on CONNACK. A refusal rejects
 * with `AuthenticationError` (return codes 4 and 5) or `ConnectionError`, the client's error as
 * `cause`.
 */
export function connectMqtt(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options });
    const onError = (err: Error & { code?: number }) => {
      client.end(true);
      reject(
        err.code === 4 || err.code === 5
          ? new AuthenticationError(url, err.code, undefined, { cause: err, detail: err.message })
          : new ConnectionError(url, err),
      );
    };
    client.once('connect', () => {
      client.removeListener('error', onError);
      resolve(client);
    });
    client.once('error', onError);
    client.once('close', () =>
      reject(new ConnectionError(url, new Error('connection closed before CONNACK'))),
    );
  });
}
