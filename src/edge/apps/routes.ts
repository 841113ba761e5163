/**
 * `/apps`: thin translation between HTTP and the applications service. The contract's trailing
 * slashes are strict (part 7; the app does not ignore trailing slashes): `/apps/`,
 * `/apps/dc/containers/`, `/apps/dc/networks/` and `/apps/images/` are the lists, while
 * `/apps/registries` has none. Asked the other way, `/apps`, `/apps/dc/containers` and
 * `/apps/dc/networks` answer a bare `404 page not found` (text, as the product's Go router does),
 * `/apps/images` a 400, and `/apps/registries/` a 404.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError, ERRORS, badRequest } from '../../kernel/errors.js';
import {
  ListQuerySchema,
  ListResponseSchema,
  pageInMemory,
  type ListDefinition,
} from '../../kernel/paging/index.js';
import type { RegistryService } from './registries.js';
import { REGISTRY_SCHEMAS } from './registries.js';
import {
  ApplicationSchema,
  ContainerDetailSchema,
  ContainerSummarySchema,
  CreateContainerBody,
  CreateNetworkBody,
  DashboardQuery,
  DashboardSchema,
  ForceQuery,
  IdParams,
  ImageSchema,
  NetworkSchema,
  PullBody,
  RegistryBody,
  RegistrySchema,
  StopQuery,
  type CreateContainerBodyT,
  type CreateNetworkBodyT,
  type IdParamsT,
  type PullBodyT,
  type RegistryBodyT,
} from './schemas.js';
import type { AppsService } from './service.js';
import type { StatsSampler } from './stats.js';

export interface AppsRouteOptions {
  apps: AppsService;
  registries: RegistryService;
  stats: StatsSampler;
  pullTimeoutMs: number;
}

const list = (fields: string[], sortBy = 'name'): ListDefinition => ({
  fields: Object.fromEntries(fields.map((f) => [f, f])),
  tiebreak: 'id',
  defaultSort: [{ field: sortBy, order: 'asc' }],
  maxLimit: 1000,
});
const APPLICATION_LIST = list(['name', 'state', 'label']);
const CONTAINER_LIST = list(['name', 'image', 'state', 'application', 'created']);
const NETWORK_LIST = list(['name', 'driver', 'scope']);
const REGISTRY_LIST = list(['name', 'type', 'url']);
const IMAGE_LIST: ListDefinition = {
  fields: { id: 'id', created: 'created', size: { column: 'size', type: 'integer' } },
  tiebreak: 'id',
  defaultSort: [{ field: 'created', order: 'desc' }],
  maxLimit: 1000,
};

/** Go's `http.NotFound`, byte for byte: what the contract calls a bare `404 page not found`. */
function bareNotFound(reply: FastifyReply) {
  return reply
    .code(404)
    .header('content-type', 'text/plain; charset=utf-8')
    .header('x-content-type-options', 'nosniff')
    .send('404 page not found\n');
}

type Q = { Querystring: Record<string, unknown> };
type Id = { Params: IdParamsT };

const listSchema = (item: Parameters<typeof ListResponseSchema>[0]) => ({
  querystring: ListQuerySchema,
  response: { 200: ListResponseSchema(item) },
});

export async function appsRoutes(app: FastifyInstance, options: AppsRouteOptions) {
  const { apps, stats } = options;

  // Part 7: the strict trailing slashes.
  for (const path of ['/apps', '/apps/dc/containers', '/apps/dc/networks']) {
    app.get(path, (_request, reply) => bareNotFound(reply));
  }
  app.get('/apps/images', () => {
    throw badRequest('the images are listed at /apps/images/ (with a trailing slash)');
  });
  app.get('/apps/registries/', () => {
    throw new AppError(
      ERRORS.notFound,
      'no route GET /apps/registries/: the registries are listed at /apps/registries (no trailing slash)',
    );
  });

  app.get<Q>('/apps/', { schema: listSchema(ApplicationSchema) }, async (request) =>
    pageInMemory(await apps.applications(), request.query, APPLICATION_LIST),
  );

  containerRoutes(app, apps);
  engineRoutes(app, options);
  registryRoutes(app, options.registries);

  // The overview.
  app.get<{ Querystring: { cpuHistorySeconds?: string } }>(
    '/apps/overview/dashboard',
    { schema: { querystring: DashboardQuery, response: { 200: DashboardSchema } } },
    (request) => stats.dashboard(stats.parseHistorySeconds(request.query.cpuHistorySeconds)),
  );
}

