import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAuth } from './0001-create-auth.js';

export const authMigrations: ModuleMigrations = { module: 'edge.auth', migrations: [createAuth] };
