import type { Db, Migration } from '../../../kernel/db/index.js';

export const createHa: Migration = {
  name: '0001-create-ha',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_ha_pair')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('project_id', 'text', (c) => c.notNull())
      .addColumn('primary_device_id', 'text', (c) => c.notNull().unique())
      .addColumn('secondary_device_id', 'text', (c) => c.notNull().unique())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('active_device_id', 'text', (c) => c.notNull())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .addColumn('timeout_ms', 'bigint', (c) => c.notNull())
      .addColumn('lease_ms', 'bigint', (c) => c.notNull())
      .addColumn('renewed_at', 'bigint', (c) => c.notNull())
      .addColumn('interface', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
