import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createHa } from './0001-create-ha.js';

export const haMigrations: ModuleMigrations = { module: 'manager.ha', migrations: [createHa] };
