/** HTTP translation of high availability: `/api/v1/device/{deviceId}/ha...` (contract part 4.5). */
import type { FastifyInstance } from 'fastify';
import { principalOf } from '../auth/index.js';
import { ConfigureHaBody, HaDeviceParams, HaSchema } from './schemas.js';
import type { HaService } from './service.js';

export async function haRoutes(app: FastifyInstance, options: { ha: HaService }) {
  const { ha } = options;
  const base = '/api/v1/device/:deviceId/ha';
  const read = { params: HaDeviceParams, response: { 200: HaSchema } };
  app.get<{ Params: HaDeviceParams }>(base, { schema: read }, async (request) =>
    ha.get(principalOf(request), request.params.deviceId),
  );
  app.get<{ Params: HaDeviceParams }>(
    `${base}/interfaces`,
    { schema: { params: HaDeviceParams } },
    async (request, reply) => {
      const r = await ha.interfaces(principalOf(request), request.params.deviceId, request.id);
      return reply.status(r.status).send(r.body);
    },
  );
  app.post<{ Params: HaDeviceParams; Body: ConfigureHaBody }>(
    `${base}/configure`,
    { schema: { ...read, body: ConfigureHaBody } },
    async (request) => ha.configure(principalOf(request), request.params.deviceId, request.body),
  );
  app.post<{ Params: HaDeviceParams }>(`${base}/enable`, { schema: read }, async (request) =>
    ha.setEnabled(principalOf(request), request.params.deviceId, true),
  );
  app.post<{ Params: HaDeviceParams }>(`${base}/disable`, { schema: read }, async (request) =>
    ha.setEnabled(principalOf(request), request.params.deviceId, false),
  );
  app.delete<{ Params: HaDeviceParams }>(
    base,
    { schema: { params: HaDeviceParams } },
    async (request, reply) => {
      await ha.remove(principalOf(request), request.params.deviceId);
      return reply.status(204).send();
    },
  );
}
