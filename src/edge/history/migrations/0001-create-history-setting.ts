import type { Db, Migration } from '../../../kernel/db/index.js';

/** Recording policies by tag pattern, and retention set by a configuration template. */
export const createHistorySetting: Migration = {
  name: '0001-create-history-setting',
  async up(db: Db) {
    await db.schema
      .createTable('history_policy')
      .addColumn('tag', 'text', (c) => c.primaryKey())
      .addColumn('mode', 'text', (c) => c.notNull())
      .addColumn('deadband', 'double precision', (c) => c.notNull())
      .addColumn('min_interval_ms', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('history_retention')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('max_age_days', 'integer', (c) => c.notNull())
      .addColumn('max_mb', 'integer', (c) => c.notNull())
      .execute();
  },
};
