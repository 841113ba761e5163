/**
 * The unified namespace service, composed from its modules: the identity provider (`oidc/`), MQTT
 * accounts and rules (`accounts/`), the broker (`broker/`), namespaces and topics (`namespace/`)
 * and the GraphQL API (`graphql/`). `startUns` opens the stores, runs the migrations, starts the
 * broker and listens: HTTPS (token endpoints, `/mqtt/gql`, MQTT over WebSocket at `/mqtt`,
 * activation at `/mqtt/activate`), MQTT over TCP and MQTT over TLS.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import websocket from '@fastify/websocket';
import { createWebSocketStream } from 'ws';
import { Database } from '../kernel/db/index.js';
import { createHttpApp, ensureCertificate, listen } from '../kernel/http/server.js';
import { installAuthHook } from '../kernel/http/auth-hook.js';
import { healthRoutes } from '../kernel/http/health.js';
import { mountGraphql } from '../kernel/graphql.js';
import { PortInUseError, envName } from '../kernel/config.js';
import { LogStore } from '../kernel/logging/log-store.js';
import { createLogger } from '../kernel/logging/logger.js';
import { AccountRepository, AccountService, accountMigrations, activationRoutes } from './accounts/index.js';
import {
  IdentityRepository,
  IdentityService,
  identityMigrations,
  identityRoutes,
  ADMIN_USERNAME,
} from './oidc/index.js';
import { NamespaceService, namespaceMigrations } from './namespace/index.js';
import { UnsBroker, brokerMigrations } from './broker/index.js';
import { refuseOperatorMutations, resolvers, type UnsGraphqlContext } from './graphql/index.js';
import { brokerLimits, type UnsConfig } from './options.js';

export const UNS_API_VERSION = '1';

export interface UnsService {
  /** Base address of HTTPS (token endpoints, /mqtt/gql, wss /mqtt), e.g. `https://localhost:9443`. */
  url: string;
  /** `mqtt://host:port`, `mqtts://host:port`, `wss://host:port/mqtt`. */
  mqttUrl: string;
  mqttsUrl: string;
  wsUrl: string;
  app: FastifyInstance;
  broker: UnsBroker;
  accounts: AccountService;
  identity: IdentityService;
  namespaces: NamespaceService;
  database: Database;
  logger: Logger;
  /** The first-run administrator, when this start created it (with the generated password). */
  firstRun: { username: string; password?: string } | null;
  /** What `pickFreePorts` changed, for people (`mqtt-port 1883 is taken; listening on 40123`). */
  notes: string[];
  close(): Promise<void>;
}

export interface StartUnsOptions {
  /** Options whose port, when taken, is replaced by a free one (for `millwright up`). */
  pickFreePorts?: readonly ('port' | 'mqtt-port' | 'mqtts-port')[];
}

const MIGRATIONS = [identityMigrations, accountMigrations, namespaceMigrations, brokerMigrations];

/** Opens the UNS database (SQLite in the data directory unless a URL is configured) and migrates it. */
export async function openUnsDatabase(config: Pick<UnsConfig, 'dataDir' | 'databaseUrl'>): Promise<Database> {
  const database = Database.open({ url: config.databaseUrl, sqlitePath: join(config.dataDir, 'uns.db') });
  try {
    await database.migrate(MIGRATIONS);
  } catch (err) {
    await database.close();
    throw err;
  }
  return database;
}

