/** The DataHub on the edge's seam: the bus, its NATS gateway (port `datahub-port`), access keys. */
import { ensureCertificate } from '../../kernel/http/server.js';
import type { EdgeModule } from '../modules.js';
import { datahubOptions } from './options.js';
import { DatahubConfigSection } from './config-section.js';
import { datahubMigrations } from './migrations/index.js';
import { datahubRoutes } from './routes.js';
import { DataHubService } from './service.js';

declare module '../modules.js' {
  interface EdgeModules {
    datahub: DataHubService;
  }
}

export const datahubModule: EdgeModule<'datahub', typeof datahubOptions> = {
  name: 'datahub',
  options: datahubOptions,
  migrations: datahubMigrations,
  async start(ctx) {
    const config = ctx.config;
    // The edge's certificate (also with --http): remote NATS clients must use TLS.
    const tls = await ensureCertificate(config.dataDir, config.tlsCert, config.tlsKey);
    const start = (port: number) =>
      DataHubService.start({
        database: ctx.database,
        logger: ctx.logger,
        gateway: config.datahubGateway,
        host: config.datahubHost,
        port,
        tls,
        trustLocal: config.datahubTrustLocal,
        maxPayload: config.datahubMaxPayload,
        maxPending: config.datahubMaxPending,
        maxPrefixes: config.datahubMaxPrefixes,
        natsUrl: config.natsUrl,
      });
    if (!config.datahubGateway) return start(config.datahubPort);
    return ctx.ports.bind('datahub-port', config.datahubPort, start, (d) =>
      Number(new URL(d.gateway!.url).port),
    );
  },
  mount: (ctx, datahub) => ctx.app.register(datahubRoutes, { datahub, database: ctx.database }),
  configSection: (datahub) => new DatahubConfigSection(datahub.keys.repo, datahub.keys),
  close: (datahub) => datahub.close(),
};
