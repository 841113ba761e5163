/**
 * The UNS console on the UNS's seam: the web UI built by `npm run build` (dist/console/uns),
 * served at `/` and `/assets/*` unless `--console=false`. It talks to the UNS through its public
 * API only (the session cookie of `/auth/console/login`, GraphQL at `/mqtt/gql`); this module
 * serves files and nothing else.
 */
import type { UnsModule } from '../modules.js';
import {
  consoleDist,
  consoleRoutes,
  loadConsoleAssets,
  type ConsoleAssets,
} from '../../kernel/http/console.js';
import { consoleOptions } from './options.js';

const CONSOLE_DIST = consoleDist('uns');

/** What `/` answers when the console is not built (tests that did not build it, a source checkout). */
export const NOT_BUILT_PAGE =
  'The UNS console is not built.\n\n' +
  'Run `npm run build` in the Millwright checkout (it builds the console into dist/console/uns),\n' +
  'then restart the UNS. The API is served as usual; see docs/console.md.\n';

export interface UnsConsole {
  /** Whether the console is served (`--console`, default true). */
  enabled: boolean;
  /** Whether the built files were found (dist/console/uns/index.html). */
  built: boolean;
  /** Where the built files are read from. */
  dir: string;
  /** The built files, in memory (null when off or not built). */
  assets: ConsoleAssets | null;
}

declare module '../modules.js' {
  interface UnsModules {
    console: UnsConsole;
  }
}

export const consoleModule: UnsModule<'console', typeof consoleOptions> = {
  name: 'console',
  options: consoleOptions,
  start(ctx) {
    if (!ctx.config.console) return { enabled: false, built: false, dir: CONSOLE_DIST, assets: null };
    const assets = loadConsoleAssets(CONSOLE_DIST);
    if (assets) ctx.logger.debug({ dir: CONSOLE_DIST, files: assets.files.size }, 'UNS console loaded');
    else {
      ctx.logger.warn(
        { dir: CONSOLE_DIST },
        'the UNS console is not built (no dist/console/uns/index.html): run `npm run build`; / explains it',
      );
    }
    return { enabled: true, built: assets !== null, dir: CONSOLE_DIST, assets };
  },
  mount(ctx, api) {
    if (!api.enabled) return;
    return ctx.app.register(consoleRoutes, { assets: api.assets, notBuilt: NOT_BUILT_PAGE });
  },
};
