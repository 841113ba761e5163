import type { Db, Migration } from '../../../kernel/db/index.js';

export const createAlerts: Migration = {
  name: '0001-create-alerts',
  async up(db: Db) {
    // A platform rule's settings (a rule without a row runs with its catalogue defaults).
    await db.schema
      .createTable('mgr_alert_rule')
      .addColumn('rule_key', 'text', (c) => c.primaryKey())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('severity', 'text', (c) => c.notNull())
      .addColumn('params', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    // Each change of a rule's settings, written with the change.
    await db.schema
      .createTable('mgr_alert_rule_change')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('rule_key', 'text', (c) => c.notNull())
      .addColumn('project_id', 'text')
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('before', 'text')
      .addColumn('after', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('mgr_alert_rule_change_rule')
      .on('mgr_alert_rule_change')
      .columns(['rule_key', 'at'])
      .execute();
    // A project's notification settings for one rule.
    await db.schema
      .createTable('mgr_alert_rule_project')
      .addColumn('rule_key', 'text', (c) => c.notNull())
      .addColumn('project_id', 'text', (c) => c.notNull())
      .addColumn('notify', 'integer', (c) => c.notNull())
      .addColumn('channels', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('mgr_alert_rule_project_pk', ['rule_key', 'project_id'])
      .execute();
    // Alert triggers: a scope (GLOBAL, COMPANY, PROJECT, DEVICE), a rule or all, a severity.
    await db.schema
      .createTable('mgr_alert_trigger')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('scope_type', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text')
      .addColumn('company_id', 'text')
      .addColumn('project_id', 'text')
      .addColumn('rule_key', 'text')
      .addColumn('severity', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    // Incident settings: `instance` or `project:<id>`, JSON with its secrets sealed.
    await db.schema
      .createTable('mgr_incident_setting')
      .addColumn('scope', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await createIncidentTables(db);
  },
};

/** The incidents, their notifications and the outbox (the second half of the migration). */
async function createIncidentTables(db: Db): Promise<void> {
  // Incidents. `open_key` (rule and device) is set while the incident is open and unique: two
  // managers evaluating the same fleet open one incident; null once it is resolved.
  await db.schema
    .createTable('mgr_incident')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('rule_key', 'text', (c) => c.notNull())
    .addColumn('device_id', 'text', (c) => c.notNull())
    .addColumn('device_name', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('company_id', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('open_key', 'text', (c) => c.unique())
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('details', 'text', (c) => c.notNull())
    .addColumn('opened_at', 'bigint', (c) => c.notNull())
    .addColumn('resolved_at', 'bigint')
    .addColumn('resolved_by', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mgr_incident_opened').on('mgr_incident').column('opened_at').execute();
  await db.schema
    .createIndex('mgr_incident_rule')
    .on('mgr_incident')
    .columns(['rule_key', 'status'])
    .execute();
  // The outbox: one row per notification to send, written with the incident change.
  await db.schema
    .createTable('mgr_notification')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('incident_id', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('channel_key', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('mgr_notification_due')
    .on('mgr_notification')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('mgr_notification_sent')
    .on('mgr_notification')
    .columns(['channel_key', 'sent_at'])
    .execute();
  await db.schema
    .createIndex('mgr_notification_incident')
    .on('mgr_notification')
    .column('incident_id')
    .execute();
}
