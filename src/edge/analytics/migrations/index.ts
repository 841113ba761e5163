import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAnalytics } from './0001-create-analytics.js';

export const analyticsMigrations: ModuleMigrations = {
  module: 'edge.analytics',
  migrations: [createAnalytics],
};
