/**
 * The manager console's routes: `GET /` (index.html) and `GET /assets/*` (Vite's hashed files),
 * open to anyone (the page must load to offer the sign-in; every call it makes goes to the
 * authenticated API), on the main port and on the admin port. No fallback: the console routes
 * itself by the fragment (`/#/fleet`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_SECURITY_HEADERS } from '../auth/index.js';
import type { ConsoleAsset, ConsoleAssets } from './assets.js';

const IMMUTABLE = 'public, max-age=31536000, immutable';

export const NOT_BUILT_PAGE =
  'The manager console is not built.\n\n' +
  'Run `npm run build` in the Millwright checkout (it builds the console into dist/console/manager),\n' +
  'then restart the manager. The API is served as usual; see docs/manager.md.\n';

export async function managerConsoleRoutes(
  app: FastifyInstance,
  options: { assets: ConsoleAssets | null },
): Promise<void> {
  const { assets } = options;
  const config = { permission: 'public' as const };
  app.get('/', { config }, async (request, reply) => {
    void reply.headers(CONSOLE_SECURITY_HEADERS);
    const index = assets?.files.get('index.html');
    if (!index) {
      return reply
        .code(503)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send(NOT_BUILT_PAGE);
    }
    return sendAsset(request, reply, index);
  });
  app.get<{ Params: { '*': string } }>('/assets/*', { config }, async (request, reply) => {
    void reply.headers(CONSOLE_SECURITY_HEADERS);
    const asset = assets?.files.get(`assets/${request.params['*']}`);
    if (!asset) {
      return reply
        .code(404)
        .header('cache-control', 'no-store')
        .type('text/plain; charset=utf-8')
        .send('not found\n');
    }
    return sendAsset(request, reply, asset);
  });
}

function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: ConsoleAsset) {
  void reply
    .header('content-type', asset.type)
    .header('cache-control', asset.immutable ? IMMUTABLE : 'no-cache')
    .header('etag', asset.etag)
    .header('vary', 'accept-encoding');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  const accepts = String(request.headers['accept-encoding'] ?? '');
  if (asset.gzip && /\bgzip\b/.test(accepts)) {
    return reply.header('content-encoding', 'gzip').send(asset.gzip);
  }
  return reply.send(asset.body);
}
