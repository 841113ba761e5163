/** `/devicehub/metrics`: the acquisition engine's state and counters as Prometheus text. */
import type { FastifyInstance } from 'fastify';
import { PROMETHEUS_CONTENT_TYPE } from '../../kernel/prometheus.js';
import type { AcquisitionEngine } from './engine.js';
import { acquisitionMetrics } from './metrics.js';

/** `GET /devicehub/metrics` (permission `read`, like every data route). */
export async function acquisitionRoutes(
  app: FastifyInstance,
  opts: { engine: () => AcquisitionEngine | undefined },
) {
  app.get('/devicehub/metrics', { config: { permission: 'read' } }, async (_request, reply) =>
    reply.type(PROMETHEUS_CONTENT_TYPE).send(acquisitionMetrics(opts.engine()?.status() ?? [])),
  );
}
