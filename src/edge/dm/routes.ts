/** HTTP translation of enrolment: `/dm/cloud/...` (contract part 4.1) and `/dm/v2/api-clients`. */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import type { AuthService } from '../auth/index.js';
import type { DmService } from './service.js';

const Strict = { additionalProperties: false } as const;
const LocaleQuery = Type.Object({ locale: Type.Optional(Type.String()) }, { additionalProperties: true });
const UrlBody = Type.Object({ url: Type.String({ minLength: 1, maxLength: 2000 }) }, Strict);
const CodeBody = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 100 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  Strict,
);
const TxParams = Type.Object({ tx: Type.String({ minLength: 1, maxLength: 100 }) });
const ClientParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const UpdateClientBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    role: Type.Optional(Type.Union([Type.Literal('admin'), Type.Literal('viewer')])),
  },
  Strict,
);

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
    async (request) => dm.activate(request.body.code, request.body.name),
  );
  app.get('/dm/cloud', async () => dm.status());
  app.delete('/dm/cloud', async (_request, reply) => {
    await dm.unenrol();
    return reply.status(204).send();
  });
  app.put<{ Params: Static<typeof ClientParams>; Body: Static<typeof UpdateClientBody> }>(
    '/dm/v2/api-clients/:id',
    { schema: { params: ClientParams, body: UpdateClientBody } },
    async (request) => options.auth.updateClient(request.params.id, request.body),
  );
}
