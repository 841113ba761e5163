import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createTwins } from './0001-create-twins.js';

export const twinsMigrations: ModuleMigrations = { module: 'edge.twins', migrations: [createTwins] };
