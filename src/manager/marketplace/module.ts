/**
 * The marketplace on the manager's seam: the catalogue under `/mpcs/v1/` (items, versions,
 * categories, search, publishing by a global admin, usage events from asset hubs) and installs on
 * edges as tasks (configuration templates through the templates module's `TEMPLATE_APPLY`,
 * applications through its own `MARKETPLACE_APP_INSTALL`). `/mpcs/` takes
 * `Authorization: <API token>` without `Bearer`, and `X-AuthToken` (the auth module's hook).
 */
import type { ManagerModule } from '../modules.js';
import { SecretBox } from '../../kernel/secret-box.js';
import { MarketplaceInstaller } from './install.js';
import { marketplaceMigrations } from './migrations/index.js';
import { marketplaceOptions } from './options.js';
import { MarketplaceRepository } from './repository.js';
import { adminMarketplaceRoutes, marketplaceRoutes } from './routes.js';
import { MarketplaceSecrets } from './secrets.js';
import { MarketplaceService } from './service.js';

/** The module's API: the catalogue and the installer. */
export interface Marketplace {
  catalogue: MarketplaceService;
  installer: MarketplaceInstaller;
  secrets: MarketplaceSecrets;
}

declare module '../modules.js' {
  interface ManagerModules {
    marketplace: Marketplace;
  }
}

/** Usage events remembered for their ids (counts stay when older ones are forgotten). */
export const MARKETPLACE_MAX_EVENTS = 100_000;

export const marketplaceModule: ManagerModule<'marketplace', typeof marketplaceOptions> = {
  name: 'marketplace',
  options: marketplaceOptions,
  migrations: marketplaceMigrations,
  requires: ['admin', 'fleet', 'bridge', 'tasks', 'templates'],
  start(ctx) {
    const repo = new MarketplaceRepository(ctx.database);
    const catalogue = new MarketplaceService(
      repo,
      {
        maxItems: ctx.config.marketplaceMaxItems,
        maxVersions: ctx.config.marketplaceMaxVersions,
        maxContentBytes: ctx.config.marketplaceMaxContentBytes,
        maxEvents: MARKETPLACE_MAX_EVENTS,
      },
      ctx.logger,
    );
    const secrets = new MarketplaceSecrets(repo, SecretBox.forDataDir(ctx.dataDir));
    const installer = new MarketplaceInstaller({
      secrets,
      repo,
      catalogue,
      templates: ctx.module('templates'),
      tasks: ctx.module('tasks'),
      fleet: ctx.module('fleet'),
      bridge: ctx.module('bridge'),
    });
    return { catalogue, installer, secrets };
  },
  async mount(ctx, api) {
    await ctx.app.register(marketplaceRoutes, {
      ...api,
      // JSON text of the largest content, and the fields around it.
      maxBodyBytes: 2 * ctx.config.marketplaceMaxContentBytes + 64 * 1024,
    });
    await ctx.module('admin').app.register(adminMarketplaceRoutes, { secrets: api.secrets });
  },
};
