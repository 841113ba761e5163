import type { Db, Migration } from '../../../kernel/db/index.js';

export const createTrustSetting: Migration = {
  name: '0001-create-trust-setting',
  async up(db: Db) {
    await db.schema
      .createTable('trust_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
