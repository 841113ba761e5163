/** HTTP translation of the trust store: `GET` and `PUT /dm/v2/ca-certificates` (admin: device management). */
import type { FastifyInstance } from 'fastify';
import { TrustPutBody, TrustReply } from './schemas.js';
import type { TrustStore } from './service.js';

export async function trustRoutes(app: FastifyInstance, options: { trust: TrustStore }) {
  const { trust } = options;
  app.get(
    '/dm/v2/ca-certificates',
    { config: { permission: 'read' }, schema: { response: { 200: TrustReply } } },
    async () => trust.view(),
  );
  app.put<{ Body: TrustPutBody }>(
    '/dm/v2/ca-certificates',
    {
      config: { permission: 'write' },
      bodyLimit: 16 * 1024 * 1024,
      schema: { body: TrustPutBody, response: { 200: TrustReply } },
    },
    async (request) => trust.replace(request.body),
  );
}
