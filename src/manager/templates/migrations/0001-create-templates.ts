import type { Db, Migration } from '../../../kernel/db/index.js';

export const createTemplates: Migration = {
  name: '0001-create-templates',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_template')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('friendly_name', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('document', 'text', (c) => c.notNull())
      .addColumn('sections', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('encrypted', 'integer', (c) => c.notNull())
      .addColumn('user_key', 'text')
      .addColumn('company_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('source_device_id', 'text')
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_template_name').on('mgr_template').column('friendly_name').execute();
    await db.schema
      .createTable('mgr_template_version')
      .addColumn('template_id', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('friendly_name', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('document', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('mgr_template_version_pk', ['template_id', 'version'])
      .execute();
    await db.schema
      .createTable('mgr_template_vars')
      .addColumn('template_id', 'text', (c) => c.notNull())
      .addColumn('scope_type', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('parameters', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('mgr_template_vars_pk', ['template_id', 'scope_type', 'scope_id'])
      .execute();
    await db.schema
      .createTable('mgr_template_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
