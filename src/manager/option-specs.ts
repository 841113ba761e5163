/**
 * The manager's option specs without its modules: the shell's options and each module's
 * `options.ts`, in the order of `MANAGER_MODULES` (src/manager/service.ts). For the CLI's help,
 * usage errors and option checks, which would otherwise load every module to print a list.
 * `test/cli/option-specs.test.ts` holds it equal to `serviceOptionSpecs(MANAGER_SERVICE)`.
 */
import type { OptionSpec } from '../kernel/config.js';
import { serviceOptionSpecs } from '../kernel/service/options.js';
import { MANAGER_SHELL_OPTIONS } from './options.js';
import { managerAuthOptions } from './auth/options.js';
import { adminOptions } from './admin/options.js';
import { fleetOptions } from './fleet/options.js';
import { linkOptions } from './link/options.js';
import { haOptions } from './ha/options.js';
import { tasksOptions } from './tasks/options.js';
import { auditOptions } from './audit/options.js';
import { alertsOptions } from './alerts/options.js';
import { marketplaceOptions } from './marketplace/options.js';
import { assetHubOptions } from './assethub/options.js';
import { hierarchyOptions } from './hierarchy/options.js';
import { dt2Options } from './twins/options.js';
import { managerConsoleOptions } from './console/options.js';

/** Every option of the manager (flags, `MILLWRIGHT_MANAGER_*`, config-file keys), shell first, then by module. */
export const MANAGER_OPTIONS: readonly OptionSpec[] = serviceOptionSpecs({
  label: 'edge manager',
  options: MANAGER_SHELL_OPTIONS,
  modules: [
    { name: 'auth', options: managerAuthOptions },
    { name: 'admin', options: adminOptions },
    { name: 'fleet', options: fleetOptions },
    { name: 'link', options: linkOptions },
    { name: 'ha', options: haOptions },
    { name: 'tasks', options: tasksOptions },
    { name: 'audit', options: auditOptions },
    { name: 'alerts', options: alertsOptions },
    { name: 'marketplace', options: marketplaceOptions },
    { name: 'assethub', options: assetHubOptions },
    { name: 'hierarchy', options: hierarchyOptions },
    { name: 'twins', options: dt2Options },
    { name: 'console', options: managerConsoleOptions },
  ],
});
