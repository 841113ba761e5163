import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAuth } from './0001-create-auth.js';

export const managerAuthMigrations: ModuleMigrations = { module: 'manager.auth', migrations: [createAuth] };
