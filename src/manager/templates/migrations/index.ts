import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createTemplates } from './0001-create-templates.js';

export const templateMigrations: ModuleMigrations = {
  module: 'manager.templates',
  migrations: [createTemplates],
};
