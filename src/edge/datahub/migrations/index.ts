import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAccessKey } from './0001-create-access-key.js';

export const datahubMigrations: ModuleMigrations = { module: 'edge.datahub', migrations: [createAccessKey] };
