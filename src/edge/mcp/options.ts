/** The MCP module's settings: each is a flag, an environment variable and a config-file key. */
import { Type } from '@sinclair/typebox';
import { Option } from '../../kernel/service/options.js';

export const mcpOptions = Type.Object({
  mcp: Option.bool({
    default: true,
    description: "serve the edge as an MCP server at /mcp (streamable HTTP, the edge's own credentials)",
  }),
  mcpMaxSessions: Option.int({
    minimum: 1,
    maximum: 10_000,
    default: 32,
    description: 'MCP sessions open at once at /mcp; one more initialize is refused with a 429',
  }),
  mcpSessionIdle: Option.int({
    minimum: 1000,
    maximum: 86_400_000,
    default: 600_000,
    description: 'an MCP session without a request for this long (ms) is closed',
  }),
  mcpMaxBody: Option.int({
    minimum: 1024,
    maximum: 16 * 1024 * 1024,
    default: 1024 * 1024,
    description: 'largest JSON-RPC body accepted at /mcp (bytes); a larger one is refused with a 413',
  }),
  mcpMaxResult: Option.int({
    minimum: 1024,
    maximum: 64 * 1024 * 1024,
    default: 1024 * 1024,
    description:
      'largest text of one MCP tool result or resource (bytes); a larger one is refused, asking for a smaller page',
  }),
});
