/**
 * The manager console on the manager's seam: the web UI built by `npm run build`
 * (dist/console/manager), served at `/` and `/assets/*` on the main port (fleet, activation,
 * devices, templates, tasks) and on the admin port (API tokens, users and roles) unless
 * `--console=false`; and an edge's own console through the bridge (`edge-console.ts`). It signs in through the realm `standalone` (auth module) and talks to the
 * public APIs only; this module serves files and nothing else.
 */
import type { ManagerModule } from '../modules.js';
import {
  consoleDist,
  consoleRoutes,
  loadConsoleAssets,
  type ConsoleAssets,
} from '../../kernel/http/console.js';
import { CONSOLE_SECURITY_HEADERS } from '../auth/index.js';
import { edgeConsoleRoutes } from './edge-console.js';
import { managerConsoleOptions } from './options.js';

const CONSOLE_DIST = consoleDist('manager');

export const NOT_BUILT_PAGE =
  'The manager console is not built.\n\n' +
  'Run `npm run build` in the Millwright checkout (it builds the console into dist/console/manager),\n' +
  'then restart the manager. The API is served as usual; see docs/manager.md.\n';

export interface ManagerConsole {
  enabled: boolean;
  built: boolean;
  dir: string;
  assets: ConsoleAssets | null;
  /** The edge console's files, served for an edge opened through the bridge. */
  edgeAssets: ConsoleAssets | null;
}

/** The edge console's build (dist/console/edge), beside the manager's. */
const EDGE_CONSOLE_DIST = consoleDist('edge');

declare module '../modules.js' {
  interface ManagerModules {
    console: ManagerConsole;
  }
}

export const managerConsoleModule: ManagerModule<'console', typeof managerConsoleOptions> = {
  name: 'console',
  options: managerConsoleOptions,
  requires: ['admin', 'fleet'],
  start(ctx) {
    if (!ctx.config.console) {
      return { enabled: false, built: false, dir: CONSOLE_DIST, assets: null, edgeAssets: null };
    }
    const assets = loadConsoleAssets(CONSOLE_DIST);
    if (!assets) {
      ctx.logger.warn(
        { dir: CONSOLE_DIST },
        'the manager console is not built (no dist/console/manager/index.html): run `npm run build`',
      );
    }
    const edgeAssets = loadConsoleAssets(EDGE_CONSOLE_DIST);
    return { enabled: true, built: assets !== null, dir: CONSOLE_DIST, assets, edgeAssets };
  },
  async mount(ctx, api) {
    if (!api.enabled) return;
    // The main port and the admin port serve the same console (it shows what each port offers).
    const routes = { assets: api.assets, notBuilt: NOT_BUILT_PAGE, headers: CONSOLE_SECURITY_HEADERS };
    await ctx.app.register(consoleRoutes, routes);
    await ctx.app.register(edgeConsoleRoutes, { assets: api.edgeAssets, fleet: ctx.module('fleet') });
    await ctx.module('admin').app.register(consoleRoutes, routes);
  },
};
