import type { Db, Migration } from '../../../kernel/db/index.js';

export const createTasks: Migration = {
  name: '0001-create-tasks',
  async up(db: Db) {
    await db.schema
      .createTable('mgr_task')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull())
      .addColumn('params', 'text', (c) => c.notNull())
      .addColumn('company_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('total', 'integer', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('finished_at', 'bigint')
      .addColumn('deadline_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_task_created').on('mgr_task').column('created_at').execute();
    await db.schema
      .createTable('mgr_subtask')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('task_id', 'text', (c) => c.notNull().references('mgr_task.id'))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('device_id', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull())
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('deadline_at', 'bigint', (c) => c.notNull())
      .addColumn('claimed_by', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('sent_at', 'bigint')
      .addColumn('started_at', 'bigint')
      .addColumn('finished_at', 'bigint')
      .addColumn('result', 'text')
      .addColumn('error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('mgr_subtask_task').on('mgr_subtask').column('task_id').execute();
    await db.schema
      .createIndex('mgr_subtask_open')
      .on('mgr_subtask')
      .columns(['status', 'next_attempt_at'])
      .execute();
    await db.schema.createIndex('mgr_subtask_updated').on('mgr_subtask').column('updated_at').execute();
    await db.schema
      .createTable('mgr_subtask_log')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('subtask_id', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('level', 'text', (c) => c.notNull())
      .addColumn('instance', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('mgr_subtask_log_subtask')
      .on('mgr_subtask_log')
      .columns(['subtask_id', 'seq'])
      .execute();
  },
};
