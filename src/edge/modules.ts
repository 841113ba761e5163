/**
 * The map of the edge's module APIs, by module name. Each module adds its own entry from its
 * folder (`declare module '../modules.js' { interface EdgeModules { ... } }`), so that a new
 * module touches the list in `service.ts` and nothing else.
 */
import type { ModuleContext, ServiceModule } from '../kernel/service/index.js';
import type { EdgeConfig } from './options.js';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EdgeModules {}

/** A module of the edge, named `N` in `EdgeModules`. */
export type EdgeModule<N extends keyof EdgeModules> = ServiceModule<EdgeConfig, EdgeModules, N>;
export type EdgeContext = ModuleContext<EdgeConfig, EdgeModules>;
