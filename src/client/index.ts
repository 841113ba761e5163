/**
 * Typed clients of Millwright's services, for scripts, the CLI and the tests: the edge (token
 * exchange and renewal, REST, GraphQL, the DataHub over NATS) and the unified namespace (password
 * grant, GraphQL, MQTT). Addresses can come from a service's ready line (`parseReadyLine`).
 */
export { EdgeClient, EDGE_TOKEN_PATH, graphqlData } from './edge.js';
export { EdgeApi, type EdgeApiOptions } from './api.js';
export { FetchTransport, readCookie, type FetchTransportOptions } from './fetch-transport.js';
export type { HttpTransport } from './http.js';
export type { EdgeClientOptions, EdgeCredentials, NatsOptions } from './edge.js';
export { EdgeConfigClient, type ConfigApplyOptions, type SnapshotInfo } from './edge-config.js';
export { UnsClient, connectMqtt, UNS_TOKEN_PATH, UNS_GRAPHQL_PATH } from './uns.js';
export type { UnsClientOptions } from './uns.js';
export { TWINS, TWINS_PATH } from './twins.js';
export type { ClientResponse, RequestOptions, TlsOptions, TransportOptions } from './transport.js';
export {
  MillwrightClientError,
  ConnectionError,
  HttpError,
  AuthenticationError,
  GraphqlError,
  type GraphqlErrorEntry,
} from './errors.js';
export { parseReadyLine, READY_PREFIX, type ReadyLine, type ReadyService } from '../kernel/ready.js';
