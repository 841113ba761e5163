/**
 * The unified namespace service: a list of modules run by the kernel's service shell. The
 * identity provider (`identity/`), namespaces and the topic tree (`namespace/`), MQTT accounts and
 * rules (`accounts/`), the broker (`broker/`) and the GraphQL API (`graphql/`). It serves HTTPS
 * (token endpoints, `/mqtt/gql`, MQTT over WebSocket at `/mqtt`, activation at `/mqtt/activate`),
 * MQTT over TCP and MQTT over TLS.
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
import { accountsModule, type AccountService } from './accounts/index.js';
import { identityModule, type IdentityService } from './identity/index.js';
import { namespaceModule, type NamespaceService } from './namespace/index.js';
import { brokerModule, type UnsBroker } from './broker/index.js';
import { graphqlModule } from './graphql/index.js';
import { consoleModule } from './console/index.js';
import type { UnsModules } from './modules.js';
import { UNS_SHELL_OPTIONS, type UnsShellConfig } from './options.js';

export const UNS_API_VERSION = '1';

/** The UNS, module by module, in start order (a module comes after those it requires). */
export const UNS_MODULES = [
  identityModule,
  namespaceModule,
  accountsModule,
  brokerModule,
  graphqlModule,
  consoleModule,
] as const;

export const UNS_SERVICE: ServiceDefinition<UnsShellConfig, UnsModules> = {
  name: 'uns',
  label: 'unified namespace service',
  apiVersion: UNS_API_VERSION,
  options: UNS_SHELL_OPTIONS,
  modules: UNS_MODULES,
};

/** The UNS's whole configuration: the shell's options and every module's, typed from their schemas. */
export type UnsConfig = UnsShellConfig & ModuleOptions<typeof UNS_MODULES>;

/** Every option of the UNS (flags, `MILLWRIGHT_UNS_*`, config-file keys), shell first, then by module. */
export const UNS_OPTIONS: readonly OptionSpec[] = serviceOptionSpecs(UNS_SERVICE);

export function toUnsConfig(values: ConfigValues): UnsConfig {
  return toConfigObject<UnsConfig>(values);
}

/** The defaults, with `overrides` on top: for tests and for composing services in one process. */
export function unsConfigWith(overrides: Partial<UnsConfig>): UnsConfig {
  return serviceConfigWith<UnsConfig>(UNS_SERVICE, overrides);
}

export type UnsShell = ServiceShell<UnsShellConfig, UnsModules>;

export interface UnsService {
  /** Base address of HTTPS (token endpoints, /mqtt/gql, wss /mqtt), e.g. `https://localhost:9443`. */
  url: string;
  /** `mqtt://host:port`, `mqtts://host:port`, `wss://host:port/mqtt`. */
  mqttUrl: string;
  mqttsUrl: string;
  wsUrl: string;
  shell: UnsShell;
  app: FastifyInstance;
  broker: UnsBroker;
  accounts: AccountService;
  identity: IdentityService;
  namespaces: NamespaceService;
  database: Database;
  logger: Logger;
  /** The first-run administrator, when this start created it (with the generated password). */
  firstRun: { username: string; password?: string } | null;
  /** Ports that were taken and replaced by free ones (`millwright up`), for people. */
  notes: string[];
  close(): Promise<void>;
}

/** Options whose port, when taken, is replaced by a free one (for `millwright up`). */
export type StartUnsOptions = ShellOptions;

/** Opens the UNS database (SQLite in the data directory unless a URL is configured) and migrates it. */
export function openUnsDatabase(config: Pick<UnsConfig, 'dataDir' | 'databaseUrl'>): Promise<Database> {
  return openServiceDatabase(UNS_SERVICE, config);
}

/** The UNS with every module started and mounted, not listening: for `app.inject`. */
export function buildUnsApp(config: UnsConfig, options: ShellOptions = {}): Promise<UnsShell> {
  return ServiceShell.build(UNS_SERVICE, config, options);
}

export async function startUns(config: UnsConfig, options: StartUnsOptions = {}): Promise<UnsService> {
  const shell = await buildUnsApp(config, options);
  const url = await shell.listen();
  const host = new URL(url).hostname;
  const identity = shell.module('identity');
  return {
    url,
    mqttUrl: `mqtt://${host}:${shell.ports.bound['mqtt-port']}`,
    mqttsUrl: `mqtts://${host}:${shell.ports.bound['mqtts-port']}`,
    wsUrl: `${url.replace(/^http/, 'ws')}/mqtt`,
    shell,
    app: shell.app,
    broker: shell.module('broker'),
    accounts: shell.module('accounts'),
    identity: identity.service,
    namespaces: shell.module('namespace'),
    database: shell.database,
    logger: shell.logger,
    firstRun: identity.firstRun,
    notes: shell.ports.notes,
    close: () => shell.close(),
  };
}
