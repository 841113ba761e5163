/**
 * Integrations: connectors that move DataHub data to brokers, databases and clouds and bring
 * theirs back, with a disk queue per instance (store-and-forward), served as GraphQL at `/cc/v2`.
 */
export { integrationsMigrations } from './migrations/index.js';
export { IntegrationService, type InstanceView, type StatusView, type QueueView } from './service.js';
export { IntegrationsRepository } from './repository.js';
export { PROVIDERS, findProvider, uuidv5, MQTT_PROVIDER_ID, type ProviderDef } from './catalogue.js';
export { DiskQueue } from './queue.js';
export { INSTANCE_STATES, type InstanceState } from './state.js';
export { CONNECTORS } from './connectors/index.js';
export { ensureUnsFeed, defaultUnsPrefix, UNS_FEED_NAME, type UnsFeedPeer } from './uns-feed.js';

export { integrationsModule, integrationsSchema, mountIntegrations, INTEGRATIONS_PATH } from './module.js';
