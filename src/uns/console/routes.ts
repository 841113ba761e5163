/**
 * The UNS console's routes (as the edge console's, src/edge/console/routes.ts): `GET /` (index.html) and `GET /assets/*` (Vite's hashed files), open to
 * anyone (the sign-in page must load; every call the page makes goes to the authenticated API).
 * No fallback: a path the console does not have is a 404 here and the API's answer elsewhere, so
 * an API mistake never turns into index.html. The console routes itself by the fragment (`/#/devices`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleAsset, ConsoleAssets } from './assets.js';

/**
 * The headers of every console response: no script but the console's own files (no inline
 * script, no eval, no CDN), styles and images from the UNS, calls to the UNS
 * only, never framed, no referrer, no MIME sniffing.
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

export const IMMUTABLE = 'public, max-age=31536000, immutable';

/** What `/` answers when the console is not built (tests that did not build it, a source checkout). */
export const NOT_BUILT_PAGE =
  'The UNS console is not built.\n\n' +
  'Run `npm run build` in the Millwright checkout (it builds the console into dist/console/uns),\n' +
  'then restart the UNS. The API is served as usual; see docs/console.md.\n';

export async function consoleRoutes(
  app: FastifyInstance,
  options: { assets: ConsoleAssets | null },
): Promise<void> {
  const { assets } = options;
  const config = { permission: 'public' as const };

  app.get('/', { config }, async (request, reply) => {
    secure(reply);
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
    secure(reply);
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

function secure(reply: FastifyReply): void {
  void reply.headers(CONSOLE_SECURITY_HEADERS);
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
