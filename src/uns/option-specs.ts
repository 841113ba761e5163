/**
 * The UNS's option specs without its modules: the shell's options and each module's
 * `options.ts`, in the order of `UNS_MODULES` (src/uns/service.ts). For the CLI's help, usage
 * errors and option checks, which would otherwise load every module to print a list.
 * `test/cli/option-specs.test.ts` holds it equal to `serviceOptionSpecs(UNS_SERVICE)`.
 */
import type { OptionSpec } from '../kernel/config.js';
import { serviceOptionSpecs } from '../kernel/service/options.js';
import { UNS_SHELL_OPTIONS } from './options.js';
import { identityOptions } from './identity/options.js';
import { namespaceOptions } from './namespace/options.js';
import { brokerOptions } from './broker/options.js';
import { consoleOptions } from './console/options.js';

/** Every option of the UNS (flags, `MILLWRIGHT_UNS_*`, config-file keys), shell first, then by module. */
export const UNS_OPTIONS: readonly OptionSpec[] = serviceOptionSpecs({
  label: 'unified namespace service',
  options: UNS_SHELL_OPTIONS,
  modules: [
    { name: 'identity', options: identityOptions },
    { name: 'namespace', options: namespaceOptions },
    { name: 'broker', options: brokerOptions },
    { name: 'console', options: consoleOptions },
  ],
});