export async function startUns(config: UnsConfig, options: StartUnsOptions = {}): Promise<UnsService> {
  const logStore = await LogStore.open({
    dataDir: config.dataDir,
    maxEntries: config.logRetentionEntries,
    maxAgeMs: config.logRetentionDays * 24 * 3600 * 1000,
  });
  const logger = createLogger({ level: config.logLevel as 'info', store: logStore, component: 'uns' });
  const cleanups: (() => Promise<void> | void)[] = [() => logStore.close()];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn();
  };
  try {
    const database = await openUnsDatabase(config);
    cleanups.push(() => database.close());
    const identity = await IdentityService.open(new IdentityRepository(database.db), {
      clientId: config.clientId,
      tokenLifetime: config.tokenLifetime,
      logger: logger.child({ component: 'uns.oidc' }),
    });
    const admin = await identity.ensureAdmin(config.adminPassword);
    const accounts = new AccountService(
      new AccountRepository(database.db),
      logger.child({ component: 'uns.accounts' }),
    );
    await accounts.refresh();
    const namespaces = new NamespaceService(database.db, {
      maxTopics: config.maxTopics,
      maxTopicTreeBytes: config.maxTopicTreeBytes,
      logger: logger.child({ component: 'uns.namespace' }),
    });
    await namespaces.load();
    const topics = namespaces.topics;
    const broker = await UnsBroker.start({
      accounts,
      database,
      logger: logger.child({ component: 'uns.broker' }),
      redisUrl: config.redisUrl,
      onPublish: (packet) => topics.record(packet.topic, packet.payload as Buffer, packet.retain),
      limits: brokerLimits(config),
    });
    cleanups.push(() => broker.close());
    // Changes made by another process (the CLI, another node on the same database) within a second.
    const refresher = setInterval(() => {
      accounts.refresh().catch((err: unknown) => logger.warn({ err }, 'accounts refresh failed'));
    }, 1000);
    refresher.unref();
    cleanups.push(() => clearInterval(refresher));

    const { app, tls } = await createHttpApp({
      logger: logger.child({ component: 'uns.http' }),
      plainHttp: config.http,
      dataDir: config.dataDir,
      tlsCertFile: config.tlsCert,
      tlsKeyFile: config.tlsKey,
    });
    cleanups.push(() => app.close());
    installAuthHook(app, { authenticate: (request) => identity.authenticate(request.headers.authorization) });
    await app.register(healthRoutes, { service: 'uns', apiVersion: UNS_API_VERSION });
    await app.register(identityRoutes, { identity, rateLimit: config.authRateLimit });

    // MQTT over WebSocket (the `mqtt` subprotocol); the broker authenticates the connection.
    await app.register(websocket, { options: { maxPayload: config.maxPacketSize + 65_536 } });
    app.get('/mqtt', { websocket: true, config: { permission: 'public' } }, (socket, request) => {
      broker.handle(createWebSocketStream(socket), request.raw);
    });

    const addresses: UnsGraphqlContext['addresses'] = { url: '', mqttPort: null, mqttsPort: null };
    await app.register(activationRoutes, {
      accounts,
      defaultRules: (path: string) => namespaces.defaultRulesFor(path),
      addresses,
      rateLimit: config.authRateLimit,
    });

    app.addHook('preHandler', refuseOperatorMutations);
    await mountGraphql<UnsGraphqlContext>(app, {
      path: '/mqtt/gql',
      schema: readFileSync(new URL('./graphql/schema.graphql', import.meta.url), 'utf8'),
      resolvers,
      context: () => ({ accounts, broker, identity, namespaces, addresses }),
    });
    await app.ready();

    const notes: string[] = [];
    const pick = new Set(options.pickFreePorts ?? []);
    const url = await withFreePort('port', config.port, pick, notes, (port) =>
      listen(
        app,
        { host: config.host, port, optionName: 'port', envName: envName('uns', 'port') },
        tls !== null,
      ),
    );
    const mqttTls = await ensureCertificate(config.dataDir, config.tlsCert, config.tlsKey);
    const mqttPort = await withFreePort('mqtt-port', config.mqttPort, pick, notes, (port) =>
      listenBroker(broker, config.host, port, 'mqtt-port'),
    );
    const mqttsPort = await withFreePort('mqtts-port', config.mqttsPort, pick, notes, (port) =>
      listenBroker(broker, config.host, port, 'mqtts-port', mqttTls),
    );
    addresses.url = url;
    addresses.mqttPort = mqttPort;
    addresses.mqttsPort = mqttsPort;
    const host = new URL(url).hostname;
    const service: UnsService = {
      url,
      mqttUrl: `mqtt://${host}:${mqttPort}`,
      mqttsUrl: `mqtts://${host}:${mqttsPort}`,
      wsUrl: `${url.replace(/^http/, 'ws')}/mqtt`,
      app,
      broker,
      accounts,
      identity,
      namespaces,
      database,
      logger,
      firstRun: admin.created ? { username: ADMIN_USERNAME, password: admin.generatedPassword } : null,
      notes,
      close: () =>
        (closing ??= (async () => {
          await cleanup();
          logger.info('unified namespace service stopped');
        })()),
    };
    let closing: Promise<void> | undefined;
    logger.info(
      { url, mqttPort, mqttsPort, dataDir: config.dataDir, redis: config.redisUrl ? 'on' : 'off' },
      'unified namespace service listening',
    );
    return service;
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function listenBroker(
  broker: UnsBroker,
  host: string,
  port: number,
  option: string,
  tls?: { cert: string; key: string },
): Promise<number> {
  try {
    return await broker.listen(host, port, tls);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new PortInUseError(
        `port ${port} is already in use; choose another with --${option} or ${envName('uns', option)}`,
      );
    }
    throw err;
  }
}

async function withFreePort<T>(
  option: 'port' | 'mqtt-port' | 'mqtts-port',
  port: number,
  pick: Set<string>,
  notes: string[],
  fn: (port: number) => Promise<T>,
): Promise<T> {
  try {
    return await fn(port);
  } catch (err) {
    if (!(err instanceof PortInUseError) || !pick.has(option) || port === 0) throw err;
    const result = await fn(0);
    notes.push(`${option} ${port} is taken; the UNS takes a free one instead`);
    return result;
  }
}
