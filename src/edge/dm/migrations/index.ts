import type { Db, Migration, ModuleMigrations } from '../../../kernel/db/index.js';

const createDm: Migration = {
  name: '0001-create-dm',
  async up(db: Db) {
    await db.schema
      .createTable('dm_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};

export const dmMigrations: ModuleMigrations = { module: 'edge.dm', migrations: [createDm] };
