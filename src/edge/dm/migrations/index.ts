import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createDm } from './0001-create-dm.js';

export const dmMigrations: ModuleMigrations = { module: 'edge.dm', migrations: [createDm] };
