/**
 * Platform rules, alert triggers, incident settings and incidents. Every change is checked
 * against the caller's roles and written in one transaction through the repository; an incident
 * change writes its notifications (the outbox, `fanout.ts`) in the same transaction, so a change
 * is never without its notifications. No HTTP here.
 */
import type { Logger } from 'pino';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { ListSpec } from '../../kernel/paging.js';
import type { SecretBox } from '../../kernel/secret-box.js';
import { isGlobal, requireRole, roleAt, type Principal } from '../auth/index.js';
import type { DeviceFacts, FleetService } from '../fleet/index.js';
import {
  RULES,
  SEVERITIES,
  paramProblem,
  paramsOf,
  ruleOf,
  severityRank,
  type RuleDefinition,
  type Severity,
} from './catalog.js';
import { incidentView, notificationsFor, type IncidentEvent } from './fanout.js';
import type { AlertRepository, IncidentRow, RuleRow, TriggerRow, Visible } from './repository.js';
import {
  CHANNELS,
  destinationsView,
  instanceView,
  mergeDestinations,
  mergeInstance,
  parseDestinations,
  parseInstance,
  type Channel,
  type DestinationsInput,
  type InstanceInput,
  type InstanceSettings,
} from './settings.js';

export const SCOPE_TYPES = ['GLOBAL', 'COMPANY', 'PROJECT', 'DEVICE'] as const;
export type ScopeType = (typeof SCOPE_TYPES)[number];
/** Most alert triggers kept. */
export const MAX_TRIGGERS = 10_000;
/** Most incidents one resolve or delete call names. */
export const MAX_INCIDENTS_PER_CALL = 1000;

/** A rule with its settings in force. */
export interface RuleSettings {
  rule: RuleDefinition;
  enabled: boolean;
  severity: Severity;
  params: Record<string, number>;
  updatedAt: number | null;
  updatedBy: string | null;
}

function settingsOf(rule: RuleDefinition, row: RuleRow | undefined): RuleSettings {
  return {
    rule,
    enabled: row ? row.enabled === 1 : true,
    severity: (row?.severity as Severity | undefined) ?? rule.severity,
    params: paramsOf(rule, row ? (JSON.parse(row.params) as Record<string, unknown>) : {}),
    updatedAt: row ? Number(row.updated_at) : null,
    updatedBy: row?.updated_by ?? null,
  };
}

export function ruleView(s: RuleSettings) {
  return {
    ruleKey: s.rule.key,
    name: s.rule.name,
    description: s.rule.description,
    enabled: s.enabled,
    severity: s.severity,
    defaultSeverity: s.rule.severity,
    params: s.params,
    updatedAt: s.updatedAt === null ? null : new Date(s.updatedAt).toISOString(),
    updatedBy: s.updatedBy,
  };
}

function triggerView(t: TriggerRow) {
  return {
    id: t.id,
    name: t.name,
    scopeType: t.scope_type,
    scopeId: t.scope_id,
    ruleKey: t.rule_key,
    severity: t.severity,
    enabled: t.enabled === 1,
    createdBy: t.created_by,
    createdAt: new Date(Number(t.created_at)).toISOString(),
  };
}

function visibleTo(principal: Principal): Visible {
  if (isGlobal(principal, 'viewer')) return null;
  return {
    companyIds: principal.grants.filter((g) => g.companyId && !g.projectId).map((g) => g.companyId!),
    projectIds: principal.grants.filter((g) => g.projectId).map((g) => g.projectId!),
  };
}

export class AlertService {
  readonly #repo: AlertRepository;
  readonly #box: SecretBox;
  readonly #fleet: FleetService;
  readonly #log: Logger;
  /** Called after a change wrote notifications (the outbox sends them at once). */
  onEnqueued: () => void = () => undefined;

  constructor(repo: AlertRepository, box: SecretBox, fleet: FleetService, logger: Logger) {
    this.#repo = repo;
    this.#box = box;
    this.#fleet = fleet;
    this.#log = logger;
  }

  // --- rules ----------------------------------------------------------------------------------

