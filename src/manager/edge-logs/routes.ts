/**
 * HTTP translation of the fleet's edge logs: `POST /api/v1/edge-logs/query`, `/hits`,
 * `/statistics` (any role over the devices), and a device's log forwarding
 * `/api/v1/device/{deviceId}/log-forwarding/status`, `/start`, `/stop` (start and stop: admin,
 * as the edge's device management; the edge checks it again).
 */
import type { FastifyInstance } from 'fastify';
import { principalOf, requireRole } from '../auth/index.js';
import * as S from './schemas.js';
import type { EdgeLogsService } from './service.js';

export async function edgeLogsRoutes(app: FastifyInstance, options: { logs: EdgeLogsService }) {
  const { logs } = options;
  // Reads, though they are POSTs (a body carries the filters): no audit record.
  const read = { audit: false } as const;
  app.post<{ Body: S.QueryBody }>(
    '/api/v1/edge-logs/query',
    { config: read, schema: { body: S.QueryBody, response: { 200: S.QueryReply } } },
    async (request) => logs.query(principalOf(request), request.body),
  );
  app.post<{ Body: S.HitsBody }>(
    '/api/v1/edge-logs/hits',
    { config: read, schema: { body: S.HitsBody } },
    async (request) => logs.hits(principalOf(request), request.body),
  );
  app.post<{ Body: S.StatisticsBody }>(
    '/api/v1/edge-logs/statistics',
    { config: read, schema: { body: S.StatisticsBody } },
    async (request) => logs.statistics(principalOf(request), request.body),
  );

  const base = '/api/v1/device/:deviceId/log-forwarding';
  app.get<{ Params: S.DeviceParams }>(
    `${base}/status`,
    { schema: { params: S.DeviceParams } },
    async (request) => logs.forwarding(principalOf(request), request.params.deviceId, 'status', request.id),
  );
  for (const what of ['start', 'stop'] as const)
    app.post<{ Params: S.DeviceParams }>(
      `${base}/${what}`,
      { schema: { params: S.DeviceParams } },
      async (request) => {
        const principal = principalOf(request);
        const d = await logs.device(principal, request.params.deviceId);
        requireRole(principal, d, 'admin');
        return logs.forwarding(principal, d.id, what, request.id);
      },
    );
}
