import type { Db, Migration } from '../../../kernel/db/index.js';

export const createMarketplaceSecret: Migration = {
  name: '0002-create-marketplace-secret',
  async up(db: Db) {
    // Named secrets of the marketplace (`/admin/v1/mpc-secrets/{key}`), sealed; referenced by
    // application items as `{{mpc-secret:<key>}}` and resolved when a subtask sends them.
    await db.schema
      .createTable('mgr_mp_secret')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
