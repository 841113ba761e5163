/** HTTP translation of the marketplace: `/mpcs/v1/...` (contract parts 4.5 and 5). */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ListQuerySchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { principalOf } from '../auth/index.js';
import type { MarketplaceInstaller } from './install.js';
import { INSTALL_LIST, ITEM_LIST, VERSION_LIST } from './repository.js';
import type { MarketplaceSecrets } from './secrets.js';
import type { MarketplaceService } from './service.js';
import * as S from './schemas.js';

const ItemsQuery = Type.Object(
  { ...ListQuerySchema.properties, ...S.SearchQuery.properties },
  { additionalProperties: true },
);
type Query = { Querystring: Record<string, unknown> };

export async function marketplaceRoutes(
  app: FastifyInstance,
  options: { catalogue: MarketplaceService; installer: MarketplaceInstaller; maxBodyBytes: number },
) {
  const { catalogue, installer } = options;
  const base = '/mpcs/v1';
  const bodyLimit = options.maxBodyBytes;
  app.get<{ Querystring: S.SearchQuery }>(
    `${base}/items`,
    { schema: { querystring: ItemsQuery } },
    async (request) => {
      const spec = parseListQuery(request.query, ITEM_LIST);
      const { q, kind, category } = request.query;
      return listResponse(spec, await catalogue.list(spec, { q, kind, category }));
    },
  );
  app.post<{ Body: S.PublishBody }>(
    `${base}/items`,
    { bodyLimit, schema: { body: S.PublishBody } },
    async (request, reply) =>
      reply.status(201).send(await catalogue.publish(principalOf(request), request.body)),
  );
  app.get<{ Params: S.ItemParams }>(
    `${base}/items/:itemId`,
    { schema: { params: S.ItemParams } },
    (request) => catalogue.get(request.params.itemId),
  );
  app.put<{ Params: S.ItemParams; Body: S.UpdateItemBody }>(
    `${base}/items/:itemId`,
    { schema: { params: S.ItemParams, body: S.UpdateItemBody } },
    (request) => catalogue.update(principalOf(request), request.params.itemId, request.body),
  );
  app.delete<{ Params: S.ItemParams }>(
    `${base}/items/:itemId`,
    { schema: { params: S.ItemParams } },
    async (request, reply) => {
      await catalogue.remove(principalOf(request), request.params.itemId);
      return reply.status(204).send();
    },
  );
  app.get<{ Params: S.ItemParams } & Query>(
    `${base}/items/:itemId/versions`,
    { schema: { params: S.ItemParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, VERSION_LIST);
      return listResponse(spec, await catalogue.versions(request.params.itemId, spec));
    },
  );
  app.post<{ Params: S.ItemParams; Body: S.VersionBody }>(
    `${base}/items/:itemId/versions`,
    { bodyLimit, schema: { params: S.ItemParams, body: S.VersionBody } },
    async (request, reply) =>
      reply
        .status(201)
        .send(await catalogue.publishVersion(principalOf(request), request.params.itemId, request.body)),
  );
  app.get<{ Params: S.VersionParams }>(
    `${base}/items/:itemId/versions/:version`,
    { schema: { params: S.VersionParams } },
    (request) => catalogue.version(request.params.itemId, request.params.version),
  );
  app.post<{ Params: S.ItemParams; Body: S.InstallBody }>(
    `${base}/items/:itemId/install`,
    { schema: { params: S.ItemParams, body: S.InstallBody } },
    async (request, reply) =>
      reply
        .status(202)
        .send(await installer.install(principalOf(request), request.params.itemId, request.body)),
  );
  app.get<{ Params: S.ItemParams } & Query>(
    `${base}/items/:itemId/installs`,
    { schema: { params: S.ItemParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, INSTALL_LIST);
      return listResponse(spec, await installer.installs(principalOf(request), request.params.itemId, spec));
    },
  );
  app.get<{ Params: S.ItemParams }>(
    `${base}/items/:itemId/events`,
    { schema: { params: S.ItemParams } },
    (request) => catalogue.events(principalOf(request), request.params.itemId),
  );
  app.get(`${base}/categories`, () => catalogue.categories());
  // Any role may report usage: an asset hub's token is often a viewer's.
  app.post<{ Body: S.TelemetryBody }>(
    `${base}/telemetry`,
    { schema: { body: S.TelemetryBody }, config: { permission: 'read' } },
    (request) => catalogue.recordEvents(principalOf(request), request.body.events),
  );
}

/** `/admin/v1/mpc-secrets/{key}`: marketplace secrets (a global admin). */
export async function adminMarketplaceRoutes(app: FastifyInstance, options: { secrets: MarketplaceSecrets }) {
  const { secrets } = options;
  const path = '/admin/v1/mpc-secrets/:key';
  app.get<{ Params: S.SecretParams }>(path, { schema: { params: S.SecretParams } }, (request) =>
    secrets.get(principalOf(request), request.params.key),
  );
  app.post<{ Params: S.SecretParams; Body: S.SecretBody }>(
    path,
    { schema: { params: S.SecretParams, body: S.SecretBody } },
    (request) => secrets.set(principalOf(request), request.params.key, request.body.value),
  );
  app.delete<{ Params: S.SecretParams }>(
    path,
    { schema: { params: S.SecretParams } },
    async (request, reply) => {
      await secrets.remove(principalOf(request), request.params.key);
      return reply.status(204).send();
    },
  );
}
