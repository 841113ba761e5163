import type { Db, Migration } from '../../../kernel/db/index.js';

export const createUsers: Migration = {
  name: '0001-create-users',
  async up(db: Db) {
    await db.schema
      .createTable('uns_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('uns_user')
      .addColumn('username', 'text', (c) => c.primaryKey())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('tokens_valid_after', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
