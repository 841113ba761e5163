import type { Db, Migration } from '../../../kernel/db/index.js';

export const createLinkPeers: Migration = {
  name: '0001-create-link-peers',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_link_instance')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text')
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('seen_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('mgr_link_owner')
      .addColumn('device_id', 'text', (c) => c.primaryKey())
      .addColumn('instance_id', 'text', (c) => c.notNull())
      .addColumn('since', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('mgr_link_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
