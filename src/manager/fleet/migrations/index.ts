import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createFleet } from './0001-create-fleet.js';

export const fleetMigrations: ModuleMigrations = { module: 'manager.fleet', migrations: [createFleet] };
