/** The UNS users' roles, in a file of their own: the CLI's `--role` choices read it without the module. */
import type { UserRole } from './repository.js';

export const USER_ROLES: readonly UserRole[] = ['admin', 'operator'];
