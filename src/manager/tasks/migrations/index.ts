import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createTasks } from './0001-create-tasks.js';

export const taskMigrations: ModuleMigrations = { module: 'manager.tasks', migrations: [createTasks] };
