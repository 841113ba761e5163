/** The edge as an MCP server on the edge's seam: `/mcp` over the other modules' public services. */
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import type { EdgeModule } from '../modules.js';
import { mcpOptions } from './options.js';
import { Plant } from './plant.js';
import { mcpRoutes } from './routes.js';
import { McpSessions } from './sessions.js';

export interface EdgeMcp {
  /** null: `/mcp` is off (`--mcp=false`). */
  sessions: McpSessions | null;
  plant: Plant;
}

declare module '../modules.js' {
  interface EdgeModules {
    mcp: EdgeMcp;
  }
}

export const mcpModule: EdgeModule<'mcp', typeof mcpOptions> = {
  name: 'mcp',
  options: mcpOptions,
  requires: ['datahub', 'devicehub', 'logs', 'integrations', 'history'],
  start(ctx) {
    const plant = new Plant({
      devicehub: ctx.module('devicehub').service,
      hub: ctx.module('datahub').hub,
      logs: ctx.module('logs'),
      integrations: ctx.module('integrations'),
      history: ctx.module('history').service,
    });
    if (!ctx.config.mcp) return { sessions: null, plant };
    const logger = ctx.logger;
    const sessions = new McpSessions({
      maxSessions: ctx.config.mcpMaxSessions,
      idleMs: ctx.config.mcpSessionIdle,
      logger,
      // The MCP SDK (and zod) load with the first session, not with the edge.
      newServer: async () =>
        (await import('./server.js')).createMcpServer({
          plant,
          version: MILLWRIGHT_VERSION,
          maxResult: ctx.config.mcpMaxResult,
          logger,
        }),
    });
    return { sessions, plant };
  },
  mount: (ctx, mcp) =>
    mcp.sessions
      ? ctx.app.register(mcpRoutes, { sessions: mcp.sessions, maxBody: ctx.config.mcpMaxBody })
      : undefined,
  close: (mcp) => mcp.sessions?.close(),
};
