/**
 * The alerts module's tables: rule settings and their change history, per-project notification
 * settings of a rule, alert triggers, incident settings, incidents and the notification outbox.
 * An incident change and its notifications are written in one transaction (`transaction`), so a
 * change is never without its notifications, nor a notification without its change.
 */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { sql } from '../../kernel/db/index.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';

export type IncidentStatus = 'OPEN' | 'RESOLVED';
export type NotificationStatus = 'PENDING' | 'SENDING' | 'RETRY' | 'SENT' | 'FAILED';

export interface AlertTables {
  mgr_alert_rule: {
    rule_key: string;
    enabled: number;
    severity: string;
    params: string;
    updated_by: string;
    updated_at: number;
  };
  mgr_alert_rule_change: {
    id: string;
    rule_key: string;
    project_id: string | null;
    actor: string;
    action: string;
    before: string | null;
    after: string;
    at: number;
  };
  mgr_alert_rule_project: {
    rule_key: string;
    project_id: string;
    notify: number;
    channels: string;
    updated_by: string;
    updated_at: number;
  };
  mgr_alert_trigger: {
    id: string;
    name: string;
    scope_type: string;
    scope_id: string | null;
    company_id: string | null;
    project_id: string | null;
    rule_key: string | null;
    severity: string;
    enabled: number;
    created_by: string;
    created_at: number;
  };
  mgr_incident_setting: { scope: string; value: string; updated_by: string; updated_at: number };
  mgr_incident: {
    id: string;
    rule_key: string;
    device_id: string;
    device_name: string;
    project_id: string;
    company_id: string;
    severity: string;
    status: IncidentStatus;
    open_key: string | null;
    summary: string;
    details: string;
    opened_at: number;
    resolved_at: number | null;
    resolved_by: string | null;
    updated_at: number;
  };
  mgr_notification: {
    id: string;
    incident_id: string;
    event: string;
    channel: string;
    channel_key: string;
    target: string;
    payload: string;
    status: NotificationStatus;
    attempts: number;
    next_attempt_at: number;
    claimed_by: string | null;
    lease_until: number | null;
    last_error: string | null;
    created_at: number;
    sent_at: number | null;
  };
}

export type RuleRow = AlertTables['mgr_alert_rule'];
export type RuleChangeRow = AlertTables['mgr_alert_rule_change'];
export type RuleProjectRow = AlertTables['mgr_alert_rule_project'];
export type TriggerRow = AlertTables['mgr_alert_trigger'];
export type SettingRow = AlertTables['mgr_incident_setting'];
export type IncidentRow = AlertTables['mgr_incident'];
export type NotificationRow = AlertTables['mgr_notification'];

/** The companies and projects a caller holds a role on (null: a global role, everything). */
export type Visible = { companyIds: string[]; projectIds: string[] } | null;
const ids = (list: string[]) => (list.length ? list : ['']);

export const INCIDENT_LIST: ListDefinition = {
  fields: {
    ruleKey: 'rule_key',
    deviceId: 'device_id',
    projectId: 'project_id',
    companyId: 'company_id',
    severity: 'severity',
    status: 'status',
    openedAt: { column: 'opened_at', type: 'integer' },
    resolvedAt: { column: 'resolved_at', type: 'integer' },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'openedAt', order: 'desc' }],
  maxLimit: 1000,
};

export const RULE_CHANGE_LIST: ListDefinition = {
  fields: {
    projectId: 'project_id',
    actor: 'actor',
    action: 'action',
    at: { column: 'at', type: 'integer' },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'at', order: 'desc' }],
  maxLimit: 1000,
};

export const RULE_PROJECT_LIST: ListDefinition = {
  fields: { projectId: 'project_id', updatedAt: { column: 'updated_at', type: 'integer' } },
  tiebreak: 'project_id',
  defaultSort: [{ field: 'projectId', order: 'asc' }],
  maxLimit: 1000,
};

export const TRIGGER_LIST: ListDefinition = {
  fields: {
    name: 'name',
    scopeType: 'scope_type',
    scopeId: 'scope_id',
    ruleKey: 'rule_key',
    severity: 'severity',
    createdAt: { column: 'created_at', type: 'integer' },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'createdAt', order: 'asc' }],
  maxLimit: 1000,
};

