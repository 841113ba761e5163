import { typed, type Db, type Migration } from '../../../kernel/db/index.js';

export const createAudit: Migration = {
  name: '0001-create-audit',
  async up(db: Db) {
    await db.schema
      .createTable('audit_record')
      .addColumn('seq', 'bigint', (c) => c.primaryKey())
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('actor_name', 'text')
      .addColumn('company_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('module', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('target', 'text')
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('status', 'integer')
      .addColumn('request_id', 'text')
      .addColumn('details', 'text', (c) => c.notNull())
      .addColumn('legacy_id', 'text', (c) => c.unique())
      .addColumn('prev_hash', 'text', (c) => c.notNull())
      .addColumn('hash', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_record_at').on('audit_record').column('at').execute();
    await db.schema.createIndex('audit_record_action').on('audit_record').column('action').execute();
    // The chain's head (one row): the last record's seq and hash, and the base the retention
    // left (the seq and hash the oldest record kept follows).
    await db.schema
      .createTable('audit_head')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .addColumn('hash', 'text', (c) => c.notNull())
      .addColumn('base_seq', 'bigint', (c) => c.notNull())
      .addColumn('base_hash', 'text', (c) => c.notNull())
      .execute();
    const zero = '0'.repeat(64);
    await typed<{
      audit_head: { id: number; seq: number; hash: string; base_seq: number; base_hash: string };
    }>(db)
      .insertInto('audit_head')
      .values({ id: 1, seq: 0, hash: zero, base_seq: 0, base_hash: zero })
      .execute();
    await db.schema
      .createTable('audit_setting')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('audit_api_activity')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('method', 'text', (c) => c.notNull())
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('status', 'integer', (c) => c.notNull())
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('actor', 'text')
      .addColumn('request_id', 'text')
      .execute();
    await db.schema.createIndex('audit_api_activity_at').on('audit_api_activity').column('at').execute();
    // The older action log (2.31.x shape): records found here are moved into the chain by
    // `/admin/v1/action-log/migration/retry`; nothing writes here any more.
    await db.schema
      .createTable('audit_legacy_log')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('username', 'text')
      .addColumn('context', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .execute();
  },
};
