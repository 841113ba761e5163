/**
 * The edge service, composed from its modules. `startEdge` opens the stores, runs the
 * migrations, builds the HTTP app and listens; `close` stops accepting, lets in-flight requests
 * finish and closes the stores.
 */
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Database } from '../kernel/db/index.js';
import { closeGracefully, createHttpApp, listen } from '../kernel/http/server.js';
import { healthRoutes } from '../kernel/http/health.js';
import { envName } from '../kernel/config.js';
import { LogStore } from '../kernel/logging/log-store.js';
import { createLogger } from '../kernel/logging/logger.js';
import {
  AuthRepository,
  AuthService,
  authMigrations,
  authRoutes,
  installAuthHook,
  ADMIN_USERNAME,
} from './auth/index.js';
import { logsRoutes } from './logs/index.js';
import { createDevicehub, devicehubMigrations, mountDevicehub, type Devicehub } from './devicehub/index.js';
import { DataHubService, datahubMigrations, datahubRoutes } from './datahub/index.js';
import { ensureCertificate } from '../kernel/http/server.js';
import { ACQUISITION_DRIVERS, AcquisitionEngine, acquisitionRoutes } from './acquisition/index.js';
import { EDGE_API_VERSION, versionRoutes } from './versions.js';
import type { EdgeConfig } from './options.js';

export interface EdgeService {
  /** Base address, e.g. `https://localhost:8443`. */
  url: string;
  app: FastifyInstance;
  auth: AuthService;
  logger: Logger;
  logStore: LogStore;
  database: Database;
  /** The DeviceHub: driver catalogue, devices and tags (`/devicehub/v2`). */
  devicehub: Devicehub;
  /** The DataHub: the message bus, its NATS gateway and access keys. */
  datahub: DataHubService;
  /** The acquisition engine: drivers polling the DeviceHub's devices onto the DataHub. */
  acquisition: AcquisitionEngine;
  /** The first-run admin credential, when this start created the admin. */
  firstRun: { username: string; password?: string } | null;
  /** Stops accepting, finishes in-flight requests, closes the stores. Idempotent. */
  close(): Promise<void>;
}

/** Opens the edge's database (SQLite in the data directory unless a URL is configured) and migrates it. */
export async function openEdgeDatabase(
  config: Pick<EdgeConfig, 'dataDir' | 'databaseUrl'>,
): Promise<Database> {
  const database = Database.open({ url: config.databaseUrl, sqlitePath: join(config.dataDir, 'edge.db') });
  try {
    await database.migrate([authMigrations, datahubMigrations, devicehubMigrations]);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

export async function startEdge(config: EdgeConfig): Promise<EdgeService> {
  const logStore = await LogStore.open({
    dataDir: config.dataDir,
    maxEntries: config.logRetentionEntries,
    maxAgeMs: config.logRetentionDays * 24 * 3600 * 1000,
  });
  const logger = createLogger({ level: config.logLevel as 'info', store: logStore, component: 'edge' });
  let database: Database | undefined;
  let datahub: DataHubService | undefined;
  let acquisition: AcquisitionEngine | undefined;
  try {
    database = await openEdgeDatabase(config);
    // Before the admin is created: a taken DataHub port must not leave a first-run password unseen.
    datahub = await DataHubService.start({
      database,
      logger: logger.child({ component: 'edge.datahub' }),
      gateway: config.datahubGateway,
      host: config.datahubHost,
      port: config.datahubPort,
      // The edge's certificate (also with --http): remote NATS clients must use TLS.
      tls: await ensureCertificate(config.dataDir, config.tlsCert, config.tlsKey),
      trustLocal: config.datahubTrustLocal,
      maxPayload: config.datahubMaxPayload,
      maxPending: config.datahubMaxPending,
      maxPrefixes: config.datahubMaxPrefixes,
      natsUrl: config.natsUrl,
      portOption: { optionName: 'datahub-port', envName: envName('edge', 'datahub-port') },
    });
    const auth = await AuthService.open(new AuthRepository(database), {
      tokenTtl: config.tokenTtl,
      logger: logger.child({ component: 'edge.auth' }),
    });
    const admin = await auth.ensureAdmin(config.adminPassword);

    const { app, tls } = await createHttpApp({
      graphql: config,
      logger: logger.child({ component: 'edge.http' }),
      plainHttp: config.http,
      dataDir: config.dataDir,
      tlsCertFile: config.tlsCert,
      tlsKeyFile: config.tlsKey,
    });
    installAuthHook(app, auth);
    await app.register(healthRoutes, { service: 'edge', apiVersion: EDGE_API_VERSION });
    await app.register(versionRoutes);
    await app.register(authRoutes, { auth, rateLimit: config.authRateLimit, secure: !config.http });
    await app.register(logsRoutes, { store: logStore });
    const devicehub = createDevicehub(database);
    await mountDevicehub(app, devicehub);
    await app.register(datahubRoutes, { datahub, database });
    const engine = new AcquisitionEngine({
      hub: datahub.hub,
      devicehub: devicehub.service,
      drivers: ACQUISITION_DRIVERS,
      dataDir: join(config.dataDir, 'acquisition'),
      logger: logger.child({ component: 'edge.acquisition' }),
      backoffMaxMs: config.acquisitionBackoffMax,
      // Joined to a NATS cluster: the cluster's subscribers are not seen here, publish everything.
      publishValue: datahub.external ? 'always' : 'on-interest',
    });
    for (const d of ACQUISITION_DRIVERS) {
      const browse = d.browse;
      if (browse) devicehub.browse.registerBrowser(d.key, (device, driver) => browse(device, driver, engine));
    }
    await app.register(acquisitionRoutes, { engine: () => engine });
    await app.ready();

    const url = await listen(
      app,
      { host: config.host, port: config.port, optionName: 'port', envName: envName('edge', 'port') },
      tls !== null,
    );
    logger.info({ url, dataDir: config.dataDir, tls: tls ? tls.certFile : 'off' }, 'edge service listening');
    acquisition = engine;
    await engine.start();

    const db = database;
    const hub = datahub;
    let closing: Promise<void> | undefined;
    return {
      url,
      app,
      auth,
      logger,
      logStore,
      database: db,
      devicehub,
      datahub: hub,
      acquisition: engine,
      firstRun: admin.created ? { username: ADMIN_USERNAME, password: admin.generatedPassword } : null,
      close() {
        closing ??= (async () => {
          await closeGracefully(app, config.shutdownTimeout, logger);
          await engine.stop();
          await hub.close();
          logger.info('edge service stopped');
          await db.close();
          await logStore.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    await acquisition?.stop();
    await datahub?.close();
    await database?.close();
    await logStore.close();
    throw err;
  }
}
