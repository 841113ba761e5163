import type { Db, Migration } from '../../../kernel/db/index.js';

export const createIntegrations: Migration = {
  name: '0001-create-integrations',
  async up(db: Db) {
    await db.schema
      .createTable('cc_instance')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('provider_id', 'text', (c) => c.notNull())
      .addColumn('config', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('exec_command_enabled', 'integer', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('cc_subscription')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('instance_id', 'text', (c) => c.notNull().references('cc_instance.id').onDelete('cascade'))
      .addColumn('is_local_to_remote', 'integer', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('local_name', 'text', (c) => c.notNull())
      .addColumn('remote_name', 'text', (c) => c.notNull())
      .addColumn('config', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('cc_subscription_instance')
      .on('cc_subscription')
      .columns(['instance_id', 'id'])
      .execute();
  },
};
