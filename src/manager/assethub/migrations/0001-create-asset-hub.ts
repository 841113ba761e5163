import type { Db, Migration } from '../../../kernel/db/index.js';

export const createAssetHub: Migration = {
  name: '0001-create-asset-hub',
  async up(db: Db) {
    // The hub's connection (one row, key `hub`) and its last check (key `status`).
    await db.schema
      .createTable('mgr_hub_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
    // An item of the hub imported into a company: its current version's content, kept here.
    await db.schema
      .createTable('mgr_hub_import')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('company_id', 'text', (c) => c.notNull())
      .addColumn('hub_url', 'text', (c) => c.notNull())
      .addColumn('item_id', 'text', (c) => c.notNull())
      .addColumn('item_name', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('latest_version', 'text')
      .addColumn('content', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('target_ref', 'text')
      .addColumn('imported_by', 'text', (c) => c.notNull())
      .addColumn('imported_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('synced_at', 'bigint')
      .addUniqueConstraint('mgr_hub_import_item', ['company_id', 'item_id'])
      .execute();
    // Usage events for the hub (import, update, delete), until delivered; parked after failures.
    await db.schema
      .createTable('mgr_hub_telemetry')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('item_id', 'text', (c) => c.notNull())
      .addColumn('version', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('last_error', 'text')
      .addColumn('next_at', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('mgr_hub_telemetry_due')
      .on('mgr_hub_telemetry')
      .columns(['status', 'next_at'])
      .execute();
  },
};
