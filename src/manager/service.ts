/**
 * The edge manager: a list of modules run by the kernel's service shell. Identity (`auth/`), the
 * admin console API on its own port (`admin/`), the fleet (`fleet/`), the edge links (`link/`),
 * the bridge to each edge's API (`bridge/`), high availability (`ha/`), asynchronous tasks
 * (`tasks/`), templates applied to many edges (`templates/`), the remote image pull (`registry/`),
 * the audit trail (`audit/`), platform rules, incidents and their notifications (`alerts/`), the
 * marketplace catalogue under `/mpcs/` (`marketplace/`), the asset hub, another manager's
 * catalogue imported from (`assethub/`), CA certificates (`certificates/`), edge logs across the
 * fleet (`edge-logs/`), instance settings (`settings/`), the asset hierarchy with branch
 * permissions (`hierarchy/`), fleet twin models deployed through it (`twins/`) and the web
 * console (`console/`).
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
  serviceConfigWith,
  serviceOptionSpecs,
  type ModuleOptions,
  type ServiceDefinition,
  type ShellOptions,
} from '../kernel/service/index.js';
import { toConfigObject, type ConfigValues, type OptionSpec } from '../kernel/config.js';
import type { TlsMaterial } from '../kernel/http/server.js';
import { managerAuthModule, type ManagerAuthService } from './auth/index.js';
import { adminModule, MANAGER_API_VERSION } from './admin/index.js';
import { fleetModule } from './fleet/index.js';
import type { FleetService } from './fleet/index.js';
import { linkModule, type LinkHub } from './link/index.js';
import { bridgeModule } from './bridge/index.js';
import { haModule } from './ha/index.js';
import { tasksModule } from './tasks/index.js';
import type { TaskService } from './tasks/index.js';
import { templatesModule } from './templates/index.js';
import type { TemplateService } from './templates/index.js';
import { registryModule } from './registry/index.js';
import { auditModule, type AuditService } from './audit/index.js';
import { alertsModule } from './alerts/index.js';
import { marketplaceModule } from './marketplace/index.js';
import { assetHubModule } from './assethub/index.js';
import { managerConsoleModule } from './console/index.js';
import { certificatesModule } from './certificates/index.js';
import { edgeLogsModule } from './edge-logs/index.js';
import { settingsModule } from './settings/index.js';
import { hierarchyModule } from './hierarchy/index.js';
import { twinsModule } from './twins/index.js';
import type { ManagerModules } from './modules.js';
import { MANAGER_SHELL_OPTIONS, type ManagerShellConfig } from './options.js';

export { MANAGER_API_VERSION };

/** The manager, module by module, in start order (a module comes after those it requires). */
export const MANAGER_MODULES = [
  managerAuthModule,
  adminModule,
  fleetModule,
  linkModule,
  bridgeModule,
  haModule, // high availability: pairs of edges and the lease of the active role
  tasksModule,
  templatesModule,
  registryModule,
  auditModule, // the audit trail: records every mutating call of the modules above and below
  alertsModule,
  marketplaceModule, // the marketplace catalogue (/mpcs/) and installs on edges as tasks
  assetHubModule, // another manager's catalogue browsed and imported from (/api/v1/asset-hub)
  certificatesModule, // CA certificates, synchronised to the edges' trust stores as tasks
  edgeLogsModule, // edge logs across the fleet and device log forwarding, over the links
  settingsModule, // instance settings: licence type, instance mode, certificates
  hierarchyModule, // the asset hierarchy per company, with branch permissions
  twinsModule, // fleet twin models (DT2), deployed to the edges under a branch as tasks
  managerConsoleModule, // the web console at / on the main and the admin ports
] as const;

export const MANAGER_SERVICE: ServiceDefinition<ManagerShellConfig, ManagerModules> = {
  name: 'manager',
  label: 'edge manager',
  apiVersion: MANAGER_API_VERSION,
  options: MANAGER_SHELL_OPTIONS,
  modules: MANAGER_MODULES,
};

/** The manager's whole configuration: the shell's options and every module's, typed from their schemas. */
export type ManagerConfig = ManagerShellConfig & ModuleOptions<typeof MANAGER_MODULES>;

/** Every option of the manager (flags, `MILLWRIGHT_MANAGER_*`, config-file keys), shell first, then by module. */
export const MANAGER_OPTIONS: readonly OptionSpec[] = serviceOptionSpecs(MANAGER_SERVICE);

export function toManagerConfig(values: ConfigValues): ManagerConfig {
  return toConfigObject<ManagerConfig>(values);
}

/** The defaults, with `overrides` on top: for tests and for composing services in one process. */
export function managerConfigWith(overrides: Partial<ManagerConfig>): ManagerConfig {
  return serviceConfigWith<ManagerConfig>(MANAGER_SERVICE, overrides);
}

export type ManagerShell = ServiceShell<ManagerShellConfig, ManagerModules>;

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
  audit: AuditService;
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
    audit: shell.module('audit'),
    database: shell.database,
    logger: shell.logger,
    tls: shell.tls,
    notes: shell.ports.notes,
    close: () => shell.close(),
  };
}
