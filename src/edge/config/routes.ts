/** HTTP translation of the configuration service (contract part 4.2). */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, forbidden } from '../../kernel/errors.js';
import { credentialSectionsOf } from '../../kernel/link/protocol.js';
import {
  ListQuerySchema,
  ListResponseSchema,
  listInMemory,
  listResponse,
  parseListQuery,
  type ListDefinition,
} from '../../kernel/paging.js';
import { CONFIG_LIMITS, TEMPLATE_LIST, type ConfigService } from './service.js';
import * as S from './schemas.js';

export interface ConfigRoutesOptions {
  config: ConfigService;
}

export async function configRoutes(app: FastifyInstance, options: ConfigRoutesOptions): Promise<void> {
  const { config } = options;
  // No body at all is `{}` (the contract: `{}` applies everything).
  app.addHook('preValidation', async (request) => {
    if (request.method !== 'PATCH' && (request.body === undefined || request.body === null))
      request.body = {};
  });

  sessionRoutes(app, config);
  templateRoutes(app, config);
  templateUseRoutes(app, config);
  snapshotRoutes(app, config);
}

/** Upload sessions: raw chunks of the template document. */
function sessionRoutes(app: FastifyInstance, config: ConfigService): void {
  app.addContentTypeParser(
    ['application/octet-stream', 'text/plain'],
    { parseAs: 'buffer', bodyLimit: CONFIG_LIMITS.maxChunkBytes },
    (_req, body, done) => done(null, body),
  );

  // `{}` opens an empty session; a raw body (`application/octet-stream`) opens it with that
  // first chunk, so that a document of one chunk is uploaded in one call (the manager's apply).
  app.post<{ Body: Record<string, never> | Buffer }>(
    '/config/session',
    {
      bodyLimit: CONFIG_LIMITS.maxChunkBytes,
      schema: {
        body: {
          content: {
            'application/json': { schema: S.OpenSessionBody },
            'application/octet-stream': { schema: {} },
          },
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (!Buffer.isBuffer(body))
        return reply.status(201).send({ ...config.openSession(), maxBytes: CONFIG_LIMITS.maxTemplateBytes });
      if (!/^application\/octet-stream\b/i.test(request.headers['content-type'] ?? ''))
        throw badRequest('send {} as JSON, or the first chunk as application/octet-stream');
      const opened = config.openSession();
      try {
        const { size } = config.appendSession(opened.id, body, 0);
        return reply.status(201).send({ ...opened, maxBytes: CONFIG_LIMITS.maxTemplateBytes, size });
      } catch (err) {
        config.closeSession(opened.id);
        throw err;
      }
    },
  );

  app.patch<{ Params: S.IdParams; Querystring: { offset?: string } }>(
    '/config/session/:id',
    {
      bodyLimit: CONFIG_LIMITS.maxChunkBytes,
      schema: { params: S.IdParams, querystring: S.SessionChunkQuery },
    },
    async (request) => {
      const body = request.body;
      let chunk: Buffer;
      if (Buffer.isBuffer(body)) chunk = body;
      else if (typeof body === 'string') chunk = Buffer.from(body);
      else throw badRequest('send the template content as the request body (application/octet-stream)');
      const offset = request.query.offset === undefined ? undefined : Number(request.query.offset);
      if (offset !== undefined && !Number.isSafeInteger(offset))
        throw badRequest('offset must be an integer');
      return config.appendSession(request.params.id, chunk, offset);
    },
  );

  app.put<{ Params: S.IdParams; Body: S.SessionApplyBody }>(
    '/config/template/:id',
    { schema: { params: S.IdParams, body: S.SessionApplyBody } },
    async (request, reply) => {
      const b = request.body ?? {};
      const key = idempotencyKey(request.headers['idempotency-key']);
      const doc = config.sessionDocument(request.params.id);
      if (!b.saveOnly) requireAdminForCredentials(request, doc.sections);
      const name = b.name?.trim() ?? '';
      if (b.saveOnly && name === '') throw badRequest('saveOnly saves the template: give it a name');
      // An apply already made with this key: its recorded outcome, nothing saved or applied now.
      const replay = key !== undefined && !b.saveOnly ? await config.replay(key) : undefined;
      if (replay) {
        config.closeSession(request.params.id);
        return reply.status(200).header('idempotent-replayed', 'true').send({ result: replay });
      }
      const saved =
        name !== '' ? await config.saveTemplate(doc, { name, description: b.description }) : undefined;
      const applied = b.saveOnly
        ? undefined
        : await config.apply(doc, {
            mode: b.mode,
            failFast: b.failFast,
            encryptionKey: b.encryptionKey,
            parameters: b.parameters,
            idempotencyKey: key,
          });
      if (applied?.replayed) void reply.header('idempotent-replayed', 'true');
      config.closeSession(request.params.id);
      return reply
        .status(200)
        .send({ ...(saved ? { template: saved } : {}), ...(applied ? { result: applied } : {}) });
    },
  );
}

/** Saved templates: list, save, read, change, delete. */
function templateRoutes(app: FastifyInstance, config: ConfigService): void {
  app.get<{ Querystring: Record<string, unknown> }>(
    '/config/templates',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.TemplateSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, TEMPLATE_LIST);
      return listResponse(spec, await config.listTemplates(spec));
    },
  );

  app.post<{ Body: S.CreateTemplateBody }>(
    '/config/templates',
    { schema: { body: S.CreateTemplateBody, response: { 201: S.TemplateSchema } } },
    async (request, reply) => reply.status(201).send(await config.createFromCurrent(request.body)),
  );

  app.post<{ Body: S.BulkDeleteBody }>(
    '/config/templates/delete',
    { schema: { body: S.BulkDeleteBody } },
    async (request) => config.deleteTemplates(request.body.ids),
  );

  app.get<{ Params: S.IdParams }>(
    '/config/templates/:id',
    { schema: { params: S.IdParams, response: { 200: S.TemplateSchema } } },
    async (request) => config.getTemplate(request.params.id),
  );

  app.put<{ Params: S.IdParams; Body: S.UpdateTemplateBody }>(
    '/config/templates/:id',
    { schema: { params: S.IdParams, body: S.UpdateTemplateBody, response: { 200: S.TemplateSchema } } },
    async (request) => config.updateTemplate(request.params.id, request.body),
  );

  app.delete<{ Params: S.IdParams }>(
    '/config/templates/:id',
    { schema: { params: S.IdParams } },
    async (request, reply) => {
      await config.deleteTemplate(request.params.id);
      return reply.status(204).send();
    },
  );
}

