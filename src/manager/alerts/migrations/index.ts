import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAlerts } from './0001-create-alerts.js';

export const alertsMigrations: ModuleMigrations = { module: 'manager.alerts', migrations: [createAlerts] };
