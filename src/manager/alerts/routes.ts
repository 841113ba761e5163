/**
 * HTTP translation of the alerts: platform rules, alert triggers and incident settings on the
 * main API (`/api/v1/...`), and the rule administration, incidents and instance settings on the
 * admin console API (`/admin/v1/...`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../../kernel/errors.js';
import { ListQuerySchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { principalOf } from '../auth/index.js';
import { INCIDENT_LIST, RULE_CHANGE_LIST, RULE_PROJECT_LIST, TRIGGER_LIST } from './repository.js';
import type { AlertService } from './service.js';
import * as S from './schemas.js';

type Query = { Querystring: Record<string, unknown> };

function text(q: Record<string, unknown>, name: string): string | undefined {
  const v = q[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || v.length > 200)
    throw badRequest(`${name} must be text of at most 200 characters`);
  return v;
}

/** Incident ids of a resolve or delete: `ids` in a JSON body, or `ids`/`id` in the query string. */
function incidentIds(request: FastifyRequest<Query>): string[] {
  const out: string[] = [];
  for (const name of ['ids', 'id']) {
    const v = request.query[name];
    for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v])
      out.push(
        ...String(x)
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
  }
  const body = request.body as { ids?: unknown } | null | undefined;
  if (body && typeof body === 'object') {
    const keys = Object.keys(body).filter((k) => k !== 'ids');
    if (keys.length) throw badRequest(`failed to decode request body: json: unknown field "${keys[0]}"`);
    if (!Array.isArray(body.ids) || body.ids.some((x) => typeof x !== 'string' || x.length > 100))
      throw badRequest('ids must be a list of incident ids');
    out.push(...(body.ids as string[]));
  }
  return [...new Set(out)];
}

export async function alertRoutes(app: FastifyInstance, options: { alerts: AlertService }) {
  const { alerts } = options;
  app.get<Query>(
    '/api/v1/project/platform-rule',
    { schema: { querystring: ListQuerySchema } },
    async (request) => {
      const projectId = text(request.query, 'projectId');
      if (!projectId) throw badRequest('projectId is required');
      return alerts.projectRules(principalOf(request), projectId);
    },
  );
  app.get<{ Params: S.RuleParams }>(
    '/api/v1/platform-rule/:ruleKey',
    { schema: { params: S.RuleParams } },
    (request) => alerts.rule(principalOf(request), request.params.ruleKey),
  );
  app.post<{ Params: S.RuleParams; Body: S.RuleNotificationsBody }>(
    '/api/v1/project/platform-rule/:ruleKey/notifications',
    { schema: { params: S.RuleParams, body: S.RuleNotificationsBody } },
    (request) => alerts.setRuleNotifications(principalOf(request), request.params.ruleKey, request.body),
  );
  app.get<{ Params: S.ProjectParams }>(
    '/api/v1/project/:projectId/incident-settings',
    { schema: { params: S.ProjectParams } },
    (request) => alerts.projectSettings(principalOf(request), request.params.projectId),
  );
  app.post<{ Params: S.ProjectParams; Body: S.DestinationsBody }>(
    '/api/v1/project/:projectId/incident-settings',
    { schema: { params: S.ProjectParams, body: S.DestinationsBody } },
    (request) => alerts.setProjectSettings(principalOf(request), request.params.projectId, request.body),
  );
  app.get<{ Params: S.ProjectParams } & Query>(
    '/api/v1/project/:projectId/incidents',
    { schema: { params: S.ProjectParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, INCIDENT_LIST);
      return listResponse(
        spec,
        await alerts.listIncidents(principalOf(request), spec, { projectId: request.params.projectId }),
      );
    },
  );
  app.get('/api/v1/system/incident-settings-instance', (request) =>
    alerts.instanceSettingsView(principalOf(request)),
  );
  // Alert triggers: a scope (GLOBAL, COMPANY, PROJECT, DEVICE), a rule (or every rule), a severity.
  app.get<Query>('/api/v1/alert-trigger', { schema: { querystring: ListQuerySchema } }, async (request) => {
    const spec = parseListQuery(request.query, TRIGGER_LIST);
    return listResponse(spec, await alerts.listTriggers(principalOf(request), spec));
  });
  app.post<{ Body: S.CreateTriggerBody }>(
    '/api/v1/alert-trigger',
    { schema: { body: S.CreateTriggerBody } },
    async (request, reply) =>
      reply.status(201).send(await alerts.createTrigger(principalOf(request), request.body)),
  );
  app.get<{ Params: S.TriggerParams }>(
    '/api/v1/alert-trigger/:triggerId',
    { schema: { params: S.TriggerParams } },
    (request) => alerts.trigger(principalOf(request), request.params.triggerId),
  );
  app.delete<{ Params: S.TriggerParams }>(
    '/api/v1/alert-trigger/:triggerId',
    { schema: { params: S.TriggerParams } },
    (request) => alerts.deleteTrigger(principalOf(request), request.params.triggerId),
  );
}

