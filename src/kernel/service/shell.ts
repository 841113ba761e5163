/**
 * The kernel service shell: what every service (edge, UNS, manager) is made of besides its
 * modules. It opens the log store and the logger, the database with the modules' migrations and
 * the HTTP app; starts and mounts the modules in list order; binds the ports under one free-port
 * policy; and closes everything in reverse order through one cleanup stack, also when start-up
 * fails half way.
 *
 * `ServiceShell.build` stops before any port is bound (tests `inject` into `shell.app`);
 * `listen` binds the HTTP port and tells the modules that the service is up.
 */
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { TObject } from '@sinclair/typebox';
import { configWith } from '../config.js';
import { serviceOptionSpecs, type ShellConfig } from './options.js';
import { openServiceDatabase } from './database.js';
import { LogStore } from '../logging/log-store.js';
import { createLogger } from '../logging/logger.js';
import { closeGracefully, createHttpApp, type TlsMaterial } from '../http/server.js';
import { healthRoutes } from '../http/health.js';
import { CleanupStack } from './cleanup.js';
import { discardDestination, prettyDestination, resolveLogFormat } from '../logging/pretty.js';
import { DataDirLock } from './data-dir-lock.js';
import { PortPolicy } from './ports.js';
import type { ModuleContext, ModuleList, ServiceModule } from './module.js';
import type { ConfigSection } from './config-section.js';

/** Moved to options.ts and database.ts (light: the CLI reads them without the shell); exported here as before. */
export { serviceOptionSpecs, openServiceDatabase };

export interface ServiceDefinition<Config extends ShellConfig, Modules> {
  /** `edge`, `uns`, `manager`: the logger's component, the database file, the variables' prefix. */
  name: string;
  /** For people and logs: `edge service`. */
  label: string;
  /** The API line answered by `/version`. */
  apiVersion: string;
  /** The shell's own options (`shellOptions(...)`, and `GRAPHQL_OPTIONS` when a module mounts GraphQL). */
  options: TObject;
  modules: ModuleList<Config, Modules>;
}

/** A service's config: every option's default with `overrides` on top (tests, services composed in one process). */
export function serviceConfigWith<T>(
  definition: Parameters<typeof serviceOptionSpecs>[0],
  overrides: Partial<T>,
): T {
  return configWith<T>(serviceOptionSpecs(definition), overrides);
}

export interface ShellOptions {
  /** Options whose default port, when taken, is replaced by a free one (`millwright up`). */
  pickFreePorts?: Iterable<string>;
}

let mounting: string | undefined;

/**
 * The module whose `mount` is running (undefined otherwise): an `onRoute` hook reads it to learn
 * which module a route belongs to (the manager's audit trail names the module of each record).
 */
export function mountingModule(): string | undefined {
  return mounting;
}

export class ServiceShell<Config extends ShellConfig, Modules> {
  readonly definition: ServiceDefinition<Config, Modules>;
  readonly config: Config;
  readonly logger: Logger;
  readonly logStore: LogStore;
  readonly database: Database;
  readonly app: FastifyInstance;
  readonly tls: TlsMaterial | null;
  readonly ports: PortPolicy;
  #url = '';
  readonly #apis = new Map<string, unknown>();
  readonly #contexts = new Map<string, ModuleContext<Config, Modules>>();
  #sections: ConfigSection[] | undefined;
  readonly #cleanup: CleanupStack;
  #closing: Promise<void> | undefined;

  private constructor(
    definition: ServiceDefinition<Config, Modules>,
    config: Config,
    parts: {
      logger: Logger;
      logStore: LogStore;
      database: Database;
      app: FastifyInstance;
      tls: TlsMaterial | null;
      ports: PortPolicy;
      cleanup: CleanupStack;
    },
  ) {
    this.definition = definition;
    this.config = config;
    this.logger = parts.logger;
    this.logStore = parts.logStore;
    this.database = parts.database;
    this.app = parts.app;
    this.tls = parts.tls;
    this.ports = parts.ports;
    this.#cleanup = parts.cleanup;
  }