  catalog() {
    const items = RULES.map((r) => ({
      ruleKey: r.key,
      name: r.name,
      description: r.description,
      defaultSeverity: r.severity,
      params: r.params,
    }));
    return {
      items,
      total: items.length,
      severities: SEVERITIES,
      channels: CHANNELS,
      scopeTypes: SCOPE_TYPES,
    };
  }

  /** Every rule with its settings in force (the evaluator reads this each pass). */
  async ruleSettings(): Promise<RuleSettings[]> {
    const rows = new Map((await this.#repo.rules()).map((r) => [r.rule_key, r]));
    return RULES.map((r) => settingsOf(r, rows.get(r.key)));
  }

  #rule(key: string): RuleDefinition {
    const rule = ruleOf(key);
    if (!rule) throw notFound(`platform rule "${key}" not found (see /admin/v1/platform-rule/catalog)`);
    return rule;
  }

  async rule(principal: Principal, key: string) {
    requireAnyRole(principal);
    const rule = this.#rule(key);
    return ruleView(settingsOf(rule, await this.#repo.rule(key)));
  }

  async updateRule(
    principal: Principal,
    key: string,
    change: {
      enabled?: boolean | undefined;
      severity?: Severity | undefined;
      params?: Record<string, number> | undefined;
    },
  ) {
    requireRole(principal, {}, 'admin');
    const rule = this.#rule(key);
    const problem = change.params ? paramProblem(rule, change.params) : null;
    if (problem) throw badRequest(problem);
    return this.#repo.transaction(async (repo) => {
      const before = await repo.rule(key);
      const current = settingsOf(rule, before);
      const next: RuleRow = {
        rule_key: key,
        enabled: (change.enabled ?? current.enabled) ? 1 : 0,
        severity: change.severity ?? current.severity,
        params: JSON.stringify({ ...current.params, ...change.params }),
        updated_by: principal.subject,
        updated_at: Date.now(),
      };
      await repo.putRule(next);
      const after = settingsOf(rule, next);
      await repo.addRuleChange({
        id: uuidv7(),
        rule_key: key,
        project_id: null,
        actor: principal.subject,
        action: 'platform-rule.updated',
        before: JSON.stringify({
          enabled: current.enabled,
          severity: current.severity,
          params: current.params,
        }),
        after: JSON.stringify({ enabled: after.enabled, severity: after.severity, params: after.params }),
        at: next.updated_at,
      });
      this.#log.info({ rule: key, by: principal.subject }, 'platform rule updated');
      return ruleView(after);
    });
  }

  async ruleAudit(principal: Principal, key: string, spec: ListSpec) {
    requireRole(principal, {}, 'viewer');
    this.#rule(key);
    const page = await this.#repo.listRuleChanges(spec, key);
    return {
      items: page.items.map((c) => ({
        id: c.id,
        ruleKey: c.rule_key,
        projectId: c.project_id,
        actor: c.actor,
        action: c.action,
        before: c.before === null ? null : (JSON.parse(c.before) as unknown),
        after: JSON.parse(c.after) as unknown,
        at: new Date(Number(c.at)).toISOString(),
      })),
      total: page.total,
    };
  }

  async ruleProjects(principal: Principal, key: string, spec: ListSpec) {
    requireRole(principal, {}, 'viewer');
    this.#rule(key);
    const page = await this.#repo.listRuleProjects(spec, key);
    return {
      items: page.items.map((p) => ({
        ruleKey: p.rule_key,
        projectId: p.project_id,
        notify: p.notify === 1,
        channels: JSON.parse(p.channels) as Channel[],
        updatedBy: p.updated_by,
        updatedAt: new Date(Number(p.updated_at)).toISOString(),
      })),
      total: page.total,
    };
  }

  async stats(principal: Principal) {
    requireRole(principal, {}, 'viewer');
    const counts = new Map((await this.#repo.incidentStats()).map((s) => [s.rule_key, s]));
    const rules = await this.ruleSettings();
    const items = rules.map((s) => ({
      ruleKey: s.rule.key,
      enabled: s.enabled,
      severity: s.severity,
      openIncidents: counts.get(s.rule.key)?.open ?? 0,
      totalIncidents: counts.get(s.rule.key)?.total ?? 0,
    }));
    return {
      items,
      total: items.length,
      enabled: rules.filter((r) => r.enabled).length,
      openIncidents: items.reduce((n, i) => n + i.openIncidents, 0),
      triggers: await this.#repo.countTriggers(),
    };
  }

  /** The rules as a project sees them: settings in force and the project's notification settings. */
  async projectRules(principal: Principal, projectId: string) {
    await this.#fleet.project(principal, projectId);
    const own = new Map((await this.#repo.ruleProjectsOf(projectId)).map((r) => [r.rule_key, r]));
    const items = (await this.ruleSettings()).map((s) => {
      const p = own.get(s.rule.key);
      return {
        ...ruleView(s),
        projectId,
        notify: p ? p.notify === 1 : true,
        channels: p ? (JSON.parse(p.channels) as Channel[]) : [...CHANNELS],
      };
    });
    return { items, total: items.length };
  }

  async setRuleNotifications(
    principal: Principal,
    key: string,
    change: { projectId: string; notify: boolean; channels?: Channel[] | undefined },
  ) {
    this.#rule(key);
    const p = await this.#fleet.project(principal, change.projectId);
    requireRole(principal, { projectId: p.id, companyId: p.company_id }, 'admin');
    const channels = [...new Set(change.channels ?? CHANNELS)];
    return this.#repo.transaction(async (repo) => {
      const before = await repo.ruleProject(key, p.id);
      const now = Date.now();
      await repo.putRuleProject({
        rule_key: key,
        project_id: p.id,
        notify: change.notify ? 1 : 0,
        channels: JSON.stringify(channels),
        updated_by: principal.subject,
        updated_at: now,
      });
      await repo.addRuleChange({
        id: uuidv7(),
        rule_key: key,
        project_id: p.id,
        actor: principal.subject,
        action: 'platform-rule.notifications-updated',
        before: before
          ? JSON.stringify({ notify: before.notify === 1, channels: JSON.parse(before.channels) as unknown })
          : null,
        after: JSON.stringify({ notify: change.notify, channels }),
        at: now,
      });
      return { ruleKey: key, projectId: p.id, notify: change.notify, channels };
    });
  }

  // --- triggers -------------------------------------------------------------------------------

  async createTrigger(
    principal: Principal,
    input: {
      name: string;
      scopeType: ScopeType;
      scopeId?: string | undefined;
      ruleKey?: string | null | undefined;
      severity: Severity;
      enabled?: boolean | undefined;
    },
  ) {
    if (input.ruleKey) this.#rule(input.ruleKey);
    let companyId: string | null = null;
    let projectId: string | null = null;
    const scopeId = input.scopeType === 'GLOBAL' ? null : (input.scopeId ?? '');
    if (input.scopeType !== 'GLOBAL' && !scopeId)
      throw badRequest(`scopeId is required for scopeType ${input.scopeType}`);
    if (input.scopeType === 'GLOBAL') requireRole(principal, {}, 'admin');
    else if (input.scopeType === 'COMPANY') {
      companyId = scopeId;
      requireRole(principal, { companyId }, 'admin');
    } else if (input.scopeType === 'PROJECT') {
      const p = await this.#fleet.project(principal, scopeId!);
      [companyId, projectId] = [p.company_id, p.id];
      requireRole(principal, { companyId, projectId }, 'admin');
    } else {
      const d = await this.#fleet.device(principal, scopeId!);
      [companyId, projectId] = [d.companyId, d.projectId];
      requireRole(principal, { companyId, projectId }, 'admin');
    }
    const row: TriggerRow = {
      id: uuidv7(),
      name: input.name,
      scope_type: input.scopeType,
      scope_id: scopeId,
      company_id: companyId,
      project_id: projectId,
      rule_key: input.ruleKey ?? null,
      severity: input.severity,
      enabled: input.enabled === false ? 0 : 1,
      created_by: principal.subject,
      created_at: Date.now(),
    };
    await this.#repo.transaction(async (repo) => {
      if ((await repo.countTriggers()) >= MAX_TRIGGERS)
        throw conflict(`at most ${MAX_TRIGGERS} alert triggers`);
      await repo.insertTrigger(row);
    });
    return triggerView(row);
  }

  async listTriggers(principal: Principal, spec: ListSpec) {
    const page = await this.#repo.listTriggers(spec, visibleTo(principal));
    return { items: page.items.map(triggerView), total: page.total };
  }

  async #visibleTrigger(principal: Principal, id: string): Promise<TriggerRow> {
    const t = await this.#repo.trigger(id);
    const sees =
      t &&
      (t.scope_type === 'GLOBAL'
        ? requireAnyRole(principal)
        : roleAt(principal, { companyId: t.company_id, projectId: t.project_id }) !== null);
    if (!t || !sees) throw notFound(`alert trigger "${id}" not found`);
    return t;
  }

