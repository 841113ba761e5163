import type { Db, Migration } from '../../../kernel/db/index.js';

/**
 * Hierarchy templates (their levels are a JSON list), nodes and branch grants. A node's `path` is
 * the hex digits of its ancestors' IDs and its own, 32 per level: a subtree is one index range
 * (`path >= P and path < P || 'g'`) on SQLite and PostgreSQL alike.
 */
export const createHierarchy: Migration = {
  name: '0001-create-hierarchy',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_asset_template')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('company_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('levels', 'text', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('mgr_asset_template_company_name', ['company_id', 'name'])
      .execute();
    await db.schema
      .createTable('mgr_asset_node')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('company_id', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('parent_id', 'text')
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('depth', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('level', 'text')
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text')
      .addColumn('attributes', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('mgr_asset_node_company_key', ['company_id', 'key'])
      .execute();
    await db.schema
      .createIndex('mgr_asset_node_path')
      .on('mgr_asset_node')
      .columns(['company_id', 'path'])
      .execute();
    await db.schema.createIndex('mgr_asset_node_parent').on('mgr_asset_node').column('parent_id').execute();
    await db.schema.createIndex('mgr_asset_node_device').on('mgr_asset_node').column('device_id').execute();
    await db.schema
      .createTable('mgr_asset_grant')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('company_id', 'text', (c) => c.notNull())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('username', 'text', (c) => c.notNull())
      .addColumn('access', 'text', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('mgr_asset_grant_node_user', ['node_id', 'username'])
      .execute();
    await db.schema.createIndex('mgr_asset_grant_user').on('mgr_asset_grant').column('username').execute();
  },
};
