/**
 * Integrations: connectors that move DataHub data to brokers, databases and clouds and bring
 * theirs back, with a disk queue per instance (store-and-forward), served as GraphQL at `/cc/v2`.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { mountGraphql } from '../../kernel/graphql.js';
import { LIST_SDL } from '../../kernel/paging.js';
import { resolvers, type IntegrationsContext } from './resolvers.js';
import type { IntegrationService } from './service.js';

export { integrationsMigrations } from './migrations/index.js';
export { IntegrationService, type InstanceView, type StatusView, type QueueView } from './service.js';
export { IntegrationsRepository } from './repository.js';
export { PROVIDERS, findProvider, uuidv5, MQTT_PROVIDER_ID, type ProviderDef } from './catalogue.js';
export { DiskQueue } from './queue.js';
export { INSTANCE_STATES, type InstanceState } from './state.js';
export { CONNECTORS } from './connectors/index.js';

export const INTEGRATIONS_PATH = '/cc/v2';

export function integrationsSchema(): string {
  return readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8') + LIST_SDL;
}

export async function mountIntegrations(app: FastifyInstance, service: IntegrationService): Promise<void> {
  await app.register(async (scope) => {
    await mountGraphql<IntegrationsContext>(scope, {
      path: INTEGRATIONS_PATH,
      schema: integrationsSchema(),
      resolvers,
      context: () => ({ integrations: service }),
      maxCost: 50_000,
      // No subscription root (see schema.graphql), but the WebSocket transport: a subscription
      // sent there is refused with a GraphQL error instead of a closed socket.
      subscriptions: true,
    });
  });
}
