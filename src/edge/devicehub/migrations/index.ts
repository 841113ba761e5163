import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createDevicehub } from './0001-create-devicehub.js';

export const devicehubMigrations: ModuleMigrations = {
  module: 'edge.devicehub',
  migrations: [createDevicehub],
};
