/**
 * HTTP translation of the asset hierarchy: `/api/v1/assets/hierarchy/{companyName}/...` (templates,
 * levels, nodes, branch permissions, CSV) and `/admin/v1/user/asset-mgmt/branches`. Every node
 * route checks the caller's access to the node (see `access.ts`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import { principalOf, type Principal } from '../auth/index.js';
import { exportCsv, importCsv } from './csv.js';
import type { GrantService } from './grants.js';
import type { NodeService } from './nodes.js';
import type { HierarchyService } from './service.js';
import * as S from './schemas.js';

export interface HierarchyRoutesOptions {
  hierarchy: HierarchyService;
  nodes: NodeService;
  grants: GrantService;
  csvMaxBytes: number;
}

const BASE = '/api/v1/assets/hierarchy/:companyName';
/** What Fastify answers an object with. */
const JSON_TYPE = 'application/json; charset=utf-8';

export async function hierarchyRoutes(app: FastifyInstance, o: HierarchyRoutesOptions) {
  const { hierarchy: h } = o;
  const access = (request: FastifyRequest<{ Params: S.CompanyParams }>) =>
    h.access(principalOf(request), request.params.companyName);
  templateRoutes(app, h, access);
  levelRoutes(app, h, access);
  nodeRoutes(app, o.nodes, access);
  permissionRoutes(app, o.grants, access);

  app.addContentTypeParser(
    ['text/csv', 'text/plain'],
    { parseAs: 'string', bodyLimit: o.csvMaxBytes },
    (_r, body, done) => done(null, body),
  );
  app.get<{ Params: S.CompanyParams }>(
    `${BASE}/export`,
    { schema: { params: S.CompanyParams } },
    async (request, reply) => {
      const csv = await exportCsv(h, await access(request));
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header(
          'content-disposition',
          `attachment; filename="hierarchy-${encodeURIComponent(request.params.companyName)}.csv"`,
        )
        .send(csv);
    },
  );
  app.post<{ Params: S.CompanyParams; Querystring: S.ImportQuery; Body: string }>(
    `${BASE}/import`,
    { bodyLimit: o.csvMaxBytes, schema: { params: S.CompanyParams, querystring: S.ImportQuery } },
    async (request) => {
      const body = typeof request.body === 'string' ? request.body : '';
      return importCsv(h, await access(request), body, request.query.dryRun === true);
    },
  );
}

/** The optional body of `duplicate`: nothing, `{}` or `{ "name": ... }`. */
function duplicateName(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('the body must be a JSON object');
  for (const k of Object.keys(body)) {
    if (k !== 'name')
      throw new AppError(ERRORS.unknownField, `failed to decode request body: json: unknown field "${k}"`);
  }
  const name = (body as { name?: unknown }).name;
  if (name !== undefined && typeof name !== 'string') throw badRequest('name must be a string');
  return name;
}

type Access = (
  request: FastifyRequest<{ Params: S.CompanyParams }>,
) => ReturnType<HierarchyService['access']>;

function templateRoutes(app: FastifyInstance, h: HierarchyService, access: Access) {
  const T = `${BASE}/templates`;
  app.get<{ Params: S.CompanyParams }>(T, { schema: { params: S.CompanyParams } }, async (request) => ({
    items: await h.listTemplates(await access(request)),
  }));
  app.post<{ Params: S.CompanyParams; Body: S.CreateTemplateBody }>(
    T,
    { schema: { params: S.CompanyParams, body: S.CreateTemplateBody } },
    async (request, reply) =>
      reply.status(201).send(await h.createTemplate(await access(request), request.body)),
  );
  app.get<{ Params: S.TemplateParams }>(
    `${T}/:templateId`,
    { schema: { params: S.TemplateParams } },
    async (request) => h.template(await access(request), request.params.templateId),
  );
  app.put<{ Params: S.TemplateParams; Body: S.UpdateTemplateBody }>(
    `${T}/:templateId`,
    { schema: { params: S.TemplateParams, body: S.UpdateTemplateBody } },
    async (request) => h.updateTemplate(await access(request), request.params.templateId, request.body),
  );
  app.delete<{ Params: S.TemplateParams }>(
    `${T}/:templateId`,
    { schema: { params: S.TemplateParams } },
    async (request, reply) => {
      await h.deleteTemplate(await access(request), request.params.templateId);
      return reply.status(204).send();
    },
  );
  app.post<{ Params: S.TemplateParams; Body: unknown }>(
    `${T}/:templateId/duplicate`,
    { schema: { params: S.TemplateParams } },
    async (request, reply) => {
      const name = duplicateName(request.body);
      return reply
        .status(201)
        .send(await h.duplicateTemplate(await access(request), request.params.templateId, name));
    },
  );
  app.post<{ Params: S.TemplateParams }>(
    `${T}/:templateId/activate`,
    { schema: { params: S.TemplateParams } },
    async (request) => h.activateTemplate(await access(request), request.params.templateId),
  );
}

