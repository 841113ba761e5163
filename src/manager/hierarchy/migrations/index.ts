import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createHierarchy } from './0001-create-hierarchy.js';
import { nodeDepthIndex } from './0002-node-depth-index.js';
import { nodeJsonText } from './0003-node-json.js';

export const hierarchyMigrations: ModuleMigrations = {
  module: 'manager.hierarchy',
  migrations: [createHierarchy, nodeDepthIndex, nodeJsonText],
};
