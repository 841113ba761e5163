/**
 * Device OAuth clients (`/api/v1/device/{deviceId}/oauth-clients`): list, create, update, delete
 * and regenerate the secret, carried out on the edge over its link as API clients of that edge
 * (OAuth 2.0 client credentials at the edge's `/auth/v3/oauth/token`). The secret is answered
 * once, at create and at regenerate; the manager keeps no copy.
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { principalOf, requireRole } from '../auth/index.js';
import { principalActor, type BridgeService } from './service.js';

const Strict = { additionalProperties: false } as const;
const Role = Type.Union([Type.Literal('admin'), Type.Literal('viewer')]);
const DeviceParams = Type.Object({ deviceId: Type.String({ minLength: 1, maxLength: 100 }) });
const ClientParams = Type.Object({
  deviceId: Type.String({ minLength: 1, maxLength: 100 }),
  clientId: Type.String({ minLength: 1, maxLength: 100 }),
});
const CreateBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), role: Type.Optional(Role) },
  Strict,
);
const UpdateBody = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), role: Type.Optional(Role) },
  Strict,
);
const ClientSchema = Type.Object({
  clientId: Type.String(),
  name: Type.String(),
  role: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
const ClientWithSecret = Type.Object({ ...ClientSchema.properties, clientSecret: Type.String() });

interface EdgeClient {
  client_id: string;
  name: string;
  role: string;
  createdAt: string;
  updatedAt: string;
  client_secret?: string;
}

const view = (c: EdgeClient) => ({
  clientId: c.client_id,
  name: c.name,
  role: c.role,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
});

/** The edge's answer, or its error as the manager's (same status, code and message). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): the edge's JSON answer, read by the caller; to be typed with the bridge service
function expect(res: { status: number; body: any }, ok: number): any {
  if (res.status === ok) return res.body;
  const b = res.body as { code?: string; message?: string } | undefined;
  throw AppError.relayed(
    res.status,
    b?.code,
    ERRORS.edgeError,
    `the edge answered: ${b?.message ?? res.status}`,
  );
}

export async function oauthClientRoutes(app: FastifyInstance, options: { bridge: BridgeService }) {
  const { bridge } = options;
  const base = '/api/v1/device/:deviceId/oauth-clients';
  const device = async (
    request: { params: { deviceId: string }; id: string } & Parameters<typeof principalOf>[0],
    write: boolean,
  ) => {
    const principal = principalOf(request);
    const d = await bridge.fleet.device(principal, request.params.deviceId);
    if (write) requireRole(principal, d, 'admin');
    // The edge runs each call as the caller's role over the device's project.
    return { id: d.id, actor: principalActor(principal, d, request.id) };
  };

  app.get<{ Params: Static<typeof DeviceParams> }>(
    base,
    {
      schema: {
        params: DeviceParams,
        response: { 200: Type.Object({ items: Type.Array(ClientSchema), total: Type.Integer() }) },
      },
    },
    async (request) => {
      const { id, actor } = await device(request, false);
      const body = expect(
        await bridge.json(id, 'GET', '/auth/v3/api-clients?limit=200', undefined, {}, actor),
        200,
      );
      return { items: (body.items as EdgeClient[]).map(view), total: body.total as number };
    },
  );

  app.post<{ Params: Static<typeof DeviceParams>; Body: Static<typeof CreateBody> }>(
    base,
    { schema: { params: DeviceParams, body: CreateBody, response: { 201: ClientWithSecret } } },
    async (request, reply) => {
      const { id, actor } = await device(request, true);
      const c = expect(
        await bridge.json(
          id,
          'POST',
          '/auth/v3/api-clients',
          { name: request.body.name, role: request.body.role ?? 'admin' },
          {},
          actor,
        ),
        201,
      ) as EdgeClient;
      return reply.status(201).send({ ...view(c), clientSecret: c.client_secret! });
    },
  );

  app.put<{ Params: Static<typeof ClientParams>; Body: Static<typeof UpdateBody> }>(
    `${base}/:clientId`,
    { schema: { params: ClientParams, body: UpdateBody, response: { 200: ClientSchema } } },
    async (request) => {
      const { id, actor } = await device(request, true);
      const path = `/dm/v2/api-clients/${encodeURIComponent(request.params.clientId)}`;
      return view(expect(await bridge.json(id, 'PUT', path, request.body, {}, actor), 200) as EdgeClient);
    },
  );

  app.delete<{ Params: Static<typeof ClientParams> }>(
    `${base}/:clientId`,
    { schema: { params: ClientParams } },
    async (request, reply) => {
      const { id, actor } = await device(request, true);
      const path = `/auth/v3/api-clients/${encodeURIComponent(request.params.clientId)}`;
      expect(await bridge.json(id, 'DELETE', path, undefined, {}, actor), 204);
      return reply.status(204).send();
    },
  );

  app.post<{ Params: Static<typeof ClientParams> }>(
    `${base}/:clientId/secret`,
    {
      schema: {
        params: ClientParams,
        response: { 200: Type.Object({ clientId: Type.String(), clientSecret: Type.String() }) },
      },
    },
    async (request) => {
      const { id, actor } = await device(request, true);
      const path = `/auth/v3/api-clients/${encodeURIComponent(request.params.clientId)}/secret`;
      const r = expect(await bridge.json(id, 'POST', path, {}, {}, actor), 200) as EdgeClient;
      return { clientId: r.client_id, clientSecret: r.client_secret! };
    },
  );
}
