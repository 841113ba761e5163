/**
 * The map of the UNS's module APIs, by module name. Each module adds its own entry from its
 * folder (`declare module '../modules.js' { interface UnsModules { ... } }`).
 */
import type { ModuleContext, ServiceModule } from '../kernel/service/index.js';
import type { UnsConfig } from './options.js';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface UnsModules {}

export type UnsModule<N extends keyof UnsModules> = ServiceModule<UnsConfig, UnsModules, N>;
export type UnsContext = ModuleContext<UnsConfig, UnsModules>;

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
