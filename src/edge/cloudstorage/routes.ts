/** `/cloudstorage`: thin translation between HTTP and the cloud storage service. */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  ListQuerySchema,
  ListResponseSchema,
  pageInMemory,
  type ListDefinition,
} from '../../kernel/paging/index.js';
import {
  FileSchema,
  IdParams,
  SourceBody,
  SourceSchema,
  StatusSchema,
  TargetBody,
  TargetSchema,
  type IdParamsT,
  type SourceBodyT,
  type TargetBodyT,
} from './schemas.js';
import type { CloudstorageService } from './service.js';

const FILE_LIST: ListDefinition = {
  fields: {
    path: 'path',
    state: 'state',
    targetId: 'targetId',
    sourceId: 'sourceId',
    size: { column: 'size', type: 'integer' },
    updatedAt: 'updatedAt',
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'path', order: 'asc' }],
  maxLimit: 1000,
};
const byName = (f: string): ListDefinition => ({
  fields: { [f]: f },
  tiebreak: 'id',
  defaultSort: [{ field: f, order: 'asc' }],
  maxLimit: 1000,
});

type Q = { Querystring: Record<string, unknown> };
type Id = { Params: IdParamsT };

export async function cloudstorageRoutes(app: FastifyInstance, options: { storage: CloudstorageService }) {
  const { storage } = options;
  const list = (item: Parameters<typeof ListResponseSchema>[0]) => ({
    querystring: ListQuerySchema,
    response: { 200: ListResponseSchema(item) },
  });
  const one = (item: Parameters<typeof ListResponseSchema>[0]) => ({
    params: IdParams,
    response: { 200: item },
  });

  app.get<Q>('/cloudstorage/targets', { schema: list(TargetSchema) }, async (request) =>
    pageInMemory(await storage.targets(), request.query, byName('name')),
  );
  app.post<{ Body: TargetBodyT }>(
    '/cloudstorage/targets',
    { schema: { body: TargetBody, response: { 201: TargetSchema } } },
    async (request, reply) => reply.code(201).send(await storage.createTarget(request.body)),
  );
  app.get<Id>('/cloudstorage/targets/:id', { schema: one(TargetSchema) }, (request) =>
    storage.target(request.params.id),
  );
  app.put<Id & { Body: TargetBodyT }>(
    '/cloudstorage/targets/:id',
    { schema: { ...one(TargetSchema), body: TargetBody } },
    (request) => storage.updateTarget(request.params.id, request.body),
  );
  app.delete<Id>('/cloudstorage/targets/:id', { schema: { params: IdParams } }, async (request, reply) => {
    await storage.removeTarget(request.params.id);
    return reply.code(204).send();
  });
  app.post<Id>(
    '/cloudstorage/targets/:id/check',
    { schema: one(Type.Object({ ok: Type.Boolean() })) },
    (request) => storage.checkTarget(request.params.id),
  );

  app.get<Q>('/cloudstorage/sources', { schema: list(SourceSchema) }, async (request) =>
    pageInMemory(await storage.sources(), request.query, byName('path')),
  );
  app.post<{ Body: SourceBodyT }>(
    '/cloudstorage/sources',
    { schema: { body: SourceBody, response: { 201: SourceSchema } } },
    async (request, reply) => reply.code(201).send(await storage.createSource(request.body)),
  );
  app.delete<Id>('/cloudstorage/sources/:id', { schema: { params: IdParams } }, async (request, reply) => {
    await storage.removeSource(request.params.id);
    return reply.code(204).send();
  });

  app.get<Q>('/cloudstorage/files', { schema: list(FileSchema) }, async (request) =>
    pageInMemory(await storage.files(), request.query, FILE_LIST),
  );
  app.get<Id>('/cloudstorage/files/:id', { schema: one(FileSchema) }, (request) =>
    storage.file(request.params.id),
  );

  app.get('/cloudstorage/status', { schema: { response: { 200: StatusSchema } } }, () => storage.status());
  app.post('/cloudstorage/sync', { schema: { response: { 202: StatusSchema } } }, async (_request, reply) => {
    storage.syncNow();
    return reply.code(202).send(await storage.status());
  });
}
