import type { FastifyInstance } from 'fastify';
import { MILLWRIGHT_VERSION } from '../version.js';

/**
 * The routes every service answers without credentials: `/health` for load balancers and
 * `/version` for telling which Millwright (and which API line) answers.
 */
export async function healthRoutes(app: FastifyInstance, options: { service: string; apiVersion: string }) {
  app.get('/health', { config: { permission: 'public' } }, async () => ({ status: 'ok' }));
  app.get('/version', { config: { permission: 'public' } }, async () => ({
    service: options.service,
    millwright: MILLWRIGHT_VERSION,
    api: options.apiVersion,
  }));
}
