/**
 * The manager console on the manager's seam: the web UI built by `npm run build`
 * (dist/console/manager), served at `/` and `/assets/*` on the main port (fleet, activation,
 * devices, templates, tasks) and on the admin port (API tokens, users and roles) unless
 * `--console=false`. It signs in through the realm `standalone` (auth module) and talks to the
 * public APIs only; this module serves files and nothing else.
 */
import type { ManagerModule } from '../modules.js';
import { CONSOLE_DIST, loadConsoleAssets, type ConsoleAssets } from './assets.js';
import { managerConsoleOptions } from './options.js';
import { managerConsoleRoutes } from './routes.js';

export interface ManagerConsole {
  enabled: boolean;
  built: boolean;
  dir: string;
  assets: ConsoleAssets | null;
}

declare module '../modules.js' {
  interface ManagerModules {
    console: ManagerConsole;
  }
}

export const managerConsoleModule: ManagerModule<'console', typeof managerConsoleOptions> = {
  name: 'console',
  options: managerConsoleOptions,
  requires: ['admin'],
  start(ctx) {
    if (!ctx.config.console) return { enabled: false, built: false, dir: CONSOLE_DIST, assets: null };
    const assets = loadConsoleAssets(CONSOLE_DIST);
    if (!assets) {
      ctx.logger.warn(
        { dir: CONSOLE_DIST },
        'the manager console is not built (no dist/console/manager/index.html): run `npm run build`',
      );
    }
    return { enabled: true, built: assets !== null, dir: CONSOLE_DIST, assets };
  },
  async mount(ctx, api) {
    if (!api.enabled) return;
    await ctx.app.register(managerConsoleRoutes, { assets: api.assets });
    await ctx.module('admin').app.register(managerConsoleRoutes, { assets: api.assets });
  },
};