/** A saved template in use: downloaded, applied, previewed, merged. */
function templateUseRoutes(app: FastifyInstance, config: ConfigService): void {
  const download = async (id: string, key: string | undefined, reply: import('fastify').FastifyReply) => {
    const pieces = await config.download(id, key);
    const meta = await config.getTemplate(id);
    const file = meta.name.replace(/[^A-Za-z0-9._-]+/g, '_') || 'template';
    void reply.header('content-disposition', `attachment; filename="${file}.json"`).type('application/json');
    if (pieces.length === 1) return reply.send(pieces[0]);
    // The pieces as they are (an export's: a device's text each), not joined into one buffer.
    return reply
      .header(
        'content-length',
        pieces.reduce((n, p) => n + p.length, 0),
      )
      .send(Readable.from(pieces));
  };

  app.get<{ Params: S.IdParams }>(
    '/config/templates/:id/download',
    { schema: { params: S.IdParams } },
    async (request, reply) => download(request.params.id, undefined, reply),
  );

  app.post<{ Params: S.IdParams; Body: S.DownloadBody }>(
    '/config/templates/:id/download',
    { schema: { params: S.IdParams, body: S.DownloadBody } },
    async (request, reply) => download(request.params.id, request.body.encryptionKey, reply),
  );

  app.post<{ Params: S.IdParams; Body: S.ApplyBody }>(
    '/config/templates/:id/apply',
    { schema: { params: S.IdParams, body: S.ApplyBody } },
    async (request) => {
      const b = request.body ?? {};
      const { doc, snapshot } = await config.load(request.params.id);
      requireAdminForCredentials(request, doc.sections);
      return config.apply(doc, {
        mode: b.mode,
        failFast: b.failFast,
        encryptionKey: b.encryptionKey,
        parameters: b.parameters,
        snapshot,
      });
    },
  );

  app.post<{ Params: S.IdParams; Body: S.PreviewBody }>(
    '/config/templates/:id/preview',
    { schema: { params: S.IdParams, body: S.PreviewBody } },
    async (request) => {
      const b = request.body ?? {};
      const { doc, snapshot } = await config.load(request.params.id);
      return config.preview(doc, {
        mode: b.mode,
        encryptionKey: b.encryptionKey,
        parameters: b.parameters,
        snapshot,
      });
    },
  );

  app.post<{ Params: S.IdParams; Body: S.MergeBody }>(
    '/config/templates/:id/merge',
    { schema: { params: S.IdParams, body: S.MergeBody } },
    async (request, reply) => {
      const b = request.body ?? {};
      return reply.status(201).send(
        await config.merge(request.params.id, {
          name: b.name,
          description: b.description,
          confirmOverwrite: b.confirm_overwrite,
          encryptionKey: b.encryptionKey,
        }),
      );
    },
  );
}

