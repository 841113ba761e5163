import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createUsers } from './0001-create-users.js';

// The key the migrations are recorded under in existing databases (the folder was `oidc/`): kept.
export const identityMigrations: ModuleMigrations = { module: 'uns.oidc', migrations: [createUsers] };
