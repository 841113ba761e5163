import type { ModuleMigrations } from '../../../kernel/db/index.js';
import { createAudit } from './0001-create-audit.js';
import { leanRecordTable } from './0002-lean-record-table.js';

export const auditMigrations: ModuleMigrations = {
  module: 'manager.audit',
  migrations: [createAudit, leanRecordTable],
};
