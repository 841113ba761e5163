/**
 * The OPC UA server on the edge's seam. `start` opens the node tree (GraphQL works with the
 * server off) and, unless `--opcua-enabled=false`, reserves `--opcua-port` under the port policy
 * (`opcua-port`) with the other ports, so that a taken port stops the start before anything
 * irreversible (the first-run password) happens; `listening` starts the node-opcua server on the
 * reserved port; `close` shuts it down.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import type { EdgeModule } from '../modules.js';
import { opcuaOptions } from './options.js';
import {
  mountOpcua,
  opcuaMigrations,
  OpcuaRepository,
  OpcuaService,
  UaServer,
  type OpcuaModuleApi,
} from './index.js';
import { opcuaConfigSection } from './config-section.js';
import { opcuaRoutes } from './routes.js';

declare module '../modules.js' {
  interface EdgeModules {
    opcua: OpcuaModuleApi;
  }
}

interface Reservation {
  server: Server;
  port: number;
}

/** The port held between `start` and `listening`. */
const reservations = new WeakMap<OpcuaModuleApi, Reservation>();

function reserve(host: string, port: number): Promise<Reservation> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () =>
      resolve({ server, port: (server.address() as AddressInfo).port }),
    );
  });
}

const release = (r: Reservation) => new Promise<void>((resolve) => r.server.close(() => resolve()));

export const opcuaModule: EdgeModule<'opcua', typeof opcuaOptions> = {
  name: 'opcua',
  options: opcuaOptions,
  migrations: opcuaMigrations,
  requires: ['datahub', 'devicehub'],
  async start(ctx) {
    const service = await OpcuaService.open(
      new OpcuaRepository(ctx.database),
      ctx.module('devicehub').readModel,
      ctx.logger,
    );
    const api: OpcuaModuleApi = { service, server: null, enabled: ctx.config.opcuaEnabled };
    if (api.enabled) {
      const r = await ctx.ports.bind(
        'opcua-port',
        ctx.config.opcuaPort,
        (port) => reserve(ctx.config.opcuaHost, port),
        (x) => x.port,
      );
      reservations.set(api, r);
      ctx.defer('opcua port reservation', () => release(r));
    }
    return api;
  },
  async mount(ctx, api) {
    await mountOpcua(ctx.app, api);
    await ctx.app.register(opcuaRoutes, { opcua: api });
  },
  configSection: (api) => opcuaConfigSection(api.service),
  async listening(ctx, api) {
    const reserved = reservations.get(api);
    if (!api.enabled || !reserved) return;
    reservations.delete(api);
    await release(reserved);
    api.server = await UaServer.start({
      port: reserved.port,
      host: ctx.config.opcuaHost,
      pkiDir: join(ctx.dataDir, 'opcua-server-pki'),
      service: api.service,
      hub: ctx.module('datahub').hub,
      logger: ctx.logger,
      buildVersion: MILLWRIGHT_VERSION,
    });
    ctx.logger.info({ endpoint: api.server.endpointUrl }, 'opcua server listening');
  },
  async close(api) {
    const server = api.server;
    api.server = null;
    await server?.shutdown();
    api.service.close();
  },
};