export class AlertRepository extends BoundRepository<AlertTables, AlertRepository> {
  protected bind(trx: Transaction<AlertTables>): AlertRepository {
    return new AlertRepository(this.database, trx);
  }

  // --- rules ----------------------------------------------------------------------------------

  rules(): Promise<RuleRow[]> {
    return this.db.selectFrom('mgr_alert_rule').selectAll().execute();
  }

  rule(key: string): Promise<RuleRow | undefined> {
    return this.db.selectFrom('mgr_alert_rule').selectAll().where('rule_key', '=', key).executeTakeFirst();
  }

  async putRule(row: RuleRow): Promise<void> {
    await this.db
      .insertInto('mgr_alert_rule')
      .values(row)
      .onConflict((oc) =>
        oc.column('rule_key').doUpdateSet({
          enabled: row.enabled,
          severity: row.severity,
          params: row.params,
          updated_by: row.updated_by,
          updated_at: row.updated_at,
        }),
      )
      .execute();
  }

  async addRuleChange(row: RuleChangeRow): Promise<void> {
    await this.db.insertInto('mgr_alert_rule_change').values(row).execute();
  }

  listRuleChanges(spec: ListSpec, ruleKey: string) {
    const q = this.db.selectFrom('mgr_alert_rule_change').selectAll().where('rule_key', '=', ruleKey);
    return runList(this.database, q, RULE_CHANGE_LIST, spec);
  }

  ruleProject(ruleKey: string, projectId: string): Promise<RuleProjectRow | undefined> {
    return this.db
      .selectFrom('mgr_alert_rule_project')
      .selectAll()
      .where('rule_key', '=', ruleKey)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
  }

  ruleProjectsOf(projectId: string): Promise<RuleProjectRow[]> {
    return this.db
      .selectFrom('mgr_alert_rule_project')
      .selectAll()
      .where('project_id', '=', projectId)
      .execute();
  }

  listRuleProjects(spec: ListSpec, ruleKey: string) {
    const q = this.db.selectFrom('mgr_alert_rule_project').selectAll().where('rule_key', '=', ruleKey);
    return runList(this.database, q, RULE_PROJECT_LIST, spec);
  }

