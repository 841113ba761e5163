import type { Db, Migration } from '../../../kernel/db/index.js';

export const createAuth: Migration = {
  name: '0001-create-auth',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_auth_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('mgr_user')
      .addColumn('username', 'text', (c) => c.primaryKey())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('mgr_role_binding')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('username', 'text', (c) => c.notNull().references('mgr_user.username').onDelete('cascade'))
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('company_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_role_binding_user').on('mgr_role_binding').column('username').execute();
    await db.schema
      .createTable('mgr_api_token')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('username', 'text')
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('rotated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
