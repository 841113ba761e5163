/**
 * An edge's own console opened through the manager (`/edge-console/<project>/<device>/`): the
 * manager serves the edge console's files (dist/console/edge, built with a relative base) and
 * names, in the index.html it sends, the bridge's prefix as the console's API base
 * (`/api/v1/edge/<project>/<device>`) and its own CSRF cookie. Every call the console makes then
 * goes through the manager's bridge, over the edge's link, as the signed-in manager user (the
 * edge caps it at that user's role); the browser never reaches the edge. The index needs a
 * caller who may read the device; the hashed files are public like the console's own. The pages'
 * live parts (GraphQL subscriptions: live values, sync status) open their WebSocket at the same
 * prefix, relayed over the link too (src/manager/link/sockets.ts), with the session's CSRF token
 * in `connection_init` as the console sends it.
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { CONSOLE_SECURITY_HEADERS, CSRF_COOKIE, principalOf } from '../auth/index.js';
import type { FleetService } from '../fleet/index.js';
import { sendConsoleAsset, type ConsoleAssets } from '../../kernel/http/console.js';

const Params = Type.Object({
  projectId: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' }),
  deviceId: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$' }),
});
type Params = Static<typeof Params>;

export async function edgeConsoleRoutes(
  app: FastifyInstance,
  options: { assets: ConsoleAssets | null; fleet: FleetService },
): Promise<void> {
  const { assets, fleet } = options;
  app.get<{ Params: Params }>(
    '/edge-console/:projectId/:deviceId/',
    { schema: { params: Params } },
    async (request, reply) => {
      const { projectId, deviceId } = request.params;
      await fleet.device(principalOf(request), deviceId, projectId); // 404 unless readable
      void reply.headers(CONSOLE_SECURITY_HEADERS).header('cache-control', 'no-store');
      const index = assets?.files.get('index.html');
      if (!index)
        return reply.code(503).type('text/plain; charset=utf-8').send('the edge console is not built\n');
      const tags =
        `<meta name="millwright-api-base" content="/api/v1/edge/${projectId}/${deviceId}">` +
        `<meta name="millwright-csrf-cookie" content="${CSRF_COOKIE}">`;
      const html = index.body.toString('utf8').replace('<head>', `<head>${tags}`);
      return reply.type('text/html; charset=utf-8').send(html);
    },
  );
  // `/edge-console/<project>/<device>` without its slash: the relative files resolve from the slash.
  app.get<{ Params: Params }>(
    '/edge-console/:projectId/:deviceId',
    { schema: { params: Params } },
    async (request, reply) =>
      reply.redirect(`/edge-console/${request.params.projectId}/${request.params.deviceId}/`, 308),
  );
  app.get<{ Params: Params & { '*': string } }>(
    '/edge-console/:projectId/:deviceId/assets/*',
    { config: { permission: 'public' } },
    async (request, reply) => {
      void reply.headers(CONSOLE_SECURITY_HEADERS);
      const asset = assets?.files.get(`assets/${request.params['*']}`);
      if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('not found\n');
      return sendConsoleAsset(request, reply, asset);
    },
  );
}
