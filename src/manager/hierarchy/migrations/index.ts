import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createHierarchy } from './0001-create-hierarchy.js';
import { nodeDepthIndex } from './0002-node-depth-index.js';

export const hierarchyMigrations: ModuleMigrations = {
  module: 'manager.hierarchy',
  migrations: [createHierarchy, nodeDepthIndex],
};
