import type { Db, Migration } from '../../../kernel/db/index.js';

export const createDevicehub: Migration = {
  name: '0001-create-devicehub',
  async up(db: Db) {
    await db.schema
      .createTable('dh_device')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('driver_id', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('properties', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('dh_params', 'text', (c) => c.notNull())
      .addColumn('worker_params', 'text', (c) => c.notNull())
      .addColumn('alias_topics', 'integer', (c) => c.notNull())
      .addColumn('debug', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('dh_register')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('device_id', 'text', (c) => c.notNull().references('dh_device.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('tag_name', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('value_type', 'text', (c) => c.notNull())
      .addColumn('publish_cov', 'integer', (c) => c.notNull())
      .addColumn('tag_formula', 'text', (c) => c.notNull())
      .addColumn('interval_ms', 'integer', (c) => c.notNull())
      .addColumn('properties', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('dh_register_device_tag', ['device_id', 'tag_name'])
      .execute();
    // ListRegisters of one device walks (device_id, id).
    await db.schema
      .createIndex('dh_register_device_id')
      .on('dh_register')
      .columns(['device_id', 'id'])
      .execute();
  },
};
