import type { Db, Migration } from '../../../kernel/db/index.js';

export const createConfig: Migration = {
  name: '0001-create-config',
  async up(db: Db) {
    // Saved templates: the document is gzip'd JSON, base64 (text: one shape on both dialects).
    await db.schema
      .createTable('config_template')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('sections', 'text', (c) => c.notNull())
      .addColumn('encrypted', 'integer', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('document', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('config_snapshot')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('sections', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('document', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
