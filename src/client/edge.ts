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
import { EdgeApi, type EdgeApiOptions } from './api.js';
import { AuthenticationError, ConnectionError } from './errors.js';
import { Transport, type TransportOptions } from './transport.js';

export { EDGE_TOKEN_PATH, graphqlData, type EdgeCredentials } from './api.js';

export interface EdgeClientOptions extends TransportOptions, Omit<EdgeApiOptions, 'transport'> {
  /** The DataHub's NATS address; default `nats://<host of url>:4222`. */
  natsUrl?: string;
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

/** `EdgeApi` over node's http/https, plus the DataHub over NATS. */
export class EdgeClient extends EdgeApi {
  readonly natsUrl: string;
  readonly #tls: TransportOptions;

  constructor(options: EdgeClientOptions) {
    super({ ...options, transport: new Transport(options) });
    this.natsUrl = options.natsUrl ?? `nats://${new URL(this.url).hostname}:4222`;
    this.#tls = options;
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
   * Connects to the DataHub with the `nats` client. With `ca` or `insecure`, TLS is used when the
   * DataHub offers it (remote clients must use it); a DataHub that trusts local clients offers
   * none to them, and the connection stays in plain text.
   */
  async nats(options: NatsOptions = {}): Promise<NatsConnection> {
    const url = options.url ?? this.natsUrl;
    const tls = this.#tls.ca
      ? { ca: this.#tls.ca.toString() }
      : this.#tls.insecure
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
}
