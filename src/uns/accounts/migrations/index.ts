import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAccounts } from './0001-create-accounts.js';

export const accountMigrations: ModuleMigrations = { module: 'uns.accounts', migrations: [createAccounts] };
