/** HTTP translation of enrolment: `/dm/cloud/...` (contract part 4.1) and `/dm/v2/api-clients`. */
import type { FastifyInstance } from 'fastify';
import type { Static } from '@sinclair/typebox';
import type { AuthService } from '../auth/index.js';
import { forbidden } from '../../kernel/errors.js';
import {
  ClientParams,
  CodeBody,
  HaRoleReply,
  LocaleQuery,
  PinBody,
  TxParams,
  UpdateClientBody,
  UrlBody,
} from './schemas.js';
import type { DmService } from './service.js';

export async function dmRoutes(app: FastifyInstance, options: { dm: DmService; auth: AuthService }) {
  const { dm } = options;
  app.post<{ Body: Static<typeof UrlBody> }>(
    '/dm/cloud/url',
    { schema: { body: UrlBody, querystring: LocaleQuery } },
    async (request) => dm.proposeManager(request.body.url),
  );
  app.put<{ Params: Static<typeof TxParams> }>(
    '/dm/cloud/url/:tx/confirm',
    { schema: { params: TxParams, querystring: LocaleQuery } },
    async (request) => dm.confirm(request.params.tx),
  );
  app.post<{ Body: Static<typeof CodeBody> }>(
    '/dm/cloud',
    { schema: { body: CodeBody, querystring: LocaleQuery } },
    async (request) =>
      dm.activate(request.body.code, request.body.name, { move: request.body.move === true }),
  );
  app.get('/dm/cloud', async () => dm.status());
  // High availability: this edge's role in its pair, its epoch and whether it polls now.
  app.get('/dm/v2/ha/role', { schema: { response: { 200: HaRoleReply } } }, async () => dm.ha.view());
  app.delete('/dm/cloud', async (_request, reply) => {
    await dm.unenrol();
    return reply.status(204).send();
  });
  // The manager announces its next certificate over the link before it swaps it (user SSL).
  app.put<{ Body: Static<typeof PinBody> }>(
    '/dm/cloud/certificate',
    { config: { permission: 'write' }, schema: { body: PinBody } },
    async (request) => {
      if (!request.auth?.bridged)
        throw forbidden(
          'only the manager announces its new certificate, over its link; to change managers use POST /dm/cloud/url and confirm',
        );
      return dm.repin(request.body.fingerprint);
    },
  );
  app.put<{ Params: Static<typeof ClientParams>; Body: Static<typeof UpdateClientBody> }>(
    '/dm/v2/api-clients/:id',
    { schema: { params: ClientParams, body: UpdateClientBody } },
    async (request) => options.auth.updateClient(request.params.id, request.body),
  );
}
