/** The bridge on the manager's seam: `/api/v1/edge/...` and the device OAuth clients. */
import type { ManagerModule } from '../modules.js';
import { bridgeRoutes, type BridgeOptions } from './routes.js';
import { oauthClientRoutes } from './oauth-clients.js';

declare module '../modules.js' {
  interface ManagerModules {
    bridge: BridgeOptions;
  }
}

export const bridgeModule: ManagerModule<'bridge'> = {
  name: 'bridge',
  requires: ['fleet', 'link'],
  start: (ctx) => ({ fleet: ctx.module('fleet'), hub: ctx.module('link') }),
  async mount(ctx, bridge) {
    await ctx.app.register(bridgeRoutes, bridge);
    await ctx.app.register(oauthClientRoutes, bridge);
  },
};