  /** Opens the stores, starts and mounts every module, readies the app; binds no port of its own. */
  static async build<Config extends ShellConfig, Modules>(
    definition: ServiceDefinition<Config, Modules>,
    config: Config,
    options: ShellOptions = {},
  ): Promise<ServiceShell<Config, Modules>> {
    checkOrder(definition.modules);
    const cleanup = new CleanupStack();
    // First: a second process on the same directory stops before it touches anything in it.
    const lock = DataDirLock.acquire(config.dataDir, definition.name);
    cleanup.defer('data directory lock', () => lock.release());
    let logStore: LogStore;
    try {
      logStore = await LogStore.open({
        dataDir: config.dataDir,
        maxEntries: config.logRetentionEntries,
        maxAgeMs: config.logRetentionDays * 24 * 3600 * 1000,
      });
    } catch (err) {
      lock.release();
      throw err;
    }
    cleanup.defer('log store', () => logStore.close());
    const logFormat = resolveLogFormat(config.logFormat ?? 'json');
    const logger = createLogger({
      level: config.logLevel as 'info',
      store: logStore,
      component: definition.name,
      ...(logFormat === 'pretty' ? { destination: prettyDestination() } : {}),
      ...(logFormat === 'none' ? { destination: discardDestination } : {}),
    });
    let shell: ServiceShell<Config, Modules> | undefined;
    try {
      const database = await openServiceDatabase(definition, config);
      cleanup.defer('database', () => database.close());
      cleanup.defer('stopped', () => logger.info(`${definition.label} stopped`));
      const { app, tls } = await createHttpApp({
        graphql: config,
        limits: config,
        logger: logger.child({ component: `${definition.name}.http` }),
        plainHttp: config.http,
        dataDir: config.dataDir,
        tlsCertFile: config.tlsCert,
        tlsKeyFile: config.tlsKey,
      });
      // Closed first (stop accepting, let in-flight requests finish), then the modules.
      const ports = new PortPolicy({
        service: definition.name,
        label: definition.label,
        pickFree: options.pickFreePorts ?? [],
        memoryFile: join(config.dataDir, 'ports.json'),
      });
      shell = new ServiceShell(definition, config, { logger, logStore, database, app, tls, ports, cleanup });
      await app.register(healthRoutes, { service: definition.name, apiVersion: definition.apiVersion });
      for (const module of definition.modules) await shell.#start(module);
      for (const module of definition.modules) {
        mounting = module.name;
        try {
          await module.mount?.(shell.#context(module), shell.#api(module));
        } finally {
          mounting = undefined;
        }
      }
      await app.ready();
      cleanup.defer('http', () => closeGracefully(app, config.shutdownTimeout, logger).then(() => undefined));
      return shell;
    } catch (err) {
      await cleanup.close(logger).catch(() => undefined);
      throw err;
    }
  }

  /** The base address of the HTTP API (empty before `listen`). */
  get url(): string {
    return this.#url;
  }

  /** The API of a module of this service. */
  module<K extends keyof Modules>(name: K): Modules[K] {
    if (!this.#apis.has(name as string))
      throw new Error(`no module "${String(name)}" in ${this.definition.label}`);
    return this.#apis.get(name as string) as Modules[K];
  }

  /**
   * The configuration section of every started module that has one, in list order (built once,
   * on first call; a module that has not started yet is left out until then).
   */
  sections(): ConfigSection[] {
    if (this.#sections) return this.#sections;
    const out: ConfigSection[] = [];
    let complete = true;
    for (const module of this.definition.modules) {
      if (!module.configSection) continue;
      if (!this.#apis.has(module.name)) {
        complete = false;
        continue;
      }
      out.push(module.configSection(this.#api(module)));
    }
    const names = new Set<string>();
    for (const s of out) {
      if (names.has(s.name)) throw new Error(`configuration section "${s.name}" is given twice`);
      names.add(s.name);
    }
    if (complete) this.#sections = out;
    return out;
  }

  /** Binds the HTTP port (under the free-port policy) and tells each module the service is up. */
  async listen(): Promise<string> {
    try {
      const secure = this.tls !== null;
      const app = this.app;
      const host = this.config.host;
      this.#url = await this.ports.bind(
        'port',
        this.config.port,
        async (port) => {
          await app.listen({ host, port });
          const addr = app.server.address();
          const bound = typeof addr === 'object' && addr ? addr.port : port;
          const name = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
          return `${secure ? 'https' : 'http'}://${name.includes(':') ? `[${name}]` : name}:${bound}`;
        },
        (url) => Number(new URL(url).port),
      );
      for (const module of this.definition.modules) {
        await module.listening?.(this.#context(module), this.#api(module));
      }
      this.logger.info(
        {
          url: this.#url,
          dataDir: this.config.dataDir,
          ports: this.ports.bound,
          tls: this.tls ? this.tls.certFile : 'off',
        },
        `${this.definition.label} listening`,
      );
      return this.#url;
    } catch (err) {
      await this.close().catch(() => undefined);
      throw err;
    }
  }

  /** Stops accepting, finishes in-flight requests, closes the modules and the stores. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#cleanup.close(this.logger);
    return this.#closing;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a module of any name of the list (see ModuleList)
  async #start(module: ServiceModule<Config, Modules, any>): Promise<void> {
    const ctx = this.#context(module);
    const api = await module.start(ctx);
    this.#apis.set(module.name, api);
    if (module.close) {
      const close = module.close.bind(module);
      this.#cleanup.defer(module.name, () => close(api));
    }
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a module of any name of the list (see ModuleList), and its API of that name's type
  #api(module: ServiceModule<Config, Modules, any>): any {
    return this.#apis.get(module.name);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a module of any name of the list (see ModuleList)
  #context(module: ServiceModule<Config, Modules, any>): ModuleContext<Config, Modules> {
    let ctx = this.#contexts.get(module.name);
    if (ctx) return ctx;
    const allowed = new Set<string>(module.requires ?? []);
    ctx = {
      service: this.definition.name,
      config: this.config,
      dataDir: this.config.dataDir,
      logger: this.logger.child({ component: `${this.definition.name}.${module.name}` }),
      logStore: this.logStore,
      database: this.database,
      app: this.app,
      tls: this.tls,
      ports: this.ports,
      url: '',
      module: <K extends keyof Modules>(name: K): Modules[K] => {
        if (!allowed.has(name as string)) {
          throw new Error(`module "${module.name}" reads "${String(name)}" without listing it in requires`);
        }
        return this.module(name);
      },
      defer: (name, run) => this.#cleanup.defer(`${module.name}: ${name}`, run),
      sections: () => this.sections(),
    };
    // The service's address, known once it listens.
    Object.defineProperty(ctx, 'url', { get: () => this.#url, enumerable: true });
    this.#contexts.set(module.name, ctx);
    return ctx;
  }
}

/** Every module's `requires` names a module earlier in the list; names are unique. */
function checkOrder(modules: readonly { name: string; requires?: readonly string[] | undefined }[]): void {
  const seen = new Set<string>();
  for (const m of modules) {
    if (seen.has(m.name)) throw new Error(`module "${m.name}" is listed twice`);
    for (const r of m.requires ?? []) {
      if (!seen.has(r)) throw new Error(`module "${m.name}" requires "${r}", which is not listed before it`);
    }
    seen.add(m.name);
  }
}
