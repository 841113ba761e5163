import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAppRegistry } from './0001-create-app-registry.js';

export const appsMigrations: ModuleMigrations = {
  module: 'edge.apps',
  migrations: [createAppRegistry],
};
