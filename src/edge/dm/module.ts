/**
 * Device management on the edge's seam: enrolment with an edge manager (`/dm/cloud/...`), the
 * link to it (started once the edge listens, when enrolled), bridged requests executed on this
 * edge's own app, and API client updates for the manager's device OAuth clients.
 */
import type { EdgeModule } from '../modules.js';
import { dmMigrations } from './migrations/index.js';
import { dmRoutes } from './routes.js';
import { DmService } from './service.js';
import { hostHealth } from './health.js';

declare module '../modules.js' {
  interface EdgeModules {
    dm: DmService;
  }
}

export const dmModule: EdgeModule<'dm'> = {
  name: 'dm',
  migrations: dmMigrations,
  requires: ['auth'],
  async start(ctx) {
    const dm = new DmService(ctx.database, ctx.module('auth').service, ctx.app, ctx.logger);
    // A paired edge starts fenced: acquisition waits for the manager's grant (dm/ha.ts).
    await dm.ha.load();
    // Disk use of the data directory and the HTTPS certificate's expiry, for the manager's rules.
    dm.reportOnHeartbeat(hostHealth(ctx.dataDir, ctx.tls?.cert ?? null));
    return dm;
  },
  mount: (ctx, dm) => ctx.app.register(dmRoutes, { dm, auth: ctx.module('auth').service }),
  listening: (_ctx, dm) => dm.startLink(),
  close: (dm) => dm.close(),
};
