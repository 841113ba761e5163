import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createHistorySetting } from './0001-create-history-setting.js';

export const historyMigrations: ModuleMigrations = {
  module: 'edge.history',
  migrations: [createHistorySetting],
};
