/**
 * The machine's network on the edge's seam: interfaces (`/dm/ifconfig`), the kernel's static
 * routes (`/dm/v2/routes`, deleted through `ip route del`). No tables and no options: the machine
 * is the state. (The high availability role, `/dm/v2/ha/role`, is the dm module's.)
 */
import type { EdgeModule } from '../modules.js';
import { networkRoutes } from './routes.js';
import { NetworkService } from './service.js';

declare module '../modules.js' {
  interface EdgeModules {
    network: NetworkService;
  }
}

export const networkModule: EdgeModule<'network'> = {
  name: 'network',
  start: () => new NetworkService(),
  mount: (ctx, network) => ctx.app.register(networkRoutes, { network }),
};
