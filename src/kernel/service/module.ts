/**
 * The module seam. A service is a list of modules run by one `ServiceShell`; a module is one
 * object that says what it needs and how it starts, mounts and stops. A module's API (what
 * `start` answers) is what later modules get from `ctx.module(name)`: its domain service, never
 * its repository or rows.
 *
 * Each service declares the map of its modules' APIs as an interface (`EdgeModules`), which each
 * module extends from its own folder (declaration merging), so that adding a module touches the
 * service's module list and nothing else.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Database, ModuleMigrations } from '../db/index.js';
import type { LogStore } from '../logging/log-store.js';
import type { TlsMaterial } from '../http/server.js';
import type { PortPolicy } from './ports.js';
import type { ConfigSection } from './config-section.js';

/** What the shell hands a module: the service's stores, app and policies, and the modules before it. */
export interface ModuleContext<Config, Modules> {
  /** The service (`edge`, `uns`, `manager`). */
  readonly service: string;
  readonly config: Config;
  readonly dataDir: string;
  /** The module's logger (component `<service>.<module>`). */
  readonly logger: Logger;
  readonly logStore: LogStore;
  readonly database: Database;
  /** The HTTP app, for `mount`. Not listening yet during `start` and `mount`. */
  readonly app: FastifyInstance;
  /** The certificate of the HTTPS listener, or null with plain HTTP. */
  readonly tls: TlsMaterial | null;
  /** Binds a port of the module's own (NATS, MQTT...) under the service's free-port policy. */
  readonly ports: PortPolicy;
  /** The base address of the HTTP API; known from `listening` on (empty before). */
  readonly url: string;
  /** The API of a module listed before this one (in `requires`). */
  module<K extends keyof Modules>(name: K): Modules[K];
  /** Registers a clean-up step, run in reverse order at close (also when start-up fails later). */
  defer(name: string, run: () => Promise<void> | void): void;
  /**
   * The configuration sections of every module of the service that has one (`configSection`),
   * in list order. Call it from `mount` on (every module has started by then).
   */
  sections(): ConfigSection[];
}

export interface ServiceModule<Config, Modules, Name extends keyof Modules = keyof Modules> {
  readonly name: Name & string;
  /** The module's tables, run by the shell at start (and by the CLI's offline commands). */
  readonly migrations?: ModuleMigrations;
  /** Modules whose API `start` reads; they must come earlier in the service's list. */
  readonly requires?: readonly (keyof Modules & string)[];
  /** Builds the module's API. Resources it opens are closed by `close` or by `ctx.defer`. */
  start(ctx: ModuleContext<Config, Modules>): Promise<Modules[Name]> | Modules[Name];
  /** Routes or a GraphQL mount on `ctx.app`. */
  mount?(ctx: ModuleContext<Config, Modules>, api: Modules[Name]): PromiseLike<unknown> | void;
  /** After the HTTP port is bound: background work (polling, extra listeners' announcements). */
  listening?(ctx: ModuleContext<Config, Modules>, api: Modules[Name]): Promise<void> | void;
  /** The module's part of a configuration template (export, validate, diff, apply). */
  configSection?(api: Modules[Name]): ConfigSection;
  /** Stops the module; called in reverse list order, after the HTTP server stopped accepting. */
  close?(api: Modules[Name]): Promise<void> | void;
}

/** A list of modules of one service, whatever their names. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a list holds modules of different names, and TypeScript has no existential type for the name
export type ModuleList<Config, Modules> = readonly ServiceModule<Config, Modules, any>[];
