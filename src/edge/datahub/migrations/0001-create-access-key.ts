import type { Db, Migration } from '../../../kernel/db/index.js';

export const createAccessKey: Migration = {
  name: '0001-create-access-key',
  async up(db: Db) {
    await db.schema
      .createTable('datahub_access_key')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('key_hash', 'text', (c) => c.notNull().unique())
      .addColumn('key_prefix', 'text', (c) => c.notNull())
      .addColumn('publish', 'text')
      .addColumn('subscribe', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('datahub_access_key_name').on('datahub_access_key').column('name').execute();
  },
};
