import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAudit } from './0001-create-audit.js';

export const auditMigrations: ModuleMigrations = { module: 'manager.audit', migrations: [createAudit] };