  async putRuleProject(row: RuleProjectRow): Promise<void> {
    await this.db
      .insertInto('mgr_alert_rule_project')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['rule_key', 'project_id']).doUpdateSet({
          notify: row.notify,
          channels: row.channels,
          updated_by: row.updated_by,
          updated_at: row.updated_at,
        }),
      )
      .execute();
  }

  // --- triggers -------------------------------------------------------------------------------

  async insertTrigger(row: TriggerRow): Promise<void> {
    await this.db.insertInto('mgr_alert_trigger').values(row).execute();
  }

  trigger(id: string): Promise<TriggerRow | undefined> {
    return this.db.selectFrom('mgr_alert_trigger').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async deleteTrigger(id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('mgr_alert_trigger').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async countTriggers(): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_alert_trigger')
      .select(sql<number>`count(*)`.as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Triggers `visible` may see: global ones, and those of its companies and projects. */
  listTriggers(spec: ListSpec, visible: Visible) {
    let q = this.db.selectFrom('mgr_alert_trigger').selectAll();
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('scope_type', '=', 'GLOBAL'),
          eb('company_id', 'in', ids(visible.companyIds)),
          eb('project_id', 'in', ids(visible.projectIds)),
        ]),
      );
    return runList(this.database, q, TRIGGER_LIST, spec);
  }

  /** The enabled triggers that cover a device of `projectId` in `companyId` for `ruleKey`. */
  triggersFor(ruleKey: string, device: { id: string; projectId: string; companyId: string }) {
    return this.db
      .selectFrom('mgr_alert_trigger')
      .selectAll()
      .where('enabled', '=', 1)
      .where((eb) => eb.or([eb('rule_key', 'is', null), eb('rule_key', '=', ruleKey)]))
      .where((eb) =>
        eb.or([
          eb('scope_type', '=', 'GLOBAL'),
          eb.and([eb('scope_type', '=', 'COMPANY'), eb('scope_id', '=', device.companyId)]),
          eb.and([eb('scope_type', '=', 'PROJECT'), eb('scope_id', '=', device.projectId)]),
          eb.and([eb('scope_type', '=', 'DEVICE'), eb('scope_id', '=', device.id)]),
        ]),
      )
      .execute();
  }

  // --- incident settings ----------------------------------------------------------------------

  setting(scope: string): Promise<SettingRow | undefined> {
    return this.db
      .selectFrom('mgr_incident_setting')
      .selectAll()
      .where('scope', '=', scope)
      .executeTakeFirst();
  }

  async putSetting(row: SettingRow): Promise<void> {
    await this.db
      .insertInto('mgr_incident_setting')
      .values(row)
      .onConflict((oc) =>
        oc
          .column('scope')
          .doUpdateSet({ value: row.value, updated_by: row.updated_by, updated_at: row.updated_at }),
      )
      .execute();
  }

  // --- incidents ------------------------------------------------------------------------------

  /** Opens an incident unless one of its rule and device is open (another manager's, say): true when opened. */
  async openIncident(row: IncidentRow): Promise<boolean> {
    const r = await this.db
      .insertInto('mgr_incident')
      .values(row)
      .onConflict((oc) => oc.column('open_key').doNothing())
      .returning('id')
      .execute();
    return r.length > 0;
  }

  /** Resolves an open incident: the row as it is now, or undefined when it was not open (resolved by another). */
  async resolveIncident(id: string, by: string, now: number): Promise<IncidentRow | undefined> {
    const rows = await this.db
      .updateTable('mgr_incident')
      .set({ status: 'RESOLVED', open_key: null, resolved_at: now, resolved_by: by, updated_at: now })
      .where('id', '=', id)
      .where('status', '=', 'OPEN')
      .returningAll()
      .execute();
    return rows[0];
  }

  /** Deletes incidents (their notifications stay: each describes a change that happened); answers the rows deleted. */
  async deleteIncidents(idList: string[]): Promise<IncidentRow[]> {
    if (idList.length === 0) return [];
    const rows = await this.db.selectFrom('mgr_incident').selectAll().where('id', 'in', idList).execute();
    if (rows.length === 0) return [];
    await this.db.deleteFrom('mgr_incident').where('id', 'in', idList).execute();
    return rows;
  }

  /** Whether the latest incident of a rule on a device was resolved by a person at or after `since`. */
  async resolvedByHandSince(ruleKey: string, deviceId: string, since: number): Promise<boolean> {
    const r = await this.db
      .selectFrom('mgr_incident')
      .select(['resolved_by', 'resolved_at'])
      .where('rule_key', '=', ruleKey)
      .where('device_id', '=', deviceId)
      .orderBy('opened_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return (
      !!r &&
      r.resolved_at !== null &&
      Number(r.resolved_at) >= since &&
      !String(r.resolved_by).startsWith('manager:')
    );
  }

  incident(id: string): Promise<IncidentRow | undefined> {
    return this.db.selectFrom('mgr_incident').selectAll().where('id', '=', id).executeTakeFirst();
  }

  openIncidents(): Promise<IncidentRow[]> {
    return this.db.selectFrom('mgr_incident').selectAll().where('status', '=', 'OPEN').execute();
  }

  listIncidents(spec: ListSpec, where: { ruleKey?: string; projectId?: string }, visible: Visible) {
    let q = this.db.selectFrom('mgr_incident').selectAll();
    if (where.ruleKey !== undefined) q = q.where('rule_key', '=', where.ruleKey);
    if (where.projectId !== undefined) q = q.where('project_id', '=', where.projectId);
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('company_id', 'in', ids(visible.companyIds)),
          eb('project_id', 'in', ids(visible.projectIds)),
        ]),
      );
    return runList(this.database, q, INCIDENT_LIST, spec);
  }

  /** Incidents by rule: open now, and in all. */
  async incidentStats(): Promise<{ rule_key: string; open: number; total: number }[]> {
    const rows = await this.db
      .selectFrom('mgr_incident')
      .select([
        'rule_key',
        sql<number>`sum(case when status = 'OPEN' then 1 else 0 end)`.as('open'),
        sql<number>`count(*)`.as('total'),
      ])
      .groupBy('rule_key')
      .execute();
    return rows.map((r) => ({ rule_key: r.rule_key, open: Number(r.open), total: Number(r.total) }));
  }

  // --- the outbox -----------------------------------------------------------------------------

  async insertNotifications(rows: NotificationRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 100) {
      await this.db
        .insertInto('mgr_notification')
        .values(rows.slice(i, i + 100))
        .execute();
    }
  }

  /**
   * Claims up to `limit` notifications due now (waiting, or being sent under a lease that
   * expired: its holder stopped). One statement; on PostgreSQL the inner select takes its rows
   * `FOR UPDATE SKIP LOCKED`, so two managers never claim the same row.
   */
  async claim(instance: string, limit: number, leaseMs: number): Promise<NotificationRow[]> {
    if (limit <= 0) return [];
    const now = Date.now();
    let due = this.db
      .selectFrom('mgr_notification')
      .select('id')
      .where((eb) =>
        eb.or([
          eb.and([eb('status', 'in', ['PENDING', 'RETRY']), eb('next_attempt_at', '<=', now)]),
          eb.and([eb('status', '=', 'SENDING'), eb('lease_until', '<', now)]),
        ]),
      )
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(limit);
    if (this.database.dialect === 'postgres') due = due.forUpdate().skipLocked();
    return this.db
      .updateTable('mgr_notification')
      .set({ status: 'SENDING', claimed_by: instance, lease_until: now + leaseMs })
      .where('id', 'in', due)
      .returningAll()
      .execute();
  }

  /** Ends a claimed notification (only while this process holds it): SENT or FAILED. */
  async finish(
    id: string,
    instance: string,
    status: 'SENT' | 'FAILED',
    error: string | null,
  ): Promise<boolean> {
    const now = Date.now();
    const r = await this.db
      .updateTable('mgr_notification')
      .set({
        status,
        last_error: error,
        attempts: sql<number>`attempts + 1`,
        sent_at: status === 'SENT' ? now : null,
        claimed_by: null,
        lease_until: null,
      })
      .where('id', '=', id)
      .where('claimed_by', '=', instance)
      .where('status', '=', 'SENDING')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Puts a claimed notification back to wait: after a failed attempt (`counts`), or held by the rate limit. */
  async release(
    id: string,
    instance: string,
    nextAttemptAt: number,
    error: string | null,
    counts: boolean,
  ): Promise<boolean> {
    const r = await this.db
      .updateTable('mgr_notification')
      .set({
        status: 'RETRY',
        next_attempt_at: nextAttemptAt,
        last_error: error,
        ...(counts ? { attempts: sql<number>`attempts + 1` } : {}),
        claimed_by: null,
        lease_until: null,
      })
      .where('id', '=', id)
      .where('claimed_by', '=', instance)
      .where('status', '=', 'SENDING')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Extends the leases this process holds. */
  async renew(instance: string, leaseMs: number): Promise<void> {
    await this.db
      .updateTable('mgr_notification')
      .set({ lease_until: Date.now() + leaseMs })
      .where('claimed_by', '=', instance)
      .where('status', '=', 'SENDING')
      .execute();
  }

  /** Notifications of a channel sent since `since` (the rate limit), across every manager. */
  async sentSince(channelKey: string, since: number): Promise<number> {
    const r = await this.db
      .selectFrom('mgr_notification')
      .select(sql<number>`count(*)`.as('n'))
      .where('channel_key', '=', channelKey)
      .where('sent_at', '>=', since)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  notificationsOf(incidentId: string): Promise<NotificationRow[]> {
    return this.db
      .selectFrom('mgr_notification')
      .selectAll()
      .where('incident_id', '=', incidentId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
  }

  /** Sent and failed notifications older than `before` are dropped (housekeeping); answers how many. */
  async pruneNotifications(before: number): Promise<number> {
    const r = await this.db
      .deleteFrom('mgr_notification')
      .where('status', 'in', ['SENT', 'FAILED'])
      .where('created_at', '<', before)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
