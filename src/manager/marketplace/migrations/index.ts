import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createMarketplace } from './0001-create-marketplace.js';

export const marketplaceMigrations: ModuleMigrations = {
  module: 'manager.marketplace',
  migrations: [createMarketplace],
};
