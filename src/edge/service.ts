/**
 * The edge service: a list of modules run by the kernel's service shell. Adding a module is one
 * line in `EDGE_MODULES` (its API type is declared in its own folder, see `modules.ts`).
 *
 * `buildEdgeApp` opens the stores and mounts every module without binding a port (tests `inject`
 * into its `app`); `startEdge` also listens.
 */
import { loopWatch } from '../kernel/loop-watch.js';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Database } from '../kernel/db/index.js';
import type { LogStore } from '../kernel/logging/log-store.js';
import {
  ServiceShell,
  openServiceDatabase,
  serviceConfigWith,
  serviceOptionSpecs,
  type ModuleOptions,
  type ServiceDefinition,
  type ShellOptions,
} from '../kernel/service/index.js';
import type { ConfigValues, OptionSpec } from '../kernel/config.js';
import { toConfigObject } from '../kernel/config.js';
import { authModule, type AuthService } from './auth/index.js';
import { versionsModule, EDGE_API_VERSION } from './versions/index.js';
import { logsModule } from './logs/index.js';
import { trustModule } from './trust/index.js';
import { datahubModule, type DataHubService } from './datahub/index.js';
import { devicehubModule, type Devicehub } from './devicehub/index.js';
import { acquisitionModule, type AcquisitionEngine } from './acquisition/index.js';
import { dmModule } from './dm/index.js';
import { networkModule } from './network/index.js';
import { logForwardingModule } from './log-forwarding/index.js';
import { configModule } from './config/index.js';
import { twinsModule } from './twins/index.js';
import { integrationsModule } from './integrations/index.js';
import { historyModule } from './history/index.js';
import { opcuaModule } from './opcua/index.js';
import { analyticsModule } from './analytics/index.js';
import { mcpModule } from './mcp/index.js';
import { appsModule } from './apps/index.js';
import { cloudstorageModule } from './cloudstorage/index.js';
import { consoleModule } from './console/index.js';
import type { EdgeModules } from './modules.js';
import { EDGE_SHELL_OPTIONS, type EdgeShellConfig } from './options.js';

/** The edge, module by module, in start order (a module comes after those it requires). */
export const EDGE_MODULES = [
  authModule,
  versionsModule,
  logsModule,
  trustModule, // CA certificates synchronised by the manager, trusted by outbound TLS
  datahubModule,
  devicehubModule,
  dmModule, // before acquisition: its high-availability role fences polling
  acquisitionModule,
  networkModule,
  logForwardingModule,
  opcuaModule,
  twinsModule,
  integrationsModule,
  historyModule, // tag history at /history (DuckDB in the data directory, or PostgreSQL)
  analyticsModule,
  mcpModule, // the edge as an MCP server at /mcp (tools and resources for assistants)
  appsModule,
  cloudstorageModule,
  configModule,
  consoleModule, // the web console at / (dist/console/edge), unless --console=false
] as const;

export const EDGE_SERVICE: ServiceDefinition<EdgeShellConfig, EdgeModules> = {
  name: 'edge',
  label: 'edge service',
  apiVersion: EDGE_API_VERSION,
  options: EDGE_SHELL_OPTIONS,
  modules: EDGE_MODULES,
};

/** The edge's whole configuration: the shell's options and every module's, typed from their schemas. */
export type EdgeConfig = EdgeShellConfig & ModuleOptions<typeof EDGE_MODULES>;

/** Every option of the edge (flags, `MILLWRIGHT_EDGE_*`, config-file keys), shell first, then by module. */
export const EDGE_OPTIONS: readonly OptionSpec[] = serviceOptionSpecs(EDGE_SERVICE);

export function toEdgeConfig(values: ConfigValues): EdgeConfig {
  return toConfigObject<EdgeConfig>(values);
}

/** The defaults, with `overrides` on top: for tests and for composing services in one process. */
export function edgeConfigWith(overrides: Partial<EdgeConfig>): EdgeConfig {
  return serviceConfigWith<EdgeConfig>(EDGE_SERVICE, overrides);
}

export type EdgeShell = ServiceShell<EdgeShellConfig, EdgeModules>;

export interface EdgeService {
  /** Base address, e.g. `https://localhost:8443`. */
  url: string;
  shell: EdgeShell;
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
  /** Ports that were taken and replaced by free ones (`millwright up`), for people. */
  notes: string[];
  /** Stops accepting, finishes in-flight requests, closes the modules and the stores. Idempotent. */
  close(): Promise<void>;
}

/** Opens the edge's database (SQLite in the data directory unless a URL is configured) and migrates it. */
export function openEdgeDatabase(config: Pick<EdgeConfig, 'dataDir' | 'databaseUrl'>): Promise<Database> {
  return openServiceDatabase(EDGE_SERVICE, config);
}

/** The edge with every module started and mounted, not listening: for `app.inject`. */
export function buildEdgeApp(config: EdgeConfig, options: ShellOptions = {}): Promise<EdgeShell> {
  return ServiceShell.build(EDGE_SERVICE, config, options);
}

export async function startEdge(config: EdgeConfig, options: ShellOptions = {}): Promise<EdgeService> {
  loopWatch.start();
  const shell = await buildEdgeApp(config, options);
  const url = await shell.listen();
  loopWatch.markReady();
  const auth = shell.module('auth');
  return {
    url,
    shell,
    app: shell.app,
    auth: auth.service,
    logger: shell.logger,
    logStore: shell.logStore,
    database: shell.database,
    devicehub: shell.module('devicehub'),
    datahub: shell.module('datahub'),
    acquisition: shell.module('acquisition'),
    firstRun: auth.firstRun,
    notes: shell.ports.notes,
    close: () => shell.close(),
  };
}
