/**
 * The map of the manager's module APIs, by module name. Each module adds its own entry from its
 * folder (`declare module '../modules.js' { interface ManagerModules { ... } }`).
 */
import type { Static, TObject } from '@sinclair/typebox';
import type { ModuleContext, NoOptions, ServiceModule } from '../kernel/service/index.js';
import type { ManagerShellConfig } from './options.js';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ManagerModules {}

/** A module of the manager, named `N` in `ManagerModules`, with the settings `O` (`<module>/options.ts`). */
export type ManagerModule<N extends keyof ManagerModules, O extends TObject = NoOptions> = ServiceModule<
  ManagerShellConfig,
  ManagerModules,
  N,
  O
>;
export type ManagerContext<O extends TObject = NoOptions> = ModuleContext<
  ManagerShellConfig & Static<O>,
  ManagerModules
>;
