import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createIntegrations } from './0001-create-integrations.js';

export const integrationsMigrations: ModuleMigrations = {
  module: 'edge.integrations',
  migrations: [createIntegrations],
};
