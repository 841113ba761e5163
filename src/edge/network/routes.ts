/** HTTP translation of the network routes: `/dm/ifconfig`, `/dm/v2/routes`. */
import type { FastifyInstance } from 'fastify';
import { IfconfigQuery, IfconfigReply, RouteParams, RoutesQuery, RoutesReply } from './schemas.js';
import type { NetworkService } from './service.js';

/** `true`, `1` and a bare `?show_bridges` are true; anything else is false. */
const flag = (v: boolean | string | undefined): boolean =>
  v === true || v === '' || v === '1' || (typeof v === 'string' && v.toLowerCase() === 'true');

export async function networkRoutes(app: FastifyInstance, options: { network: NetworkService }) {
  const { network } = options;
  app.get<{ Querystring: IfconfigQuery }>(
    '/dm/ifconfig',
    { schema: { querystring: IfconfigQuery, response: { 200: IfconfigReply } } },
    async (request) => {
      const interfaces = await network.interfaces(flag(request.query.show_bridges));
      return { interfaces, count: interfaces.length };
    },
  );
  app.get<{ Querystring: RoutesQuery }>(
    '/dm/v2/routes',
    { schema: { querystring: RoutesQuery, response: { 200: RoutesReply } } },
    async (request) => {
      const routes = await network.routes(flag(request.query.all));
      return { routes, count: routes.length };
    },
  );
  app.delete<{ Params: RouteParams }>(
    '/dm/v2/routes/:id',
    { schema: { params: RouteParams } },
    async (request, reply) => {
      await network.deleteRoute(request.params.id);
      return reply.code(204).send();
    },
  );
}
