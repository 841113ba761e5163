/**
 * Applications on a container engine (`/apps`): containers, networks, images and registries
 * through the Docker Engine API on a unix socket (Docker or Podman), and the overview dashboard.
 * The edge starts and runs without an engine: every route then answers 503 naming the socket.
 */
import { SecretBox } from '../../kernel/secret-box.js';
import type { EdgeModule } from '../modules.js';
import { EngineClient } from './engine.js';
import { appsMigrations } from './migrations/index.js';
import { appsOptions } from './options.js';
import { RegistryService } from './registries.js';
import { RegistryRepository, type AppsTables } from './repository.js';
import { appsRoutes } from './routes.js';
import { AppsService } from './service.js';
import { StatsSampler } from './stats.js';

/** The registries kept at most. */
export const MAX_REGISTRIES = 100;

export interface AppsApi {
  apps: AppsService;
  registries: RegistryService;
  stats: StatsSampler;
}

declare module '../modules.js' {
  interface EdgeModules {
    apps: AppsApi;
  }
}

export const appsModule: EdgeModule<'apps', typeof appsOptions> = {
  name: 'apps',
  options: appsOptions,
  migrations: appsMigrations,
  start: (ctx) => {
    const engine = new EngineClient({
      socket: ctx.config.appsEngineSocket,
      timeoutMs: ctx.config.appsEngineTimeout,
    });
    const apps = new AppsService(engine, ctx.config.appsMaxContainers);
    const registries = new RegistryService(
      new RegistryRepository(ctx.database.typed<AppsTables>()),
      SecretBox.forDataDir(ctx.dataDir),
      MAX_REGISTRIES,
    );
    const stats = new StatsSampler(
      apps,
      {
        intervalSeconds: ctx.config.appsStatsInterval,
        historySeconds: ctx.config.appsStatsHistory,
        maxContainers: ctx.config.appsMaxContainers,
      },
      ctx.logger,
    );
    return { apps, registries, stats };
  },
  mount: (ctx, api) =>
    ctx.app.register(appsRoutes, { ...api, pullTimeoutMs: ctx.config.appsEngineTimeout * 10 }),
  close: (api) => api.stats.close(),
};