function levelRoutes(app: FastifyInstance, h: HierarchyService, access: Access) {
  const L = `${BASE}/templates/:templateId/levels`;
  app.post<{ Params: S.TemplateParams; Body: S.LevelBody }>(
    L,
    { schema: { params: S.TemplateParams, body: S.LevelBody } },
    async (request, reply) =>
      reply
        .status(201)
        .send(await h.addLevel(await access(request), request.params.templateId, request.body)),
  );
  app.put<{ Params: S.TemplateParams; Body: S.BulkLevelsBody }>(
    L,
    { schema: { params: S.TemplateParams, body: S.BulkLevelsBody } },
    async (request) => h.setLevels(await access(request), request.params.templateId, request.body.levels),
  );
  app.put<{ Params: S.LevelParams; Body: S.UpdateLevelBody }>(
    `${L}/:levelId`,
    { schema: { params: S.LevelParams, body: S.UpdateLevelBody } },
    async (request) =>
      h.updateLevel(await access(request), request.params.templateId, request.params.levelId, request.body),
  );
  app.post<{ Params: S.LevelParams; Body: S.MoveLevelBody }>(
    `${L}/:levelId/move`,
    { schema: { params: S.LevelParams, body: S.MoveLevelBody } },
    async (request) =>
      h.moveLevel(
        await access(request),
        request.params.templateId,
        request.params.levelId,
        request.body.position,
      ),
  );
  app.delete<{ Params: S.LevelParams }>(
    `${L}/:levelId`,
    { schema: { params: S.LevelParams } },
    async (request) =>
      h.removeLevel(await access(request), request.params.templateId, request.params.levelId),
  );
}

function nodeRoutes(app: FastifyInstance, nodes: NodeService, access: Access) {
  const N = `${BASE}/node`;
  app.post<{ Params: S.CompanyParams; Body: S.CreateNodeBody }>(
    N,
    { schema: { params: S.CompanyParams, body: S.CreateNodeBody } },
    async (request, reply) => {
      const { parentId, ...input } = request.body;
      return reply.status(201).send(await nodes.create(await access(request), parentId ?? null, input));
    },
  );
  app.get<{ Params: S.CompanyParams }>(
    `${BASE}/roots`,
    { schema: { params: S.CompanyParams } },
    async (request) => ({
      items: await nodes.roots(await access(request)),
    }),
  );
  // A subtree is written as JSON bytes by the service (`tree-json.ts`), sent as they are.
  app.get<{ Params: S.CompanyParams }>(
    `${BASE}/tree`,
    { schema: { params: S.CompanyParams } },
    async (request, reply) => reply.type(JSON_TYPE).send(await nodes.tree(await access(request))),
  );
  app.get<{ Params: S.NodeParams; Querystring: S.NodeQuery }>(
    `${N}/:id`,
    { schema: { params: S.NodeParams, querystring: S.NodeQuery } },
    async (request, reply) =>
      reply
        .type(JSON_TYPE)
        .send(await nodes.read(await access(request), request.params.id, request.query.depth ?? 1)),
  );
  app.put<{ Params: S.NodeParams; Body: S.UpdateNodeBody }>(
    `${N}/:id`,
    { schema: { params: S.NodeParams, body: S.UpdateNodeBody } },
    async (request) => nodes.update(await access(request), request.params.id, request.body),
  );
  app.post<{ Params: S.NodeParams; Body: S.MoveNodeBody }>(
    `${N}/:id/move`,
    { schema: { params: S.NodeParams, body: S.MoveNodeBody } },
    async (request) => nodes.move(await access(request), request.params.id, request.body.parentId),
  );
  app.delete<{ Params: S.NodeParams; Querystring: S.DeleteNodeQuery }>(
    `${N}/:id`,
    { schema: { params: S.NodeParams, querystring: S.DeleteNodeQuery } },
    async (request) => nodes.remove(await access(request), request.params.id, request.query.force === true),
  );
}

function permissionRoutes(app: FastifyInstance, grants: GrantService, access: Access) {
  const P = `${BASE}/node/:id/permissions`;
  app.post<{ Params: S.NodeParams; Body: S.GrantBody }>(
    P,
    { schema: { params: S.NodeParams, body: S.GrantBody } },
    async (request, reply) => {
      const b = request.body;
      return reply
        .status(201)
        .send(await grants.grant(await access(request), request.params.id, b.username, b.access ?? 'edit'));
    },
  );
  app.get<{ Params: S.NodeParams }>(P, { schema: { params: S.NodeParams } }, async (request) => ({
    items: await grants.operators(await access(request), request.params.id),
  }));
  app.delete<{ Params: S.OperatorParams }>(
    `${P}/:username`,
    { schema: { params: S.OperatorParams } },
    async (request, reply) => {
      await grants.revoke(await access(request), request.params.id, request.params.username);
      return reply.status(204).send();
    },
  );
}

/** The admin console's view of every branch grant. */
export async function adminBranchRoutes(
  app: FastifyInstance,
  o: { grants: GrantService; company: (p: Principal, name: string) => Promise<{ id: string }> },
) {
  const B = '/admin/v1/user/asset-mgmt/branches';
  app.get<{ Querystring: S.BranchesQuery }>(
    B,
    { schema: { querystring: S.BranchesQuery } },
    async (request) => {
      const q = request.query;
      const companyId = q.companyName ? (await o.company(principalOf(request), q.companyName)).id : undefined;
      const limit = q.limit ?? 100;
      const offset = q.offset ?? 0;
      const page = await o.grants.list(
        { ...(q.username ? { username: q.username } : {}), ...(companyId ? { companyId } : {}) },
        limit,
        offset,
      );
      return { ...page, limit, offset };
    },
  );
  app.get<{ Params: S.GrantParams }>(
    `${B}/:grantId`,
    { schema: { params: S.GrantParams } },
    async (request) => o.grants.get(request.params.grantId),
  );
  app.delete<{ Params: S.GrantParams }>(
    `${B}/:grantId`,
    { schema: { params: S.GrantParams } },
    async (request, reply) => {
      await o.grants.delete(request.params.grantId);
      return reply.status(204).send();
    },
  );
}