/** Snapshots as a list (at most `CONFIG_LIMITS.maxSnapshots` of them): newest first by default. */
const SNAPSHOT_LIST: ListDefinition = {
  fields: {
    id: 'id',
    reason: 'reason',
    createdAt: 'createdAt',
    size: { column: 'size', type: 'integer' },
  },
  tiebreak: 'id',
  defaultSort: [
    { field: 'createdAt', order: 'desc' },
    { field: 'id', order: 'desc' },
  ],
};

/** Snapshots of the configuration. */
function snapshotRoutes(app: FastifyInstance, config: ConfigService): void {
  app.get<{ Querystring: Record<string, unknown> }>(
    '/config/snapshots',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.SnapshotSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, SNAPSHOT_LIST);
      return listResponse(spec, listInMemory(await config.listSnapshots(), SNAPSHOT_LIST, spec));
    },
  );

  app.post<{ Body: S.CaptureSnapshotBody }>(
    '/config/snapshots',
    { schema: { body: S.CaptureSnapshotBody, response: { 201: S.SnapshotSchema } } },
    async (request, reply) =>
      reply.status(201).send(await config.captureSnapshot(request.body?.reason ?? 'captured on request')),
  );

  app.delete<{ Body: S.PruneSnapshotsBody }>(
    '/config/snapshots',
    { schema: { body: S.PruneSnapshotsBody } },
    async (request) => config.pruneSnapshots(request.body?.ids),
  );
}

/** The `Idempotency-Key` header: 1 to 200 visible ASCII characters, or none. */
function idempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const v = Array.isArray(header) ? header[0] : header;
  if (v === undefined || !/^[\x21-\x7e]{1,200}$/.test(v))
    throw badRequest('Idempotency-Key must have 1 to 200 visible ASCII characters');
  return v;
}

/**
 * A call bridged by a manager caller below admin may not apply a template that changes the edge's
 * credentials (its `auth` or `datahub` section): that would widen the caller's role, as creating
 * an API client directly would (`bridgeNeedsAdmin`).
 */
function requireAdminForCredentials(request: FastifyRequest, sections: Record<string, unknown>): void {
  const ctx = request.auth;
  if (!ctx?.bridged || ctx.role === 'admin') return;
  const found = credentialSectionsOf(Object.keys(sections));
  if (found.length > 0)
    throw forbidden(
      `a bridged ${ctx.role} cannot apply a template with the edge's credentials (section ${found.join(', ')}): it needs the admin role on the manager and on the edge`,
    );
}
