/** The fleet on the manager's seam: companies, projects, devices, activation; main and admin routes. */
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import type { ManagerModule } from '../modules.js';
import { fleetOptions } from './options.js';
import { MANAGER_API_VERSION } from '../admin/index.js';
import { fleetMigrations } from './migrations/index.js';
import { FleetRepository } from './repository.js';
import { activationRoutes, adminFleetRoutes, fleetRoutes } from './routes.js';
import { SecretBox } from '../../kernel/secret-box.js';
import { FleetService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    fleet: FleetService;
  }
}

export const fleetModule: ManagerModule<'fleet', typeof fleetOptions> = {
  name: 'fleet',
  options: fleetOptions,
  migrations: fleetMigrations,
  requires: ['admin'],
  start: (ctx) =>
    new FleetService(new FleetRepository(ctx.database), SecretBox.forDataDir(ctx.dataDir), ctx.logger, {
      activationTtl: ctx.config.activationTtl,
    }),
  async mount(ctx, fleet) {
    const startedAt = new Date().toISOString();
    const deployment = async () => ({
      product: 'millwright edge manager',
      version: MANAGER_API_VERSION,
      millwright: MILLWRIGHT_VERSION,
      database: ctx.database.dialect,
      startedAt,
      ...(await fleet.counts()),
    });
    await ctx.app.register(fleetRoutes, { fleet, deployment });
    await ctx.app.register(activationRoutes, { fleet, rateLimit: ctx.config.activationRateLimit });
    await ctx.module('admin').app.register(adminFleetRoutes, { fleet, deployment });
  },
};
