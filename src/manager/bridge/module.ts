/** The bridge on the manager's seam: `/api/v1/edge/...` and the device OAuth clients. */
import type { ManagerModule } from '../modules.js';
import { bridgeRoutes } from './routes.js';
import { oauthClientRoutes } from './oauth-clients.js';
import { BridgeService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    bridge: BridgeService;
  }
}

export const bridgeModule: ManagerModule<'bridge'> = {
  name: 'bridge',
  requires: ['fleet', 'link'],
  start: (ctx) =>
    new BridgeService(
      ctx.module('fleet'),
      ctx.module('link'),
      ctx.logger.child({ component: 'manager.bridge' }),
    ),
  async mount(ctx, bridge) {
    await ctx.app.register(bridgeRoutes, { bridge });
    await ctx.app.register(oauthClientRoutes, { bridge });
  },
};
