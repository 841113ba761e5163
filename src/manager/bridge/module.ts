/** The bridge on the manager's seam: `/api/v1/edge/...` and the device OAuth clients. */
import type { ManagerModule } from '../modules.js';
import { bridgeRoutes, DROP, DROP_RESPONSE } from './routes.js';
import { installBridgeFastPath } from './fast-path.js';
import { oauthClientRoutes } from './oauth-clients.js';
import { BridgeService } from './service.js';

declare module '../modules.js' {
  interface ManagerModules {
    bridge: BridgeService;
  }
}

export const bridgeModule: ManagerModule<'bridge'> = {
  name: 'bridge',
  requires: ['auth', 'fleet', 'link'],
  start: (ctx) =>
    new BridgeService(
      ctx.module('fleet'),
      ctx.module('link'),
      ctx.logger.child({ component: 'manager.bridge' }),
    ),
  async mount(ctx, bridge) {
    await ctx.app.register(bridgeRoutes, { bridge });
    // A caller's bridged read whose checks all pass from memory skips Fastify's request cycle.
    installBridgeFastPath(ctx.app, {
      bridge,
      auth: ctx.module('auth'),
      log: ctx.logger.child({ component: 'manager.bridge' }),
      drop: { request: DROP, response: DROP_RESPONSE },
    });
    await ctx.app.register(oauthClientRoutes, { bridge });
  },
};
