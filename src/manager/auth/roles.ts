/** The manager's roles, in a file of their own: the CLI's `--role` choices read it without the module. */
import type { ManagerRole } from './repository.js';

export const MANAGER_ROLES: readonly ManagerRole[] = ['admin', 'operator', 'viewer'];
