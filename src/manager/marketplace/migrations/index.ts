import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createMarketplace } from './0001-create-marketplace.js';
import { createMarketplaceSecret } from './0002-create-marketplace-secret.js';

export const marketplaceMigrations: ModuleMigrations = {
  module: 'manager.marketplace',
  migrations: [createMarketplace, createMarketplaceSecret],
};
