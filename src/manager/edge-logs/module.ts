/** Edge logs across the fleet and each device's log forwarding, on the manager's seam (over the bridge). */
import type { ManagerModule } from '../modules.js';
import { edgeLogsRoutes } from './routes.js';
import { EdgeLogsService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    'edge-logs': EdgeLogsService;
  }
}

export const edgeLogsModule: ManagerModule<'edge-logs'> = {
  name: 'edge-logs',
  requires: ['fleet', 'bridge'],
  start: (ctx) => new EdgeLogsService(ctx.module('fleet'), ctx.module('bridge')),
  mount: (ctx, logs) => ctx.app.register(edgeLogsRoutes, { logs }),
};
