/** The log query module on the edge's seam: `GET /logs/query` over the shell's log store. */
import type { LogStore } from '../../kernel/logging/log-store.js';
import type { EdgeModule } from '../modules.js';
import { logsRoutes } from './routes.js';
import { logAggregateRoutes } from './aggregates.js';

declare module '../modules.js' {
  interface EdgeModules {
    logs: LogStore;
  }
}

export const logsModule: EdgeModule<'logs'> = {
  name: 'logs',
  start: (ctx) => ctx.logStore,
  async mount(ctx, store) {
    await ctx.app.register(logsRoutes, { store });
    await ctx.app.register(logAggregateRoutes, { store });
  },
};
