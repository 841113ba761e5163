/**
 * The OPC UA server on the edge's seam. `start` opens the node tree (GraphQL works with the
 * server off); `listening` starts the node-opcua server on `--opcua-port` (port policy
 * `opcua-port`) unless `--opcua-enabled=false`; `close` shuts it down.
 */
import { join } from 'node:path';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import type { EdgeModule } from '../modules.js';
import {
  mountOpcua,
  opcuaMigrations,
  OpcuaRepository,
  OpcuaService,
  UaServer,
  type OpcuaModuleApi,
} from './index.js';
import { opcuaRoutes } from './routes.js';
import { opcuaConfigSection } from './config-section.js';

declare module '../modules.js' {
  interface EdgeModules {
    opcua: OpcuaModuleApi;
  }
}

export const opcuaModule: EdgeModule<'opcua'> = {
  name: 'opcua',
  migrations: opcuaMigrations,
  requires: ['datahub', 'devicehub'],
  async start(ctx) {
    const service = await OpcuaService.open(
      new OpcuaRepository(ctx.database),
      ctx.module('devicehub').readModel,
      ctx.logger,
    );
    return { service, server: null, enabled: ctx.config.opcuaEnabled };
  },
  async mount(ctx, api) {
    await mountOpcua(ctx.app, api);
    await ctx.app.register(opcuaRoutes, { opcua: api });
  },
  async listening(ctx, api) {
    if (!api.enabled) return;
    const hub = ctx.module('datahub').hub;
    api.server = await ctx.ports.bind(
      'opcua-port',
      ctx.config.opcuaPort,
      (port) =>
        UaServer.start({
          port,
          host: ctx.config.opcuaHost,
          pkiDir: join(ctx.dataDir, 'opcua-server-pki'),
          service: api.service,
          hub,
          logger: ctx.logger,
          buildVersion: MILLWRIGHT_VERSION,
        }),
      (s) => s.port,
    );
    ctx.logger.info({ endpoint: api.server.endpointUrl }, 'opcua server listening');
  },
  configSection: (api) => opcuaConfigSection(api.service),
  async close(api) {
    const server = api.server;
    api.server = null;
    await server?.shutdown();
    api.service.close();
  },
};
