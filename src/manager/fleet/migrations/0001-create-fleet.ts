import type { Db, Migration } from '../../../kernel/db/index.js';

export const createFleet: Migration = {
  name: '0001-create-fleet',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_company')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('mgr_project')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('company_id', 'text', (c) => c.notNull().references('mgr_company.id'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('mgr_project_company_name', ['company_id', 'name'])
      .execute();
    await db.schema
      .createTable('mgr_device')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('project_id', 'text', (c) => c.notNull().references('mgr_project.id'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('pretty_name', 'text')
      .addColumn('online', 'integer', (c) => c.notNull())
      .addColumn('last_seen', 'bigint')
      .addColumn('edge_version', 'text')
      .addColumn('host_facts', 'text')
      .addColumn('metrics', 'text')
      .addColumn('cpu', 'integer')
      .addColumn('memory', 'bigint')
      .addColumn('link_secret_hash', 'text', (c) => c.notNull())
      .addColumn('edge_credential', 'text', (c) => c.notNull())
      .addColumn('activated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_device_project').on('mgr_device').column('project_id').execute();
    await db.schema
      .createTable('mgr_activation_code')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('code_hash', 'text', (c) => c.notNull().unique())
      .addColumn('project_id', 'text', (c) => c.notNull().references('mgr_project.id'))
      .addColumn('device_name', 'text')
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .addColumn('device_id', 'text')
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('mgr_activation_code_project')
      .on('mgr_activation_code')
      .column('project_id')
      .execute();
    await db.schema
      .createTable('mgr_connection')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('device_id', 'text', (c) => c.notNull())
      .addColumn('connected_at', 'bigint', (c) => c.notNull())
      .addColumn('disconnected_at', 'bigint')
      .addColumn('remote_address', 'text')
      .addColumn('reason', 'text')
      .execute();
    await db.schema
      .createIndex('mgr_connection_device')
      .on('mgr_connection')
      .columns(['device_id', 'connected_at'])
      .execute();
  },
};
