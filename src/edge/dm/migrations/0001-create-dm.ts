import type { Db, Migration } from '../../../kernel/db/index.js';

export const createDm: Migration = {
  name: '0001-create-dm',
  async up(db: Db) {
    await db.schema
      .createTable('dm_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
