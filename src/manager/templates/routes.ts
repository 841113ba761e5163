/** HTTP translation of the templates: `/api/v1/template/...`, template vars, and the admin console's. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import { ListQuerySchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { principalOf } from '../auth/index.js';
import { TEMPLATE_LIMITS, TEMPLATE_LIST, type TemplateService } from './service.js';
import * as S from './schemas.js';
import { isMultipartForm, parseMultipart } from '../../kernel/http/multipart.js';

type Query = { Querystring: Record<string, unknown> };

/** Contract part 7: an upload without `friendlyName` is a 409. */
function requireFriendlyName(q: S.UploadQuery): void {
  if (!q.friendlyName || q.friendlyName.trim() === '') {
    throw new AppError(
      ERRORS.missingParameter,
      "Required request parameter 'friendlyName' for method parameter type String is not present",
    );
  }
}

/** The raw body of an upload: bytes (any content type) or a parsed JSON body. */
function rawBody(request: FastifyRequest): Buffer | string {
  const b = request.body;
  if (Buffer.isBuffer(b)) return b;
  if (typeof b === 'string') return b;
  if (b === undefined || b === null)
    throw badRequest('the template document is missing: send it as the request body');
  return JSON.stringify(b);
}

/** Bytes (not parsed) for uploads of any content type but JSON. */
function acceptBytes(app: FastifyInstance): void {
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: TEMPLATE_LIMITS.maxDocumentBytes },
    (_r, body, done) => done(null, body),
  );
}

/**
 * The archive of `upload-zip`: the raw body (application/zip, application/octet-stream), or the
 * file part of a multipart/form-data body (`curl -F file=@template.zip`: the part named `file`,
 * else the only part with a file name).
 */
function zipOf(body: unknown, contentType: string | undefined): Buffer {
  const howTo =
    'send the ZIP archive as the request body (application/zip or application/octet-stream) ' +
    'or as the file field of a multipart/form-data body (curl -F file=@template.zip)';
  if (!Buffer.isBuffer(body)) throw badRequest(howTo);
  if (!isMultipartForm(contentType)) return body;
  const files = parseMultipart(body, contentType ?? '').filter((p) => p.filename !== undefined);
  const file = files.find((p) => p.name === 'file') ?? (files.length === 1 ? files[0] : undefined);
  if (!file) {
    throw badRequest(`the multipart body has ${files.length} file parts and none named "file"; ${howTo}`);
  }
  return file.data;
}

async function uploadRoutes(app: FastifyInstance, options: { templates: TemplateService; base: string }) {
  const { templates, base } = options;
  acceptBytes(app);
  app.post<{ Querystring: S.UploadQuery }>(
    `${base}/upload`,
    { bodyLimit: TEMPLATE_LIMITS.maxDocumentBytes, schema: { querystring: S.UploadQuery } },
    async (request, reply) => {
      requireFriendlyName(request.query);
      const body = rawBody(request);
      const made = await templates.createFromDocument(
        principalOf(request),
        request.query,
        Buffer.isBuffer(body) ? body.toString('utf8') : body,
      );
      return reply.status(201).send(made);
    },
  );
  app.put<{ Querystring: S.UploadQuery }>(
    `${base}/upload-zip`,
    { bodyLimit: TEMPLATE_LIMITS.maxDocumentBytes, schema: { querystring: S.UploadQuery } },
    async (request, reply) => {
      requireFriendlyName(request.query);
      const zip = zipOf(request.body, request.headers['content-type']);
      return reply.status(201).send(await templates.createFromZip(principalOf(request), request.query, zip));
    },
  );
}

