import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAssetHub } from './0001-create-asset-hub.js';

export const assetHubMigrations: ModuleMigrations = {
  module: 'manager.assethub',
  migrations: [createAssetHub],
};
