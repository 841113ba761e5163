/**
 * High availability of edges on the manager's seam: pairs of edges, the lease of the active role
 * (in the database, so a restart keeps it), answered over the edge links, and the routes
 * `/api/v1/device/{deviceId}/ha...`.
 */
import type { ManagerModule } from '../modules.js';
import { haMigrations } from './migrations/index.js';
import { haOptions } from './options.js';
import { HaRepository } from './repository.js';
import { haRoutes } from './routes.js';
import { HaService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    ha: HaService;
  }
}

export const haModule: ManagerModule<'ha', typeof haOptions> = {
  name: 'ha',
  options: haOptions,
  migrations: haMigrations,
  requires: ['fleet', 'link', 'bridge'],
  start: (ctx) =>
    new HaService(
      new HaRepository(ctx.database),
      ctx.module('fleet'),
      ctx.module('link'),
      ctx.module('bridge'),
      ctx.logger.child({ component: 'manager.ha' }),
      ctx.config.haTimeout,
    ),
  mount: (ctx, ha) => ctx.app.register(haRoutes, { ha }),
};