function containerRoutes(app: FastifyInstance, apps: AppsService) {
  app.get<Q>('/apps/dc/containers/', { schema: listSchema(ContainerSummarySchema) }, async (request) =>
    pageInMemory(await apps.containers(), request.query, CONTAINER_LIST),
  );
  app.post<{ Body: CreateContainerBodyT }>(
    '/apps/dc/containers/',
    { schema: { body: CreateContainerBody, response: { 201: ContainerDetailSchema } } },
    async (request, reply) => reply.code(201).send(await apps.createContainer(request.body)),
  );
  app.get<Id>(
    '/apps/dc/containers/:id',
    { schema: { params: IdParams, response: { 200: ContainerDetailSchema } } },
    (request) => apps.container(request.params.id),
  );
  app.delete<Id & { Querystring: { force?: boolean } }>(
    '/apps/dc/containers/:id',
    { schema: { params: IdParams, querystring: ForceQuery } },
    async (request, reply) => {
      await apps.removeContainer(request.params.id, request.query.force ?? false);
      return reply.code(204).send();
    },
  );
  const detail = { params: IdParams, response: { 200: ContainerDetailSchema } };
  app.post<Id>('/apps/dc/containers/:id/start', { schema: detail }, (request) =>
    apps.startContainer(request.params.id),
  );
  app.post<Id & { Querystring: { t?: number } }>(
    '/apps/dc/containers/:id/stop',
    { schema: { ...detail, querystring: StopQuery } },
    (request) => apps.stopContainer(request.params.id, request.query.t),
  );
  app.post<Id>('/apps/dc/containers/:id/restart', { schema: detail }, (request) =>
    apps.restartContainer(request.params.id),
  );
}

/** Networks and images. */
function engineRoutes(app: FastifyInstance, options: AppsRouteOptions) {
  const { apps, registries } = options;
  app.get<Q>('/apps/dc/networks/', { schema: listSchema(NetworkSchema) }, async (request) =>
    pageInMemory(await apps.networks(), request.query, NETWORK_LIST),
  );
  app.post<{ Body: CreateNetworkBodyT }>(
    '/apps/dc/networks/',
    { schema: { body: CreateNetworkBody, response: { 201: NetworkSchema } } },
    async (request, reply) => reply.code(201).send(await apps.createNetwork(request.body)),
  );
  app.get<Id>(
    '/apps/dc/networks/:id',
    { schema: { params: IdParams, response: { 200: NetworkSchema } } },
    (request) => apps.network(request.params.id),
  );
  app.delete<Id>('/apps/dc/networks/:id', { schema: { params: IdParams } }, async (request, reply) => {
    await apps.removeNetwork(request.params.id);
    return reply.code(204).send();
  });

  // Images.
  app.get<Q>('/apps/images/', { schema: listSchema(ImageSchema) }, async (request) =>
    pageInMemory(await apps.images(), request.query, IMAGE_LIST),
  );
  app.post<{ Body: PullBodyT }>(
    '/apps/images/pull',
    { schema: { body: PullBody, response: { 200: ImageSchema } } },
    async (request) => {
      const { image, registryId } = request.body;
      const auth = registryId ? await registries.pullAuth(registryId) : null;
      return apps.pullImage(image, auth, options.pullTimeoutMs);
    },
  );
  app.get<Id>(
    '/apps/images/:id',
    { schema: { params: IdParams, response: { 200: ImageSchema } } },
    (request) => apps.image(request.params.id),
  );
  app.delete<Id & { Querystring: { force?: boolean } }>(
    '/apps/images/:id',
    { schema: { params: IdParams, querystring: ForceQuery } },
    async (request, reply) => {
      await apps.removeImage(request.params.id, request.query.force ?? false);
      return reply.code(204).send();
    },
  );
}

/** Registries (no trailing slash). */
function registryRoutes(app: FastifyInstance, registries: RegistryService) {
  app.get<Q>('/apps/registries', { schema: listSchema(RegistrySchema) }, async (request) =>
    pageInMemory(await registries.list(), request.query, REGISTRY_LIST),
  );
  app.post<{ Body: RegistryBodyT }>(
    '/apps/registries',
    { schema: { body: RegistryBody, response: { 201: RegistrySchema } } },
    async (request, reply) => reply.code(201).send(await registries.create(request.body)),
  );
  app.get('/apps/registries/schemas', () => REGISTRY_SCHEMAS);
  app.get<Id>(
    '/apps/registries/:id',
    { schema: { params: IdParams, response: { 200: RegistrySchema } } },
    (request) => registries.get(request.params.id),
  );
  app.put<Id & { Body: RegistryBodyT }>(
    '/apps/registries/:id',
    { schema: { params: IdParams, body: RegistryBody, response: { 200: RegistrySchema } } },
    (request) => registries.update(request.params.id, request.body),
  );
  app.delete<Id>('/apps/registries/:id', { schema: { params: IdParams } }, async (request, reply) => {
    await registries.remove(request.params.id);
    return reply.code(204).send();
  });
}
