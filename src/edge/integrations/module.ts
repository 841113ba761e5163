/** Integrations on the edge's seam: `/cc/v2`, one runner and disk queue per instance. */
import type { EdgeModule } from '../modules.js';
import { integrationsConfigSection } from './config-section.js';
import {
  CONNECTORS,
  integrationsMigrations,
  IntegrationService,
  IntegrationsRepository,
  mountIntegrations,
} from './index.js';

declare module '../modules.js' {
  interface EdgeModules {
    integrations: IntegrationService;
  }
}

export const integrationsModule: EdgeModule<'integrations'> = {
  name: 'integrations',
  migrations: integrationsMigrations,
  requires: ['datahub'],
  async start(ctx) {
    const service = new IntegrationService({
      repo: new IntegrationsRepository(ctx.database),
      hub: ctx.module('datahub').hub,
      dataDir: ctx.dataDir,
      logger: ctx.logger,
      factories: CONNECTORS,
    });
    await service.start();
    return service;
  },
  mount: (ctx, service) => mountIntegrations(ctx.app, service),
  configSection: (service) => integrationsConfigSection(service),
  close: (service) => service.close(),
};
