import type { Db, Migration } from '../../../kernel/db/index.js';

export const createOpcua: Migration = {
  name: '0001-create-opcua',
  async up(db: Db) {
    // The node tree of the OPC UA server: folders, devices and tags. `ref` is the node's
    // reference (unique); `node_id` is its identifier among its siblings, which may repeat
    // elsewhere in the tree.
    await db.schema
      .createTable('opcua_node')
      .addColumn('ref', 'text', (c) => c.primaryKey())
      .addColumn('parent_ref', 'text')
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('origin_id', 'text')
      .addColumn('data_type', 'text')
      .addColumn('access_control', 'text', (c) => c.notNull())
      .addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('sync_state', 'text', (c) => c.notNull())
      .addColumn('sync_failure_reason', 'text')
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('opcua_node_parent').on('opcua_node').column('parent_ref').execute();
    // Sync runs, the running one and the terminal ones (newest first by started_at).
    await db.schema
      .createTable('opcua_sync')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('trigger', 'text', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('finished_at', 'bigint')
      .addColumn('added', 'integer', (c) => c.notNull())
      .addColumn('removed', 'integer', (c) => c.notNull())
      .addColumn('modified', 'integer', (c) => c.notNull())
      .addColumn('error', 'text')
      .execute();
    // Staged hierarchies (two-phase upload): invisible until committed.
    await db.schema
      .createTable('opcua_stage')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('tree', 'text', (c) => c.notNull())
      .addColumn('node_count', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    // OPC UA user name / password users.
    await db.schema
      .createTable('opcua_user')
      .addColumn('username', 'text', (c) => c.primaryKey())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('opcua_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
