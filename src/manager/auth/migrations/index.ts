import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAuth } from './0001-create-auth.js';
import { createSession } from './0002-create-session.js';

export const managerAuthMigrations: ModuleMigrations = {
  module: 'manager.auth',
  migrations: [createAuth, createSession],
};
