import type { Db, Migration } from '../../../kernel/db/index.js';

/** The console sessions signed in through the `standalone` realm (one row a sign-in, ended by logout). */
export const createSession: Migration = {
  name: '0002-create-session',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_session')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('username', 'text', (c) => c.notNull().references('mgr_user.username').onDelete('cascade'))
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_session_user').on('mgr_session').column('username').execute();
  },
};
