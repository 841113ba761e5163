import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createCloudstorage } from './0001-create-cloudstorage.js';

export const cloudstorageMigrations: ModuleMigrations = {
  module: 'edge.cloudstorage',
  migrations: [createCloudstorage],
};
