import type { Db, Migration } from '../../../kernel/db/index.js';

export const createCaCertificate: Migration = {
  name: '0001-create-ca-certificate',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_ca_certificate')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('issuer', 'text', (c) => c.notNull())
      .addColumn('valid_from', 'text', (c) => c.notNull())
      .addColumn('valid_to', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull().unique())
      .addColumn('serial_number', 'text', (c) => c.notNull())
      .addColumn('is_ca', 'integer', (c) => c.notNull())
      .addColumn('pem', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .execute();
  },
};
