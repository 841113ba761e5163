import type { Db, Migration } from '../../../kernel/db/index.js';

export const createSessions: Migration = {
  name: '0001-create-sessions',
  async up(db: Db) {
    await db.schema
      .createTable('uns_mqtt_retained')
      .addColumn('topic', 'text', (c) => c.primaryKey())
      .addColumn('packet', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('uns_mqtt_subscription')
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('topic', 'text', (c) => c.notNull())
      .addColumn('sub', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('uns_mqtt_subscription_pk', ['client_id', 'topic'])
      .execute();
    await db.schema
      .createTable('uns_mqtt_outgoing')
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .addColumn('broker_id', 'text', (c) => c.notNull())
      .addColumn('broker_counter', 'bigint', (c) => c.notNull())
      .addColumn('message_id', 'integer')
      .addColumn('packet', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('uns_mqtt_outgoing_pk', ['client_id', 'seq'])
      .execute();
    await db.schema
      .createTable('uns_mqtt_incoming')
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('message_id', 'integer', (c) => c.notNull())
      .addColumn('packet', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('uns_mqtt_incoming_pk', ['client_id', 'message_id'])
      .execute();
    await db.schema
      .createTable('uns_mqtt_will')
      .addColumn('client_id', 'text', (c) => c.primaryKey())
      .addColumn('packet', 'text', (c) => c.notNull())
      .execute();
  },
};
