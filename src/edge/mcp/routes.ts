/**
 * `/mcp`: the MCP streamable HTTP transport (POST for JSON-RPC messages, GET for the server's
 * event stream, DELETE to end a session), behind the edge's own authentication hook. Every caller
 * may reach it (`read`): what a role may do is decided per tool (`write_tag` needs admin or
 * operator), so that a viewer's assistant can still read the plant.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../../kernel/errors.js';
import type { McpSessions } from './sessions.js';

export const MCP_PATH = '/mcp';

export interface McpRoutesOptions {
  sessions: McpSessions;
  maxBody: number;
}

export async function mcpRoutes(app: FastifyInstance, o: McpRoutesOptions): Promise<void> {
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.auth)
      throw unauthorized('authentication required: send Authorization: Bearer <access token>');
    let hijacked = false;
    const hijack = () => {
      hijacked = true;
      reply.hijack();
    };
    try {
      await o.sessions.handle(request.raw, reply.raw, request.auth, request.body, hijack);
    } catch (err) {
      if (!hijacked) throw err;
      request.log.warn({ err }, 'MCP request failed after its answer began');
      if (!reply.raw.writableEnded) reply.raw.end();
    }
  };
  const config = { permission: 'read' as const };
  app.post(MCP_PATH, { config, bodyLimit: o.maxBody }, handler);
  app.get(MCP_PATH, { config }, handler);
  app.delete(MCP_PATH, { config }, handler);
}
