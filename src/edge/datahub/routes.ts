/** HTTP translation of the DataHub: access keys, counters, connections, Prometheus text. */
import { PROMETHEUS_CONTENT_TYPE } from '../../kernel/prometheus.js';
import type { FastifyInstance } from 'fastify';
import {
  ListQuerySchema,
  ListResponseSchema,
  listInMemory,
  listResponse,
  parseListQuery,
  runList,
  type ListDefinition,
} from '../../kernel/paging.js';
import type { Database } from '../../kernel/db/index.js';
import type { DataHubService } from './service.js';
import { accessKeyView } from './service.js';
import * as S from './schemas.js';

export interface DataHubRoutesOptions {
  datahub: DataHubService;
  database: Database;
}

const keyList: ListDefinition = {
  fields: {
    name: 'name',
    createdAt: { column: 'created_at', type: 'integer' },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'createdAt', order: 'asc' }],
  maxLimit: 1000,
};

/** Live NATS connections of the gateway: by connection id unless sorted otherwise. */
const CONNECTION_LIST: ListDefinition = {
  fields: {
    cid: { column: 'cid', type: 'integer' },
    name: 'name',
    lang: 'lang',
    version: 'version',
    address: 'address',
    local: { column: 'local', type: 'boolean' },
    tls: { column: 'tls', type: 'boolean' },
    connectedAt: 'connectedAt',
  },
  tiebreak: 'cid',
  defaultSort: [{ field: 'cid', order: 'asc' }],
  maxLimit: 1000,
};

export async function datahubRoutes(app: FastifyInstance, options: DataHubRoutesOptions): Promise<void> {
  const { datahub, database } = options;
  const keys = datahub.keys;

  app.post<{ Body: S.CreateAccessKeyBody }>(
    '/datahub/v1/access-keys',
    {
      config: { permission: 'write' },
      schema: { body: S.CreateAccessKeyBody, response: { 201: S.AccessKeyWithSecret } },
    },
    async (request, reply) => reply.status(201).send(await keys.create(request.body)),
  );

  app.get(
    '/datahub/v1/access-keys',
    {
      config: { permission: 'read' },
      schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.AccessKeySchema) } },
    },
    async (request) => {
      const spec = parseListQuery(request.query as Record<string, unknown>, keyList);
      const page = await runList(database, keys.repo.keyListQuery(), keyList, spec);
      return listResponse(spec, { items: page.items.map(accessKeyView), total: page.total });
    },
  );

  app.get<{ Params: S.IdParams }>(
    '/datahub/v1/access-keys/:id',
    { config: { permission: 'read' }, schema: { params: S.IdParams, response: { 200: S.AccessKeySchema } } },
    async (request) => keys.get(request.params.id),
  );

  app.delete<{ Params: S.IdParams }>(
    '/datahub/v1/access-keys/:id',
    { config: { permission: 'write' }, schema: { params: S.IdParams } },
    async (request, reply) => {
      await keys.revoke(request.params.id);
      return reply.status(204).send();
    },
  );

  app.get(
    '/datahub/v1/stats',
    { config: { permission: 'read' }, schema: { response: { 200: S.StatsSchema } } },
    async () => datahub.stats(),
  );

  app.get(
    '/datahub/v1/connections',
    {
      config: { permission: 'read' },
      schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.ConnectionSchema) } },
    },
    async (request) => {
      const spec = parseListQuery(request.query as Record<string, unknown>, CONNECTION_LIST);
      return listResponse(spec, listInMemory(datahub.connections(), CONNECTION_LIST, spec));
    },
  );

  app.get('/datahub/metrics', { config: { permission: 'read' } }, async (_request, reply) =>
    reply.type(PROMETHEUS_CONTENT_TYPE).send(datahub.metrics()),
  );
}
