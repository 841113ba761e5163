import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createConfig } from './0001-create-config.js';

export const configMigrations: ModuleMigrations = { module: 'edge.config', migrations: [createConfig] };
