import type { Db, Migration } from '../../../kernel/db/index.js';

/** A composed template names the templates it was made of (JSON: id, friendly name, version). */
export const templateParts: Migration = {
  name: '0002-template-parts',
  async up(db: Db) {
    await db.schema.alterTable('mgr_template').addColumn('parts', 'text').execute();
  },
};
