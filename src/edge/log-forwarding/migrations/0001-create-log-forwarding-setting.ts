import type { Db, Migration } from '../../../kernel/db/index.js';

/** The forwarding configuration and the position reached in the log store, as key/value rows. */
export const createLogForwardingSetting: Migration = {
  name: '0001-create-log-forwarding-setting',
  async up(db: Db) {
    await db.schema
      .createTable('log_forwarding_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
  },
};
