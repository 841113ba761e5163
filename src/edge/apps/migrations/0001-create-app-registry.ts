import type { Db, Migration } from '../../../kernel/db/index.js';

export const createAppRegistry: Migration = {
  name: '0001-create-app-registry',
  async up(db: Db) {
    await db.schema
      .createTable('app_registry')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('username', 'text', (c) => c.notNull())
      // The password sealed with the data directory's key (kernel/secret-box.ts); never in clear.
      .addColumn('password_sealed', 'text')
      .addColumn('region', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
