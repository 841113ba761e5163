import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createInstanceSettings } from './0001-create-instance-settings.js';

export const settingsMigrations: ModuleMigrations = {
  module: 'manager.settings',
  migrations: [createInstanceSettings],
};
