import type { Db, Migration } from '../../../kernel/db/index.js';

/** Fleet twin models of a company: each a JSON document (the model, its attributes and instances). */
export const createDt2: Migration = {
  name: '0001-create-dt2',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_dt2_model')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('company_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('document', 'text', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('mgr_dt2_model_company_name', ['company_id', 'name'])
      .execute();
  },
};
