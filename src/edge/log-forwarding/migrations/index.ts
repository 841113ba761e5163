import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createLogForwardingSetting } from './0001-create-log-forwarding-setting.js';

export const logForwardingMigrations: ModuleMigrations = {
  module: 'edge.log-forwarding',
  migrations: [createLogForwardingSetting],
};
