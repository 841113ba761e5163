/**
 * The map of the manager's module APIs, by module name. Each module adds its own entry from its
 * folder (`declare module '../modules.js' { interface ManagerModules { ... } }`).
 */
import type { ModuleContext, ServiceModule } from '../kernel/service/index.js';
import type { ManagerConfig } from './options.js';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ManagerModules {}

export type ManagerModule<N extends keyof ManagerModules> = ServiceModule<ManagerConfig, ManagerModules, N>;
export type ManagerContext = ModuleContext<ManagerConfig, ManagerModules>;
