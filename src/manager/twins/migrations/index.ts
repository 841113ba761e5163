import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createDt2 } from './0001-create-dt2.js';

export const dt2Migrations: ModuleMigrations = { module: 'manager.dt2', migrations: [createDt2] };
