/** `POST /admin/v1/registry/image/upload-remote`, on the admin console API: a thin translation. */
import type { FastifyInstance } from 'fastify';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import { principalOf } from '../auth/index.js';
import { RemotePullBody } from './schemas.js';
import type { RegistryService } from './service.js';

export async function registryRoutes(app: FastifyInstance, options: { registry: RegistryService }) {
  // An empty JSON body is "missing", not a parse error.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_r, body, done) => {
    const text = String(body).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (err) {
      done(badRequest(`the request body is not JSON: ${(err as Error).message}`), undefined);
    }
  });
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined || request.body === null)
      throw new AppError(
        ERRORS.missingBody,
        'Required request body is missing: send the pull request as a JSON body',
      );
  });
  app.post<{ Body: RemotePullBody }>(
    '/admin/v1/registry/image/upload-remote',
    { schema: { body: RemotePullBody } },
    async (request, reply) => {
      const task = await options.registry.requestPull(principalOf(request), request.body);
      return reply.status(202).send(task);
    },
  );
}
