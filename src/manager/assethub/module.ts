/**
 * The asset hub on the manager's seam: another manager's published catalogue (its marketplace,
 * `/mpcs/`) browsed and imported from, on the main API (`/api/v1/asset-hub/...`), with the hub's
 * connection set on the admin console (`/admin/v1/asset-hub/...`), and usage events delivered to
 * the hub in the background (started once the manager listens, stopped on close).
 */
import { SecretBox } from '../../kernel/secret-box.js';
import type { ManagerModule } from '../modules.js';
import { assetHubMigrations } from './migrations/index.js';
import { assetHubOptions } from './options.js';
import { AssetHubRepository } from './repository.js';
import { adminAssetHubRoutes, assetHubRoutes } from './routes.js';
import { AssetHubService } from './service.js';
import { HubSettings } from './settings.js';
import { TelemetryOutbox } from './telemetry.js';

/** The module's API: the imports, the connection settings, the usage events. */
export interface AssetHub {
  service: AssetHubService;
  settings: HubSettings;
  telemetry: TelemetryOutbox;
}

declare module '../modules.js' {
  interface ManagerModules {
    assethub: AssetHub;
  }
}

export const assetHubModule: ManagerModule<'assethub', typeof assetHubOptions> = {
  name: 'assethub',
  options: assetHubOptions,
  migrations: assetHubMigrations,
  requires: ['admin', 'fleet', 'templates'],
  start(ctx) {
    const repo = new AssetHubRepository(ctx.database);
    const settings = new HubSettings(repo, SecretBox.forDataDir(ctx.dataDir), ctx.config.assetHubTimeout);
    const telemetry = new TelemetryOutbox(repo, {
      max: ctx.config.assetHubTelemetryMax,
      attempts: ctx.config.assetHubTelemetryAttempts,
      intervalMs: ctx.config.assetHubTelemetryInterval,
      logger: ctx.logger,
      hub: () => settings.telemetryClient(),
    });
    const service = new AssetHubService({
      repo,
      settings,
      fleet: ctx.module('fleet'),
      templates: ctx.module('templates'),
      telemetry,
      maxImports: ctx.config.assetHubMaxImports,
      logger: ctx.logger,
    });
    return { service, settings, telemetry };
  },
  async mount(ctx, api) {
    await ctx.app.register(assetHubRoutes, { hub: api.service, settings: api.settings });
    await ctx.module('admin').app.register(adminAssetHubRoutes, api);
  },
  listening: (_ctx, api) => api.telemetry.start(),
  close: (api) => api.telemetry.stop(),
};
