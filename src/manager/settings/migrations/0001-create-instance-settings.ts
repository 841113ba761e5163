import type { Db, Migration } from '../../../kernel/db/index.js';

export const createInstanceSettings: Migration = {
  name: '0001-create-instance-settings',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_instance_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
