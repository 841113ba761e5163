/** HTTP translation of the asset hub: the main API's `/api/v1/asset-hub/...` and the admin console's settings. */
import type { FastifyInstance } from 'fastify';
import { notFound } from '../../kernel/errors.js';
import { ListQuerySchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { principalOf } from '../auth/index.js';
import { IMPORT_LIST } from './repository.js';
import type { AssetHubService } from './service.js';
import type { HubSettings } from './settings.js';
import type { TelemetryOutbox } from './telemetry.js';
import * as S from './schemas.js';

type Query = { Querystring: Record<string, unknown> };
/** A body is optional on these POSTs: `{}` when none is sent. */
const optionalBody = <T>(b: T | undefined | null): T => (b ?? {}) as T;

function catalogueRoutes(app: FastifyInstance, hub: AssetHubService, settings: HubSettings, base: string) {
  app.get(`${base}/connection`, () => settings.status());
  app.post(`${base}/connect`, () => settings.connect());
  app.get<Query>(`${base}/catalog`, { schema: { querystring: ListQuerySchema } }, (request) =>
    hub.catalogue(request.query),
  );
  app.get<{ Params: S.ItemParams }>(
    `${base}/catalog/:itemId`,
    { schema: { params: S.ItemParams } },
    (request) => hub.catalogueItem(request.params.itemId),
  );
  app.get<{ Params: S.ItemParams } & Query>(
    `${base}/catalog/:itemId/versions`,
    { schema: { params: S.ItemParams, querystring: ListQuerySchema } },
    (request) => hub.catalogueVersions(request.params.itemId, request.query),
  );
  app.get<{ Params: S.VersionParams }>(
    `${base}/catalog/:itemId/versions/:version`,
    { schema: { params: S.VersionParams } },
    (request) => hub.catalogueVersion(request.params.itemId, request.params.version),
  );
}

export async function assetHubRoutes(
  app: FastifyInstance,
  options: { hub: AssetHubService; settings: HubSettings },
) {
  const { hub, settings } = options;
  const base = '/api/v1/asset-hub';
  catalogueRoutes(app, hub, settings, base);
  const company = `${base}/company/:companyName`;
  app.get<{ Params: S.CompanyParams } & Query>(
    `${company}/imports`,
    { schema: { params: S.CompanyParams, querystring: ListQuerySchema } },
    async (request) => {
      const spec = parseListQuery(request.query, IMPORT_LIST);
      return listResponse(
        spec,
        await hub.listImports(principalOf(request), request.params.companyName, spec),
      );
    },
  );
  app.post<{ Params: S.CompanyParams; Body: S.ImportBody }>(
    `${company}/imports`,
    { schema: { params: S.CompanyParams, body: S.ImportBody } },
    async (request, reply) =>
      reply
        .status(201)
        .send(await hub.importItem(principalOf(request), request.params.companyName, request.body)),
  );
  app.get<{ Params: S.ImportParams }>(
    `${company}/imports/:importId`,
    { schema: { params: S.ImportParams } },
    (request) => hub.getImport(principalOf(request), request.params.companyName, request.params.importId),
  );
  app.post<{ Params: S.ImportParams; Body: S.UpdateBody }>(
    `${company}/imports/:importId/update`,
    { schema: { params: S.ImportParams, body: S.UpdateBody } },
    (request) =>
      hub.updateImport(
        principalOf(request),
        request.params.companyName,
        request.params.importId,
        optionalBody(request.body),
      ),
  );
  app.delete<{ Params: S.ImportParams }>(
    `${company}/imports/:importId`,
    { schema: { params: S.ImportParams } },
    async (request, reply) => {
      await hub.deleteImport(principalOf(request), request.params.companyName, request.params.importId);
      return reply.status(204).send();
    },
  );
  app.post<{ Params: S.CompanyParams; Body: S.SyncBody }>(
    `${company}/sync`,
    { schema: { params: S.CompanyParams, body: S.SyncBody } },
    (request) => hub.sync(principalOf(request), request.params.companyName, optionalBody(request.body)),
  );
}

export async function adminAssetHubRoutes(
  app: FastifyInstance,
  options: { settings: HubSettings; telemetry: TelemetryOutbox },
) {
  const { settings, telemetry } = options;
  const base = '/admin/v1/asset-hub';
  app.get(`${base}/settings`, (request) => settings.get(principalOf(request)));
  app.post<{ Body: S.SettingsBody }>(`${base}/settings`, { schema: { body: S.SettingsBody } }, (request) =>
    settings.set(principalOf(request), request.body),
  );
  app.delete(`${base}/settings`, async (request, reply) => {
    if (!(await settings.remove(principalOf(request)))) throw notFound('no asset hub is configured');
    return reply.status(204).send();
  });
  app.post<{ Body: S.SettingsBody }>(
    `${base}/settings/validate`,
    { schema: { body: S.SettingsBody } },
    (request) => settings.validate(principalOf(request), optionalBody(request.body)),
  );
  app.get(`${base}/telemetry`, () => telemetry.status());
  app.post(`${base}/telemetry/unpark`, () => telemetry.unpark());
}
