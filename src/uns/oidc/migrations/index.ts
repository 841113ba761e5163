import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createUsers } from './0001-create-users.js';

export const identityMigrations: ModuleMigrations = { module: 'uns.oidc', migrations: [createUsers] };
