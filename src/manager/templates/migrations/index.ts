import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createTemplates } from './0001-create-templates.js';
import { templateParts } from './0002-template-parts.js';

export const templateMigrations: ModuleMigrations = {
  module: 'manager.templates',
  migrations: [createTemplates, templateParts],
};
