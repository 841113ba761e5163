import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createSessions } from './0001-create-sessions.js';

export const brokerMigrations: ModuleMigrations = { module: 'uns.broker', migrations: [createSessions] };
