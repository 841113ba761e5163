/** HTTP translation of the manager's identity: tokens, users and roles on the admin console API. */
import type { FastifyInstance } from 'fastify';
import { ListQuerySchema, ListResponseSchema, listResponse, parseListQuery } from '../../kernel/paging.js';
import { principalOf } from './hook.js';
import { BINDING_LIST, TOKEN_LIST, USER_LIST, type ManagerAuthService } from './service.js';
import * as S from './schemas.js';

type Query = { Querystring: Record<string, unknown> };

/** `/admin/v1/api-tokens`, `/admin/v1/users`, `/admin/v1/user/project/roles`. */
export async function adminAuthRoutes(app: FastifyInstance, options: { auth: ManagerAuthService }) {
  const { auth } = options;
  app.post<{ Body: S.CreateTokenBody }>(
    '/admin/v1/api-tokens',
    { schema: { body: S.CreateTokenBody, response: { 201: S.TokenWithSecret } } },
    async (request, reply) => {
      const b = request.body;
      return reply.status(201).send(await auth.createToken(b.name, b.role, b.username));
    },
  );
  app.get<Query>(
    '/admin/v1/api-tokens',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.TokenSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, TOKEN_LIST);
      return listResponse(spec, await auth.listTokens(spec));
    },
  );
  app.delete<{ Params: S.IdParams }>(
    '/admin/v1/api-tokens/:id',
    { schema: { params: S.IdParams } },
    async (request, reply) => {
      await auth.revokeToken(request.params.id);
      return reply.status(204).send();
    },
  );
  app.post<{ Params: S.IdParams }>(
    '/admin/v1/api-tokens/:id/rotate',
    { schema: { params: S.IdParams, response: { 200: S.TokenWithSecret } } },
    async (request) => auth.rotateToken(request.params.id),
  );

  app.post<{ Body: S.CreateUserBody }>(
    '/admin/v1/users',
    { schema: { body: S.CreateUserBody, response: { 201: S.UserSchema } } },
    async (request, reply) =>
      reply.status(201).send(await auth.createUser(request.body.username, request.body.password)),
  );
  app.get<Query>(
    '/admin/v1/users',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.UserSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, USER_LIST);
      return listResponse(spec, await auth.listUsers(spec));
    },
  );
  app.delete<{ Params: S.UsernameParams }>(
    '/admin/v1/users/:username',
    { schema: { params: S.UsernameParams } },
    async (request, reply) => {
      await auth.deleteUser(request.params.username);
      return reply.status(204).send();
    },
  );

  app.post<{ Body: S.GrantBody }>(
    '/admin/v1/user/project/roles',
    { schema: { body: S.GrantBody, response: { 201: S.BindingSchema } } },
    async (request, reply) => {
      const b = request.body;
      return reply
        .status(201)
        .send(await auth.grant(b.username, b.role, { companyId: b.companyId, projectId: b.projectId }));
    },
  );
  app.get<Query>(
    '/admin/v1/user/project/roles/paged',
    { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(S.BindingSchema) } } },
    async (request) => {
      const spec = parseListQuery(request.query, BINDING_LIST);
      return listResponse(spec, await auth.listBindings(spec));
    },
  );
  app.delete<{ Params: S.IdParams }>(
    '/admin/v1/user/project/roles/:id',
    { schema: { params: S.IdParams } },
    async (request, reply) => {
      await auth.revokeGrant(request.params.id);
      return reply.status(204).send();
    },
  );
}

/** `GET /api/v1/whoami` and `GET /mpcs/v1/whoami`: the caller's token and grants. */
export async function whoamiRoutes(app: FastifyInstance) {
  for (const path of ['/api/v1/whoami', '/mpcs/v1/whoami']) {
    app.get(path, { schema: { response: { 200: S.WhoAmI } } }, async (request) => {
      const p = principalOf(request);
      return { subject: p.subject, tokenName: p.tokenName, username: p.username, grants: p.grants };
    });
  }
}
