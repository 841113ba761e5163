/**
 * The edge manager: a list of modules run by the kernel's service shell. Identity (`auth/`), the
 * admin console API on its own port (`admin/`), the fleet (`fleet/`), the edge links (`link/`)
 * the bridge to each edge's API (`bridge/`), asynchronous tasks (`tasks/`), templates applied to
 * many edges (`templates/`) and the remote image pull (`registry/`).
 *
 * `buildManagerApp` opens the stores and mounts every module without binding a port (tests
 * `inject`); `startManager` also listens on the main and the admin console ports.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Database } from '../kernel/db/index.js';
import {
  ServiceShell,
  openServiceDatabase,
  type ServiceDefinition,
  type ShellOptions,
} from '../kernel/service/index.js';
import type { TlsMaterial } from '../kernel/http/server.js';
import { managerAuthModule, type ManagerAuthService } from './auth/index.js';
import { adminModule, MANAGER_API_VERSION } from './admin/index.js';
import { fleetModule } from './fleet/module.js';
import type { FleetService } from './fleet/service.js';
import { linkModule, type LinkHub } from './link/index.js';
import { bridgeModule } from './bridge/module.js';
import { tasksModule } from './tasks/module.js';
import type { TaskService } from './tasks/service.js';
import { templatesModule } from './templates/module.js';
import type { TemplateService } from './templates/service.js';
import { registryModule } from './registry/index.js';
import type { ManagerModules } from './modules.js';
import type { ManagerConfig } from './options.js';

export { MANAGER_API_VERSION };

/** The manager, module by module, in start order (a module comes after those it requires). */
export const MANAGER_MODULES = [
  managerAuthModule,
  adminModule,
  fleetModule,
  linkModule,
  bridgeModule,
  tasksModule,
  templatesModule,
  registryModule,
] as const;

export const MANAGER_SERVICE: ServiceDefinition<ManagerConfig, ManagerModules> = {
  name: 'manager',
  label: 'edge manager',
  apiVersion: MANAGER_API_VERSION,
  modules: MANAGER_MODULES,
};

export type ManagerShell = ServiceShell<ManagerConfig, ManagerModules>;

export interface ManagerService {
  /** Base address of the main API and the edge link, e.g. `https://localhost:8444`. */
  url: string;
  /** Base address of the admin console API, e.g. `https://localhost:8446`. */
  adminUrl: string;
  shell: ManagerShell;
  app: FastifyInstance;
  adminApp: FastifyInstance;
  auth: ManagerAuthService;
  fleet: FleetService;
  links: LinkHub;
  tasks: TaskService;
  templates: TemplateService;
  database: Database;
  logger: Logger;
  tls: TlsMaterial | null;
  /** Ports that were taken and replaced by free ones (`millwright up`), for people. */
  notes: string[];
  close(): Promise<void>;
}

/** Opens the manager's database (SQLite in the data directory unless a URL is configured), migrated. */
export function openManagerDatabase(
  config: Pick<ManagerConfig, 'dataDir' | 'databaseUrl'>,
): Promise<Database> {
  return openServiceDatabase(MANAGER_SERVICE, config);
}

/** The manager with every module started and mounted, not listening: for `app.inject`. */
export async function buildManagerApp(
  config: ManagerConfig,
  options: ShellOptions = {},
): Promise<ManagerShell> {
  const shell = await ServiceShell.build(MANAGER_SERVICE, config, options);
  try {
    await shell.module('admin').app.ready();
  } catch (err) {
    await shell.close();
    throw err;
  }
  return shell;
}

export async function startManager(
  config: ManagerConfig,
  options: ShellOptions = {},
): Promise<ManagerService> {
  const shell = await buildManagerApp(config, options);
  const url = await shell.listen();
  const admin = shell.module('admin');
  return {
    url,
    adminUrl: admin.url,
    shell,
    app: shell.app,
    adminApp: admin.app,
    auth: shell.module('auth'),
    fleet: shell.module('fleet'),
    links: shell.module('link'),
    tasks: shell.module('tasks'),
    templates: shell.module('templates'),
    database: shell.database,
    logger: shell.logger,
    tls: shell.tls,
    notes: shell.ports.notes,
    close: () => shell.close(),
  };
}
