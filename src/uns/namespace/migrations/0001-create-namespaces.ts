import type { Db, Migration } from '../../../kernel/db/index.js';

export const createNamespaces: Migration = {
  name: '0001-create-namespaces',
  async up(db: Db) {
    await db.schema
      .createTable('uns_namespace')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('prefix', 'text', (c) => c.notNull().unique())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('default_rules', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('uns_topic')
      .addColumn('path', 'text', (c) => c.primaryKey())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
