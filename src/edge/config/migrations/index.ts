import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createConfig } from './0001-create-config.js';
import { createIdempotency } from './0002-create-idempotency.js';

export const configMigrations: ModuleMigrations = {
  module: 'edge.config',
  migrations: [createConfig, createIdempotency],
};
