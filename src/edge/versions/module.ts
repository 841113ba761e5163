/** The version probes of the product family (`/devicehub/version`...) and `/dm/host/info`. */
import type { EdgeModule } from '../modules.js';
import { versionRoutes } from './routes.js';

declare module '../modules.js' {
  interface EdgeModules {
    versions: void;
  }
}

export const versionsModule: EdgeModule<'versions'> = {
  name: 'versions',
  start: () => undefined,
  mount: (ctx) => ctx.app.register(versionRoutes),
};