export async function adminAlertRoutes(app: FastifyInstance, options: { alerts: AlertService }) {
  const { alerts } = options;
  const rules = '/admin/v1/platform-rule';
  app.get(`${rules}/catalog`, (request) => {
    principalOf(request);
    return alerts.catalog();
  });
  app.get(`${rules}/stats`, (request) => alerts.stats(principalOf(request)));
  app.get<{ Params: S.RuleParams }>(`${rules}/:ruleKey`, { schema: { params: S.RuleParams } }, (request) =>
    alerts.rule(principalOf(request), request.params.ruleKey),
  );
  app.post<{ Params: S.RuleParams; Body: S.UpdateRuleBody }>(
    `${rules}/:ruleKey`,
    { schema: { params: S.RuleParams, body: S.UpdateRuleBody } },
    (request) => alerts.updateRule(principalOf(request), request.params.ruleKey, request.body),
  );
  app.get<{ Params: S.RuleParams } & Query>(
    `${rules}/:ruleKey/audit`,
    { schema: { params: S.RuleParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, RULE_CHANGE_LIST);
      return listResponse(spec, await alerts.ruleAudit(principalOf(request), request.params.ruleKey, spec));
    },
  );
  app.get<{ Params: S.RuleParams } & Query>(
    `${rules}/:ruleKey/incidents`,
    { schema: { params: S.RuleParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, INCIDENT_LIST);
      return listResponse(
        spec,
        await alerts.listIncidents(principalOf(request), spec, { ruleKey: request.params.ruleKey }),
      );
    },
  );
  app.get<{ Params: S.RuleParams } & Query>(
    `${rules}/:ruleKey/projects`,
    { schema: { params: S.RuleParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, RULE_PROJECT_LIST);
      return listResponse(
        spec,
        await alerts.ruleProjects(principalOf(request), request.params.ruleKey, spec),
      );
    },
  );
  const incident = '/admin/v1/instance-alert/incident';
  app.get<Query>(incident, { schema: { querystring: ListQuerySchema } }, async (request) => {
    const spec = parseListQuery(request.query, INCIDENT_LIST);
    const ruleKey = text(request.query, 'ruleKey');
    const projectId = text(request.query, 'projectId');
    return listResponse(
      spec,
      await alerts.listIncidents(principalOf(request), spec, {
        ...(ruleKey ? { ruleKey } : {}),
        ...(projectId ? { projectId } : {}),
      }),
    );
  });
  app.get<{ Params: S.IncidentParams }>(
    `${incident}/:incidentId/notifications`,
    { schema: { params: S.IncidentParams } },
    (request) => alerts.incidentNotifications(principalOf(request), request.params.incidentId),
  );
  app.post<Query>(`${incident}/resolve`, (request) =>
    alerts.resolveByHand(principalOf(request), incidentIds(request)),
  );
  app.delete<Query>(`${incident}/delete`, (request) =>
    alerts.deleteIncidents(principalOf(request), incidentIds(request)),
  );
  app.get('/admin/v1/config/incident-settings', async (request) => {
    const principal = principalOf(request);
    return alerts.instanceSettingsView(principal);
  });
  app.post<{ Body: S.InstanceSettingsBody }>(
    '/admin/v1/config/incident-settings',
    { schema: { body: S.InstanceSettingsBody } },
    (request) => alerts.setInstanceSettings(principalOf(request), request.body),
  );
}
