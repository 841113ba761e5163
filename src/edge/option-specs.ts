/**
 * The edge's option specs without its modules: the shell's options and each module's
 * `options.ts`, in the order of `EDGE_MODULES` (src/edge/service.ts). For the CLI's help, usage
 * errors and option checks, which would otherwise load every module (seconds of CPU) to print a
 * list. `test/cli/option-specs.test.ts` holds it equal to `serviceOptionSpecs(EDGE_SERVICE)`.
 */
import type { OptionSpec } from '../kernel/config.js';
import { serviceOptionSpecs } from '../kernel/service/options.js';
import { EDGE_SHELL_OPTIONS } from './options.js';
import { authOptions } from './auth/options.js';
import { datahubOptions } from './datahub/options.js';
import { devicehubOptions } from './devicehub/options.js';
import { acquisitionOptions } from './acquisition/options.js';
import { logForwardingOptions } from './log-forwarding/options.js';
import { opcuaOptions } from './opcua/options.js';
import { twinsOptions } from './twins/options.js';
import { integrationsOptions } from './integrations/options.js';
import { historyOptions } from './history/options.js';
import { analyticsOptions } from './analytics/options.js';
import { mcpOptions } from './mcp/options.js';
import { appsOptions } from './apps/options.js';
import { cloudstorageOptions } from './cloudstorage/options.js';
import { consoleOptions } from './console/options.js';

/** Every option of the edge (flags, `MILLWRIGHT_EDGE_*`, config-file keys), shell first, then by module. */
export const EDGE_OPTIONS: readonly OptionSpec[] = serviceOptionSpecs({
  label: 'edge service',
  options: EDGE_SHELL_OPTIONS,
  modules: [
    { name: 'auth', options: authOptions },
    { name: 'datahub', options: datahubOptions },
    { name: 'devicehub', options: devicehubOptions },
    { name: 'acquisition', options: acquisitionOptions },
    { name: 'log-forwarding', options: logForwardingOptions },
    { name: 'opcua', options: opcuaOptions },
    { name: 'twins', options: twinsOptions },
    { name: 'integrations', options: integrationsOptions },
    { name: 'history', options: historyOptions },
    { name: 'analytics', options: analyticsOptions },
    { name: 'mcp', options: mcpOptions },
    { name: 'apps', options: appsOptions },
    { name: 'cloudstorage', options: cloudstorageOptions },
    { name: 'console', options: consoleOptions },
  ],
});
