/** HTTP translation of the fleet twins: `/api/v1/dt2/...`. */
import type { FastifyInstance } from 'fastify';
import { principalOf } from '../auth/index.js';
import type { Dt2Service } from './service.js';
import * as S from './schemas.js';

/** An instances CSV is at most this many bytes. */
export const DT2_CSV_MAX_BYTES = 8 * 1024 * 1024;

export async function dt2Routes(app: FastifyInstance, o: { dt2: Dt2Service }) {
  const { dt2 } = o;
  app.post<{ Body: S.DynamicAttributeBody }>(
    '/api/v1/dt2/dynamic-attribute',
    { schema: { body: S.DynamicAttributeBody } },
    async (request, reply) =>
      reply.status(201).send(await dt2.dynamicAttribute(principalOf(request), request.body)),
  );
  app.post<{ Params: S.CompanyParams; Body: S.CompleteModelBody }>(
    '/api/v1/dt2/model/complete/:companyName',
    { schema: { params: S.CompanyParams, body: S.CompleteModelBody } },
    async (request, reply) => {
      const r = await dt2.complete(principalOf(request), request.params.companyName, request.body);
      return reply.status(r.Replaced ? 200 : 201).send(r);
    },
  );
  app.addContentTypeParser(
    ['text/csv', 'text/plain'],
    { parseAs: 'string', bodyLimit: DT2_CSV_MAX_BYTES },
    (_r, body, done) => done(null, body),
  );
  app.post<{ Params: S.CompanyParams; Querystring: S.ParseCsvQuery; Body: string }>(
    '/api/v1/dt2/:companyName/instances/parse-csv',
    { bodyLimit: DT2_CSV_MAX_BYTES, schema: { params: S.CompanyParams, querystring: S.ParseCsvQuery } },
    async (request) =>
      dt2.parseInstances(
        principalOf(request),
        request.params.companyName,
        typeof request.body === 'string' ? request.body : '',
        request.query,
      ),
  );
  app.get<{ Params: S.CompanyParams }>(
    '/api/v1/dt2/:companyName/models',
    { schema: { params: S.CompanyParams } },
    async (request) => ({
      items: await dt2.list(principalOf(request), request.params.companyName),
    }),
  );
  app.get<{ Params: S.ModelParams }>(
    '/api/v1/dt2/:companyName/models/:modelId',
    { schema: { params: S.ModelParams } },
    async (request) => dt2.get(principalOf(request), request.params.companyName, request.params.modelId),
  );
  app.delete<{ Params: S.ModelParams }>(
    '/api/v1/dt2/:companyName/models/:modelId',
    { schema: { params: S.ModelParams } },
    async (request, reply) => {
      await dt2.delete(principalOf(request), request.params.companyName, request.params.modelId);
      return reply.status(204).send();
    },
  );
  app.post<{ Params: S.ModelParams; Body: S.DeployBody }>(
    '/api/v1/dt2/:companyName/models/:modelId/deploy',
    { schema: { params: S.ModelParams, body: S.DeployBody } },
    async (request, reply) =>
      reply
        .status(202)
        .send(
          await dt2.deploy(
            principalOf(request),
            request.params.companyName,
            request.params.modelId,
            request.body.nodeId,
          ),
        ),
  );
}
