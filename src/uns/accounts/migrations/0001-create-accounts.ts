import { typed, type Db, type Migration } from '../../../kernel/db/index.js';

export const createAccounts: Migration = {
  name: '0001-create-accounts',
  async up(db: Db) {
    await db.schema
      .createTable('uns_account')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('username', 'text', (c) => c.notNull().unique())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('ac_type', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('uns_account_rule')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull().references('uns_account.id').onDelete('cascade'))
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('perm', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('uns_account_rule_account')
      .on('uns_account_rule')
      .column('account_id')
      .execute();
    await db.schema
      .createTable('uns_activation')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .addColumn('account_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    // One row: bumped by every change, so that other processes (the CLI, other UNS nodes on the
    // same PostgreSQL) are noticed and reloaded.
    await db.schema
      .createTable('uns_account_version')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('version', 'bigint', (c) => c.notNull())
      .execute();
    await typed<{ uns_account_version: { id: number; version: number } }>(db)
      .insertInto('uns_account_version')
      .values({ id: 1, version: 0 })
      .execute();
  },
};