  async trigger(principal: Principal, id: string) {
    return triggerView(await this.#visibleTrigger(principal, id));
  }

  async deleteTrigger(principal: Principal, id: string) {
    await this.#repo.transaction(async (repo) => {
      const t = await this.#visibleTrigger(principal, id);
      requireRole(principal, { companyId: t.company_id, projectId: t.project_id }, 'admin');
      await repo.deleteTrigger(id);
    });
    return { id, deleted: true };
  }

  // --- incident settings ----------------------------------------------------------------------

  async instanceSettings(): Promise<InstanceSettings> {
    return parseInstance((await this.#repo.setting('instance'))?.value);
  }

  async instanceSettingsView(principal: Principal) {
    requireAnyRole(principal);
    return instanceView(await this.instanceSettings());
  }

  async setInstanceSettings(principal: Principal, input: InstanceInput) {
    requireRole(principal, {}, 'admin');
    return this.#repo.transaction(async (repo) => {
      const next = mergeInstance(this.#box, parseInstance((await repo.setting('instance'))?.value), input);
      await repo.putSetting({
        scope: 'instance',
        value: JSON.stringify(next),
        updated_by: principal.subject,
        updated_at: Date.now(),
      });
      return instanceView(next);
    });
  }

  async projectSettings(principal: Principal, projectId: string) {
    await this.#fleet.project(principal, projectId);
    return {
      projectId,
      ...destinationsView(parseDestinations((await this.#repo.setting(`project:${projectId}`))?.value)),
    };
  }

  async setProjectSettings(principal: Principal, projectId: string, input: DestinationsInput) {
    const p = await this.#fleet.project(principal, projectId);
    requireRole(principal, { projectId, companyId: p.company_id }, 'admin');
    return this.#repo.transaction(async (repo) => {
      const scope = `project:${projectId}`;
      const next = mergeDestinations(this.#box, parseDestinations((await repo.setting(scope))?.value), input);
      await repo.putSetting({
        scope,
        value: JSON.stringify(next),
        updated_by: principal.subject,
        updated_at: Date.now(),
      });
      return { projectId, ...destinationsView(next) };
    });
  }

  // --- incidents ------------------------------------------------------------------------------

  async listIncidents(
    principal: Principal,
    spec: ListSpec,
    where: { ruleKey?: string; projectId?: string } = {},
  ) {
    if (where.ruleKey !== undefined) this.#rule(where.ruleKey);
    if (where.projectId) await this.#fleet.project(principal, where.projectId);
    const page = await this.#repo.listIncidents(spec, where, visibleTo(principal));
    return { items: page.items.map(incidentView), total: page.total };
  }

  openIncidents(): Promise<IncidentRow[]> {
    return this.#repo.openIncidents();
  }

  /** Whether the latest incident of a rule on a device was resolved by hand at or after `since` (the same episode). */
  async resolvedByHandSince(ruleKey: string, deviceId: string, since: number): Promise<boolean> {
    return this.#repo.resolvedByHandSince(ruleKey, deviceId, since);
  }

  /** Opens an incident (unless one is open: another manager's); writes its notifications. */
  async open(
    s: RuleSettings,
    device: DeviceFacts,
    summary: string,
    details: Record<string, unknown>,
  ): Promise<boolean> {
    const opened = await this.#repo.transaction(async (repo) => {
      const triggers = await repo.triggersFor(s.rule.key, device);
      let severity = s.severity;
      if (triggers.length)
        severity = triggers
          .map((t) => t.severity as Severity)
          .reduce((a, b) => (severityRank(b) > severityRank(a) ? b : a));
      const now = Date.now();
      const row: IncidentRow = {
        id: uuidv7(now),
        rule_key: s.rule.key,
        device_id: device.id,
        device_name: device.name,
        project_id: device.projectId,
        company_id: device.companyId,
        severity,
        status: 'OPEN',
        open_key: `${s.rule.key}|${device.id}`,
        summary: summary.slice(0, 1000),
        details: JSON.stringify(details),
        opened_at: now,
        resolved_at: null,
        resolved_by: null,
        updated_at: now,
      };
      if (!(await repo.openIncident(row))) return false;
      await repo.insertNotifications(await notificationsFor(repo, row, 'OPENED'));
      return true;
    });
    if (opened) {
      this.#log.warn({ rule: s.rule.key, deviceId: device.id, summary }, 'incident opened');
      this.onEnqueued();
    }
    return opened;
  }

  /** Resolves one open incident (not when another resolved it first); writes its notifications. */
  async resolve(id: string, by: string): Promise<IncidentRow | undefined> {
    const row = await this.#repo.transaction(async (repo) => {
      const r = await repo.resolveIncident(id, by, Date.now());
      if (r) await repo.insertNotifications(await notificationsFor(repo, r, 'RESOLVED'));
      return r;
    });
    if (row) {
      this.#log.info({ rule: row.rule_key, deviceId: row.device_id, by }, 'incident resolved');
      this.onEnqueued();
    }
    return row;
  }

  #checkIds(ids: string[]): void {
    if (ids.length === 0) throw badRequest('ids: name at least one incident');
    if (ids.length > MAX_INCIDENTS_PER_CALL)
      throw badRequest(`ids: at most ${MAX_INCIDENTS_PER_CALL} per call`);
  }

  async resolveByHand(principal: Principal, ids: string[]) {
    requireRole(principal, {}, 'operator');
    this.#checkIds(ids);
    const resolved: string[] = [];
    for (const id of ids) if (await this.resolve(id, principal.subject)) resolved.push(id);
    return { resolved, notOpen: ids.filter((id) => !resolved.includes(id)) };
  }

  async deleteIncidents(principal: Principal, ids: string[]) {
    requireRole(principal, {}, 'admin');
    this.#checkIds(ids);
    const rows = await this.#repo.transaction(async (repo) => {
      const gone = await repo.deleteIncidents(ids);
      for (const r of gone)
        if (r.status === 'OPEN')
          await repo.insertNotifications(await notificationsFor(repo, r, 'DELETED' satisfies IncidentEvent));
      return gone;
    });
    if (rows.some((r) => r.status === 'OPEN')) this.onEnqueued();
    return { deleted: rows.map((r) => r.id), notFound: ids.filter((id) => !rows.some((r) => r.id === id)) };
  }

  async incidentNotifications(principal: Principal, id: string) {
    requireRole(principal, {}, 'viewer');
    const rows = await this.#repo.notificationsOf(id);
    return {
      items: rows.map((n) => ({
        id: n.id,
        event: n.event,
        channel: n.channel,
        status: n.status,
        attempts: n.attempts,
        lastError: n.last_error,
        createdAt: new Date(Number(n.created_at)).toISOString(),
        sentAt: n.sent_at === null ? null : new Date(Number(n.sent_at)).toISOString(),
      })),
      total: rows.length,
    };
  }
}

/** Any role anywhere (the rule catalogue and the instance's settings are readable by every caller). */
function requireAnyRole(principal: Principal): true {
  if (principal.grants.length === 0) requireRole(principal, {}, 'viewer');
  return true;
}
