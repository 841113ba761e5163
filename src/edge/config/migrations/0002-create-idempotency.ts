import type { Db, Migration } from '../../../kernel/db/index.js';

/** Applies made with an `Idempotency-Key`: the key and the answer, written with the apply. */
export const createIdempotency: Migration = {
  name: '0002-create-idempotency',
  async up(db: Db) {
    await db.schema
      .createTable('config_idempotency')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('answer', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('config_idempotency_created')
      .on('config_idempotency')
      .column('created_at')
      .execute();
  },
};
