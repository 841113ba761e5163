/** Integrations on the edge's seam: `/cc/v2`, one runner and disk queue per instance. */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { mountGraphql } from '../../kernel/graphql.js';
import { LIST_SDL } from '../../kernel/paging.js';
import type { EdgeModule } from '../modules.js';
import { integrationsConfigSection } from './config-section.js';
import { integrationsOptions } from './options.js';
import { CONNECTORS } from './connectors/index.js';
import { integrationsMigrations } from './migrations/index.js';
import { IntegrationsRepository } from './repository.js';
import { resolvers, type IntegrationsContext } from './resolvers.js';
import { IntegrationService } from './service.js';

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

declare module '../modules.js' {
  interface EdgeModules {
    integrations: IntegrationService;
  }
}

export const integrationsModule: EdgeModule<'integrations', typeof integrationsOptions> = {
  name: 'integrations',
  options: integrationsOptions,
  migrations: integrationsMigrations,
  requires: ['datahub', 'dm', 'trust'],
  async start(ctx) {
    const trust = ctx.module('trust');
    const service = new IntegrationService({
      repo: new IntegrationsRepository(ctx.database),
      hub: ctx.module('datahub').hub,
      dataDir: ctx.dataDir,
      logger: ctx.logger,
      factories: CONNECTORS,
      // CA certificates synchronised by the manager, for connections that name no CA of their own.
      trustedCa: () => trust.ca(),
    });
    await service.start();
    // The manager's "integration down" rule reads this from the edge's heartbeats.
    ctx.module('dm').reportOnHeartbeat(() => ({ integrationsDown: service.downInstances() }));
    return service;
  },
  mount: (ctx, service) => mountIntegrations(ctx.app, service),
  configSection: (service) => integrationsConfigSection(service),
  close: (service) => service.close(),
};
