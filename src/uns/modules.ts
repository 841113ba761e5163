/**
 * The map of the UNS's module APIs, by module name. Each module adds its own entry from its
 * folder (`declare module '../modules.js' { interface UnsModules { ... } }`).
 */
import type { Static, TObject } from '@sinclair/typebox';
import type { ModuleContext, NoOptions, ServiceModule } from '../kernel/service/index.js';
import type { UnsShellConfig } from './options.js';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface UnsModules {}

/** A module of the UNS, named `N` in `UnsModules`, with the settings `O` (`<module>/options.ts`). */
export type UnsModule<N extends keyof UnsModules, O extends TObject = NoOptions> = ServiceModule<
  UnsShellConfig,
  UnsModules,
  N,
  O
>;
export type UnsContext<O extends TObject = NoOptions> = ModuleContext<UnsShellConfig & Static<O>, UnsModules>;

/** The service's public addresses, read live from the shell (known once it listens). */
export interface UnsAddresses {
  readonly url: string;
  readonly mqttPort: number | null;
  readonly mqttsPort: number | null;
}

export function unsAddresses(ctx: UnsContext): UnsAddresses {
  return {
    get url() {
      return ctx.url;
    },
    get mqttPort() {
      return ctx.ports.bound['mqtt-port'] ?? null;
    },
    get mqttsPort() {
      return ctx.ports.bound['mqtts-port'] ?? null;
    },
  };
}
