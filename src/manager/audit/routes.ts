/**
 * The audit trail's routes: `/api/v1/logs/v2` (records of the projects and companies the caller
 * holds a role on; everything for a global role), the admin console's `/admin/v1/logs/v2`,
 * exports, the request log, settings, the older store's migration, and the deprecated
 * `/admin/v1/logs` and `/admin/v1/logs/contexts` in their older shape.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, forbidden } from '../../kernel/errors.js';
import { listResponse, parseListQuery } from '../../kernel/paging.js';
import { isGlobal, principalOf, roleAt } from '../auth/index.js';
import { csvExport, pdfExport } from './export.js';
import { ACTIVITY_LIST, AUDIT_LIST, type AuditFilter } from './repository.js';
import * as S from './schemas.js';
import type { AuditService } from './service.js';

type Q = { Querystring: S.AuditQuery };
const FILTER_KEYS = [
  'action',
  'module',
  'origin',
  'actor',
  'projectId',
  'companyId',
  'outcome',
  'text',
] as const;

function time(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(n)) throw badRequest(`${name} must be an ISO time or epoch milliseconds, got "${v}"`);
  return n;
}

function filterOf(q: S.AuditQuery): AuditFilter {
  const f: AuditFilter = { from: time(q.from, 'from'), to: time(q.to, 'to') };
  for (const k of FILTER_KEYS) if (typeof q[k] === 'string' && q[k] !== '') f[k] = q[k];
  return f;
}

/** The filters as given, for the PDF's header. */
function shownFilters(q: S.AuditQuery): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['from', 'to', ...FILTER_KEYS] as const)
    if (typeof q[k] === 'string' && q[k]) out[k] = q[k];
  return out;
}

/** The main API's view: a caller without a global role names a project or company it holds a role on. */
function visible(request: FastifyRequest, f: AuditFilter): AuditFilter {
  const p = principalOf(request);
  if (isGlobal(p, 'viewer')) return f;
  if (f.projectId && roleAt(p, { projectId: f.projectId })) return f;
  if (f.companyId && roleAt(p, { companyId: f.companyId })) return f;
  throw forbidden(
    'the audit trail needs a global role, or projectId (or companyId) of a project the caller holds a role on',
  );
}

function exportRoute(app: FastifyInstance, path: string, audit: AuditService, scoped: boolean) {
  app.get<Q>(path, { schema: { querystring: S.AuditQuery } }, async (request, reply) => {
    const q = request.query;
    const f = scoped ? visible(request, filterOf(q)) : filterOf(q);
    const format = (q.format ?? 'csv').toLowerCase();
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    if (format === 'csv') {
      void reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="audit-${stamp}.csv"`);
      return reply.send(csvExport(audit.repo, f));
    }
    if (format === 'pdf') {
      const head = await audit.repo.head();
      void reply
        .type('application/pdf')
        .header('content-disposition', `attachment; filename="audit-${stamp}.pdf"`);
      return reply.send(await pdfExport(audit.repo, f, { seq: head.seq, hash: head.hash }, shownFilters(q)));
    }
    throw badRequest(`format must be csv or pdf, got "${q.format}"`);
  });
}

export async function auditRoutes(app: FastifyInstance, options: { audit: AuditService }) {
  const { audit } = options;
  app.get<Q>('/api/v1/logs/v2', { schema: { querystring: S.AuditQuery } }, async (request) => {
    const spec = parseListQuery(request.query, AUDIT_LIST);
    return listResponse(spec, await audit.list(visible(request, filterOf(request.query)), spec));
  });
  app.get('/api/v1/logs/v2/categories', async () => audit.categories());
  exportRoute(app, '/api/v1/logs/v2/export', audit, true);
}

export async function adminAuditRoutes(app: FastifyInstance, options: { audit: AuditService }) {
  const { audit } = options;
  app.get<Q>('/admin/v1/logs/v2', { schema: { querystring: S.AuditQuery } }, async (request) => {
    const spec = parseListQuery(request.query, AUDIT_LIST);
    return listResponse(spec, await audit.list(filterOf(request.query), spec));
  });
  app.get('/admin/v1/logs/v2/categories', async () => audit.categories());
  exportRoute(app, '/admin/v1/logs/v2/export', audit, false);
  app.get('/admin/v1/logs/v2/verify', async () => audit.verify());
  app.get<{ Querystring: Record<string, unknown> }>('/admin/v1/logs/v2/api-activity', async (request) => {
    const spec = parseListQuery(request.query, ACTIVITY_LIST);
    const page = await audit.listActivity(spec);
    return listResponse(spec, {
      total: page.total,
      items: page.items.map((r) => ({
        id: r.id,
        time: new Date(Number(r.at)).toISOString(),
        method: r.method,
        path: r.path,
        status: Number(r.status),
        durationMs: Number(r.duration_ms),
        actor: r.actor,
        requestId: r.request_id,
      })),
    });
  });

  // Deprecated (edge manager 2.31.x shape): `{ logs: [{ id, timestamp, user, context, message }], total }`.
  app.get<Q>('/admin/v1/logs', { schema: { querystring: S.AuditQuery } }, async (request, reply) => {
    const spec = parseListQuery(request.query, AUDIT_LIST);
    const page = await audit.list(filterOf(request.query), spec);
    void reply.header('deprecation', 'true').header('link', '</admin/v1/logs/v2>; rel="successor-version"');
    return {
      logs: page.items.map((r) => ({
        id: r.id,
        timestamp: Date.parse(r.time),
        user: r.actorName ?? r.actor,
        context: r.module,
        message: `${r.action}${r.target ? ` ${r.target}` : ''} (${r.outcome})`,
      })),
      total: page.total,
    };
  });
  app.get('/admin/v1/logs/contexts', async (_request, reply) => {
    void reply
      .header('deprecation', 'true')
      .header('link', '</admin/v1/logs/v2/categories>; rel="successor-version"');
    return (await audit.categories()).items.map((c) => c.category);
  });

  app.get('/admin/v1/action-log/settings', async () => audit.loadSettings());
  app.put<{ Body: S.SettingsBody }>(
    '/admin/v1/action-log/settings',
    { schema: { body: S.SettingsBody } },
    async (request) => audit.putSettings(request.body),
  );
  app.get('/admin/v1/action-log/settings/api-activity', async () => (await audit.loadSettings()).apiActivity);
  app.put<{ Body: S.ApiActivityBody }>(
    '/admin/v1/action-log/settings/api-activity',
    { schema: { body: S.ApiActivityBody } },
    async (request) => audit.putApiActivity(request.body),
  );
  app.get('/admin/v1/action-log/migration', async () => audit.migrationStatus());
  app.post('/admin/v1/action-log/migration/retry', async () => audit.migrate());
}
