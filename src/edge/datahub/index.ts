/**
 * The DataHub: the edge's message bus (in-process, NATS subject semantics), its NATS gateway for
 * outside clients, external mode (joining a NATS cluster), access keys and counters.
 */
export {
  DataHub,
  Message,
  Subscription,
  type SubscribeOptions,
  type PublishOptions,
  type PayloadEncoder,
  type PrefixCounters,
  type RouteHolder,
} from './bus.js';
export {
  DataHubError,
  InvalidSubjectError,
  NoRespondersError,
  RequestTimeoutError,
  ClosedError,
} from './errors.js';
export { DataHubService, AccessKeyService, accessKeyView, type DataHubServiceOptions } from './service.js';
export { DataHubRepository } from './repository.js';
export { datahubMigrations } from './migrations/index.js';
export { datahubRoutes } from './routes.js';
export { Gateway, type AccessGrant, type GatewayOptions } from './gateway/server.js';
export { isValidPattern, isValidSubject, patternMatches, patternCovers, type Outlet } from './subject.js';
export { datahubModule } from './module.js';
