/** HTTP translation of the fleet: `/api/v1/company`, `project`, `device`, `activation`, `system`. */
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import { ListQuerySchema, ListResponseSchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import { RateLimiter } from '../../kernel/http/rate-limit.js';
import { principalOf } from '../auth/index.js';
import {
  CODE_LIST,
  COMPANY_LIST,
  CONNECTION_LIST,
  DEVICE_LIST,
  PROJECT_LIST,
  type FleetService,
} from './service.js';
import * as S from './schemas.js';

type Query = { Querystring: Record<string, unknown> };
const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);

export interface FleetRoutesOptions {
  fleet: FleetService;
  /** Facts of `/system/deployment-info`. */
  deployment: () => Promise<Record<string, unknown>>;
}

export async function fleetRoutes(app: FastifyInstance, options: FleetRoutesOptions) {
  companyRoutes(app, options.fleet);
  deviceRoutes(app, options.fleet);
  activationCodeRoutes(app, options.fleet);

  app.get('/api/v1/system/deployment-info', async () => options.deployment());

  // Contract part 9: sites were removed in 3.0; every site call answers 410.
  const gone = async () => {
    throw new AppError(
      ERRORS.sitesRemoved,
      'the sites feature was removed in edge manager 3.0; use projects instead',
    );
  };
  for (const url of ['/api/v1/site', '/api/v1/site/*']) {
    app.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url,
      config: { permission: 'read' },
      handler: gone,
    });
  }
}

/** Companies and projects. */
function companyRoutes(app: FastifyInstance, fleet: FleetService) {
  app.post<{ Body: S.CreateCompanyBody }>(
    '/api/v1/company',
    { schema: { body: S.CreateCompanyBody } },
    async (request, reply) =>
      reply.status(201).send(await fleet.createCompany(principalOf(request), request.body.companyName)),
  );
  app.get<Query>(
    '/api/v1/company/list/paged',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.CompanySchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, COMPANY_LIST);
      return listResponse(spec, await fleet.listCompanies(principalOf(request), spec));
    },
  );

  app.post<{ Body: S.CreateProjectBody }>(
    '/api/v1/project',
    { schema: { body: S.CreateProjectBody, response: { 201: S.ProjectSchema } } },
    async (request, reply) => {
      const b = request.body;
      const project = await fleet.createProject(
        principalOf(request),
        { companyId: b.companyId, companyName: b.companyName },
        b.name,
      );
      return reply.status(201).send(project);
    },
  );
  app.get<Query>(
    '/api/v1/project/paged',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.ProjectSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, PROJECT_LIST);
      const ref = { companyId: str(request.query.companyId), companyName: str(request.query.companyName) };
      return listResponse(spec, await fleet.listProjects(principalOf(request), ref, spec));
    },
  );
}

