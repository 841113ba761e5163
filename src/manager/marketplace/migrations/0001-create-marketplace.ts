import type { Db, Migration } from '../../../kernel/db/index.js';

export const createMarketplace: Migration = {
  name: '0001-create-marketplace',
  async up(db: Db) {
    // An item of the catalogue: what it is, where it is listed, its newest version.
    await db.schema
      .createTable('mgr_mp_item')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('categories', 'text', (c) => c.notNull())
      .addColumn('search', 'text', (c) => c.notNull())
      .addColumn('latest_version', 'text', (c) => c.notNull())
      .addColumn('latest_seq', 'bigint', (c) => c.notNull())
      .addColumn('versions', 'integer', (c) => c.notNull())
      .addColumn('installs', 'integer', (c) => c.notNull())
      .addColumn('imports', 'integer', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // Each published version of an item, with its content (never changed once published).
    await db.schema
      .createTable('mgr_mp_version')
      .addColumn('item_id', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .addColumn('changelog', 'text', (c) => c.notNull())
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('published_by', 'text', (c) => c.notNull())
      .addColumn('published_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('mgr_mp_version_pk', ['item_id', 'version'])
      .execute();
    // Each install of an item version on a device or a project: the template and the task.
    await db.schema
      .createTable('mgr_mp_install')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('item_id', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('target_type', 'text', (c) => c.notNull())
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addColumn('company_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('template_id', 'text')
      .addColumn('task_id', 'text', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_mp_install_item').on('mgr_mp_install').columns(['item_id']).execute();
    // Usage events reported by managers that import from this catalogue (asset hub), by event id.
    await db.schema
      .createTable('mgr_mp_event')
      .addColumn('event_id', 'text', (c) => c.primaryKey())
      .addColumn('item_id', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('reporter', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_mp_event_at').on('mgr_mp_event').columns(['received_at']).execute();
  },
};
