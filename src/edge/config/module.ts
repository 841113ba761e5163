/**
 * Configuration templates and snapshots on the edge's seam (`/config/...`). It reads every other
 * module's configuration section through the shell (`ctx.sections()`), never their tables.
 */
import type { EdgeModule } from '../modules.js';
import { configMigrations } from './migrations/index.js';
import { configRoutes } from './routes.js';
import { ConfigService } from './service.js';

declare module '../modules.js' {
  interface EdgeModules {
    config: ConfigService;
  }
}

export const configModule: EdgeModule<'config'> = {
  name: 'config',
  migrations: configMigrations,
  requires: ['acquisition'],
  start(ctx) {
    const acquisition = ctx.module('acquisition');
    return new ConfigService({
      database: ctx.database,
      sections: () => ctx.sections(),
      logger: ctx.logger,
      // merge-apply restarts acquisition: every device runner stops and starts again.
      restart: async () => {
        await acquisition.restart();
        return ['acquisition'];
      },
    });
  },
  mount: (ctx, config) => ctx.app.register(configRoutes, { config }),
};