/** Devices: list, read, remove, connection history, pretty names, top metrics. */
function deviceRoutes(app: FastifyInstance, fleet: FleetService) {
  app.get<Query>(
    '/api/v1/device/list',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.DeviceLiteSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, DEVICE_LIST);
      const page = await fleet.listDevices(principalOf(request), spec, str(request.query.projectId));
      return listResponse(spec, page);
    },
  );
  app.get<{ Params: S.DeviceParams }>(
    '/api/v1/device/:deviceId',
    { schema: { params: S.DeviceParams, response: { 200: S.DeviceSchema } } },
    async (request) => fleet.device(principalOf(request), request.params.deviceId),
  );
  app.delete<{ Params: S.DeviceParams }>(
    '/api/v1/device/:deviceId',
    { schema: { params: S.DeviceParams } },
    async (request, reply) => {
      await fleet.deleteDevice(principalOf(request), request.params.deviceId);
      return reply.status(204).send();
    },
  );
  app.get<{ Params: S.DeviceParams; Querystring: Record<string, unknown> }>(
    '/api/v1/device/:deviceId/connections',
    {
      schema: {
        params: S.DeviceParams,
        querystring: ListQuerySchema,
        response: { 200: ListResponseSchema(S.ConnectionSchema) },
      },
    },
    async (request) => {
      const spec = parseListQuery(request.query, CONNECTION_LIST);
      return listResponse(spec, await fleet.connections(principalOf(request), request.params.deviceId, spec));
    },
  );
  app.get<{ Params: S.ProjectParams }>(
    '/api/v1/device/:projectId/pretty-names',
    { schema: { params: S.ProjectParams, response: { 200: S.PrettyNames } } },
    async (request) => fleet.prettyNames(principalOf(request), request.params.projectId),
  );
  app.post<{ Params: S.ProjectParams; Body: S.BatchPrettyNamesBody }>(
    '/api/v1/device/:projectId/batch/pretty-names',
    { schema: { params: S.ProjectParams, body: S.BatchPrettyNamesBody } },
    async (request) =>
      fleet.setPrettyNames(principalOf(request), request.params.projectId, request.body.items),
  );
  app.get<{ Params: S.ProjectParams; Querystring: S.TopMetricsQuery }>(
    '/api/v1/device/metrics/:projectId/top',
    { schema: { params: S.ProjectParams, querystring: S.TopMetricsQuery } },
    async (request) => {
      const metric = str(request.query.metric) ?? 'cpu';
      if (metric !== 'cpu' && metric !== 'memory') throw badRequest('metric must be cpu or memory');
      const limit = request.query.limit ?? 10;
      return fleet.topMetrics(principalOf(request), request.params.projectId, metric, limit);
    },
  );
}

/** Activation codes and their status. */
function activationCodeRoutes(app: FastifyInstance, fleet: FleetService) {
  app.post<{ Body: S.CreateCodeBody }>(
    '/api/v1/activation/code',
    { schema: { body: S.CreateCodeBody } },
    async (request, reply) => {
      const b = request.body;
      const codes = await fleet.createCodes(principalOf(request), b.projectId, {
        count: b.count ?? 1,
        ttlSeconds: b.ttlSeconds,
        deviceName: b.deviceName,
      });
      return reply.status(201).send(b.count === undefined ? codes[0] : { items: codes, total: codes.length });
    },
  );
  app.get<Query>(
    '/api/v1/activation/device-status',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.CodeStatusSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, CODE_LIST);
      return listResponse(
        spec,
        await fleet.deviceStatus(principalOf(request), spec, str(request.query.projectId)),
      );
    },
  );
}

/** The admin console's fleet routes: every device, deployment facts. */
export async function adminFleetRoutes(app: FastifyInstance, options: FleetRoutesOptions) {
  const { fleet } = options;
  app.get<Query>(
    '/admin/v1/device/list',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.DeviceSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, DEVICE_LIST);
      return listResponse(
        spec,
        await fleet.listDevices(principalOf(request), spec, str(request.query.projectId)),
      );
    },
  );
  app.get('/admin/v1/system/deployment-info', async () => options.deployment());
}

/**
 * `POST /dm/activate`: the edge's enrolment with an activation code (the code is the credential,
 * so the route is open at the token layer; attempts are rate limited per address).
 */
export async function activationRoutes(
  app: FastifyInstance,
  options: { fleet: FleetService; rateLimit: number },
) {
  const limiter = new RateLimiter({ max: options.rateLimit, windowMs: 60_000 });
  app.post<{ Body: S.ActivateBody }>(
    '/dm/activate',
    {
      config: { permission: 'public' },
      onRequest: limiter.hook(),
      schema: {
        body: S.ActivateBody,
        response: {
          200: Type.Object({
            deviceId: Type.String(),
            projectId: Type.String(),
            companyId: Type.String(),
            linkSecret: Type.String(),
            linkPath: Type.String(),
          }),
        },
      },
    },
    async (request) => ({ ...(await options.fleet.activate(request.body)), linkPath: '/dm/link' }),
  );
}

export { MILLWRIGHT_VERSION };