function inspectionRoutes(app: FastifyInstance, templates: TemplateService, base: string) {
  app.get<Query>(`${base}/list`, { schema: { querystring: ListQuerySchema } }, async (request) => {
    const spec = parseListQuery(request.query, TEMPLATE_LIST);
    return listResponse(spec, await templates.list(principalOf(request), spec));
  });
  app.get<{ Querystring: S.IdQuery }>(
    `${base}/content`,
    { schema: { querystring: S.IdQuery } },
    async (request) => templates.content(principalOf(request), request.query.id),
  );
  app.get<{ Querystring: S.IdQuery }>(
    `${base}/list-variables/v2`,
    { schema: { querystring: S.IdQuery } },
    async (request) => templates.listVariablesV2(principalOf(request), request.query.id),
  );
  app.post<{ Body: S.UpdateBody }>(base, { schema: { body: S.UpdateBody } }, async (request) =>
    templates.update(principalOf(request), request.body),
  );
}

export async function templateRoutes(app: FastifyInstance, options: { templates: TemplateService }) {
  const { templates } = options;
  const base = '/api/v1/template';
  await app.register(uploadRoutes, { templates, base });
  inspectionRoutes(app, templates, base);
  app.post<{ Body: S.CreateBody }>(
    `${base}/create`,
    { schema: { body: S.CreateBody } },
    async (request, reply) =>
      reply.status(201).send(await templates.createFromDevice(principalOf(request), request.body)),
  );
  app.post<{ Body: S.CreateV2Body }>(
    `${base}/create/v2`,
    { bodyLimit: TEMPLATE_LIMITS.maxDocumentBytes, schema: { body: S.CreateV2Body } },
    async (request, reply) => {
      const { content, parts, ...input } = request.body;
      if (parts !== undefined) {
        if (content !== undefined) throw badRequest('give either content or parts, not both');
        return reply.status(201).send(await templates.createComposed(principalOf(request), input, parts));
      }
      if (content === undefined || content === null)
        throw badRequest('content (the template document) or parts (templates to compose) is required');
      return reply.status(201).send(await templates.createFromDocument(principalOf(request), input, content));
    },
  );
  app.get<{ Querystring: S.IdQuery }>(
    `${base}/composition/v2`,
    { schema: { querystring: S.IdQuery } },
    async (request) => templates.composition(principalOf(request), request.query.id),
  );
  app.post<{ Body: S.PreviewBody }>(`${base}/preview`, { schema: { body: S.PreviewBody } }, async (request) =>
    templates.preview(principalOf(request), request.body),
  );
  app.get<{ Params: S.IdParams }>(`${base}/:id`, { schema: { params: S.IdParams } }, async (request) =>
    templates.get(principalOf(request), request.params.id),
  );
  app.post<{ Body: S.ApplyTaskBody }>(
    '/api/v1/async-task/template-apply',
    { schema: { body: S.ApplyTaskBody } },
    async (request, reply) =>
      reply.status(202).send(await templates.apply(principalOf(request), request.body)),
  );
  app.get<{ Querystring: S.VarsQuery }>(
    '/api/v1/activation/request/template/vars/v2',
    { schema: { querystring: S.VarsQuery } },
    async (request) => templates.vars(principalOf(request), request.query.templateId),
  );
  app.post<{ Body: S.VarsBody }>(
    '/api/v1/activation/request/template/vars/v2',
    { schema: { body: S.VarsBody } },
    async (request) => templates.setVars(principalOf(request), request.body.templateId, request.body.scopes),
  );
}

export async function adminTemplateRoutes(app: FastifyInstance, options: { templates: TemplateService }) {
  const { templates } = options;
  const base = '/admin/v1/template';
  await app.register(uploadRoutes, { templates, base });
  inspectionRoutes(app, templates, base);
  app.get<{ Querystring: S.IdQuery }>(
    `${base}/list-variables`,
    { schema: { querystring: S.IdQuery } },
    async (request) => templates.listVariables(principalOf(request), request.query.id),
  );
  app.get('/admin/v1/git/templates/encryption-key', async (request) =>
    templates.gitEncryptionKey(principalOf(request)),
  );
}
