/**
 * The map of the edge's module APIs, by module name. Each module adds its own entry from its
 * folder (`declare module '../modules.js' { interface EdgeModules { ... } }`), so that a new
 * module touches the list in `service.ts` and nothing else.
 */
import type { Static, TObject } from '@sinclair/typebox';
import type { ModuleContext, NoOptions, ServiceModule } from '../kernel/service/index.js';
import type { EdgeShellConfig } from './options.js';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface EdgeModules {}

/** A module of the edge, named `N` in `EdgeModules`, with the settings `O` (`<module>/options.ts`). */
export type EdgeModule<N extends keyof EdgeModules, O extends TObject = NoOptions> = ServiceModule<
  EdgeShellConfig,
  EdgeModules,
  N,
  O
>;
/** What an edge module's functions get: the shell's options and, with `O`, the module's own. */
export type EdgeContext<O extends TObject = NoOptions> = ModuleContext<
  EdgeShellConfig & Static<O>,
  EdgeModules
>;
