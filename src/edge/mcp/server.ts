/**
 * The edge's MCP server: one `McpServer` per session, its tools and its resources over the
 * plant (`plant.ts`). Each call is made as the caller of the HTTP request that carried it (its
 * role comes in `extra.authInfo`, set by the route from the edge's authentication): a viewer reads,
 * `write_tag` needs admin or operator.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import * as z from 'zod';
import type { Logger } from 'pino';
import { AppError, badRequest } from '../../kernel/errors.js';
import type { Role } from '../../kernel/http/auth-types.js';
import { MAX_WRITE_TIMEOUT_MS } from '../devicehub/index.js';
import { deviceUri, MAX_READ_TAGS, Plant, TREE_MAX_DEVICES } from './plant.js';

export const MCP_SERVER_NAME = 'millwright-edge';

export interface McpServerOptions {
  plant: Plant;
  version: string;
  /** Largest text of one tool result or resource (bytes). */
  maxResult: number;
  logger: Logger;
}

/** The role of the caller of one MCP request (the route puts it in the auth info). */
export const roleOf = (auth: AuthInfo | undefined): Role | undefined =>
  auth?.extra?.['role'] as Role | undefined;

const limit = (max: number, dflt: number) =>
  z.number().int().min(1).max(max).default(dflt).describe(`how many, 1 to ${max} (default ${dflt})`);
const tagRef = z.string().min(1).max(1000).describe('a tag ID, or its path <Device>.<Tag>');
const READ = { readOnlyHint: true, openWorldHint: false } as const;

/** A tool's answer: JSON text, refused when over the size bound; a refusal is a tool error. */
function answer(maxResult: number, log: Logger, run: () => Promise<unknown>): Promise<CallToolResult> {
  return run().then(
    (value) => {
      const text = JSON.stringify(value, null, 1);
      const bytes = Buffer.byteLength(text);
      if (bytes > maxResult)
        return failure(
          `the result is ${bytes} bytes, over the edge's bound of ${maxResult} (--mcp-max-result): ask for a smaller page`,
        );
      return { content: [{ type: 'text', text }] };
    },
    (err: unknown) => {
      if (!(err instanceof AppError)) log.warn({ err }, 'MCP tool failed');
      return failure(err instanceof Error ? err.message : String(err));
    },
  );
}

const failure = (message: string): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: message }],
});

function resource(uri: string, value: unknown, maxResult: number): ReadResourceResult {
  const text = JSON.stringify(value, null, 1);
  if (Buffer.byteLength(text) > maxResult)
    throw new Error(`the resource is over the edge's bound of ${maxResult} bytes (--mcp-max-result)`);
  return { contents: [{ uri, mimeType: 'application/json', text }] };
}

export function createMcpServer(o: McpServerOptions): McpServer {
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: o.version },
    {
      instructions:
        'An industrial edge: devices with tags (values read from machines). list_tags gives tag IDs and paths; ' +
        'read_values reads current values; read_history recent ones; write_tag writes (admin or operator only).',
    },
  );
  registerReadTools(server, o);
  registerWriteTool(server, o);
  registerResources(server, o);
  return server;
}

function registerReadTools(server: McpServer, o: McpServerOptions): void {
  const { plant, maxResult, logger } = o;
  server.registerTool(
    'list_devices',
    {
      description: 'The devices (machines) the edge reads, by name, with their driver.',
      inputSchema: { limit: limit(1000, 100), offset: z.number().int().min(0).default(0) },
      annotations: READ,
    },
    (a) => answer(maxResult, logger, () => plant.devices(a.limit, a.offset)),
  );
  server.registerTool(
    'list_tags',
    {
      description:
        'The tags (data points) of one device or of all, with ID, path <Device>.<Tag> and value type. ' +
        "Page with `after` set to the previous answer's `next`.",
      inputSchema: {
        device: z.string().max(200).optional().describe('a device name or ID; all devices when left out'),
        pattern: z.string().max(200).optional().describe('only tags whose name contains this'),
        limit: limit(1000, 100),
        after: z.string().max(200).optional().describe('`next` of the previous page'),
      },
      annotations: READ,
    },
    (a) => answer(maxResult, logger, () => plant.tags(a)),
  );
  server.registerTool(
    'read_values',
    {
      description: `The current value, state and time of up to ${MAX_READ_TAGS} tags.`,
      inputSchema: { tags: z.array(tagRef).min(1).max(MAX_READ_TAGS) },
      annotations: READ,
    },
    (a) => answer(maxResult, logger, () => plant.values(a.tags)),
  );
  server.registerTool(
    'read_history',
    {
      description:
        "A tag's recent values from the edge's history (the newest `limit` in the range; the last hour by default).",
      inputSchema: {
        tag: tagRef,
        from: z.string().max(64).optional().describe('ISO 8601 start (default: an hour before `to`)'),
        to: z.string().max(64).optional().describe('ISO 8601 end (default: now)'),
        limit: limit(1000, 100),
      },
      annotations: READ,
    },
    (a) => answer(maxResult, logger, () => plant.history(a)),
  );
  server.registerTool(
    'query_logs',
    {
      description:
        "The edge's log, newest first. Page backwards with `cursor` set to the previous answer's `cursor`.",
      inputSchema: {
        level: z
          .string()
          .max(10)
          .optional()
          .describe('minimum level: trace, debug, info, warn, error, fatal'),
        component: z.string().max(200).optional().describe('exact component, e.g. edge.acquisition'),
        search: z.string().max(200).optional().describe('case-insensitive text of the message'),
        limit: limit(1000, 100),
        cursor: z.string().max(64).optional(),
      },
      annotations: READ,
    },
    (a) => answer(maxResult, logger, () => plant.logs(a)),
  );
  server.registerTool(
    'integration_states',
    {
      description:
        'The integrations (connectors to brokers, databases, clouds): state, last error, counters.',
      annotations: READ,
    },
    () => answer(maxResult, logger, () => plant.integrations()),
  );
}

function registerWriteTool(server: McpServer, o: McpServerOptions): void {
  server.registerTool(
    'write_tag',
    {
      description:
        "Writes a value to a writable tag through its device and answers the device's response. " +
        'Needs the admin or operator role; a viewer is refused.',
      inputSchema: {
        tag: tagRef,
        value: z.union([z.number(), z.string().max(10_000), z.boolean()]).describe('the value to write'),
        timeoutMs: z.number().int().min(1).max(MAX_WRITE_TIMEOUT_MS).optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    (a, extra) =>
      answer(o.maxResult, o.logger, async () => {
        const role = roleOf(extra.authInfo);
        const result = await o.plant.write(role, a.tag, a.value, a.timeoutMs);
        o.logger.info(
          { subject: extra.authInfo?.clientId, role, tag: result.path, success: result.Success },
          'MCP tag write',
        );
        if (!result.Success)
          throw badRequest(
            `the device refused the write to ${result.path}: ${result.Error ?? 'no reason given'}`,
          );
        return result;
      }),
  );
}

function registerResources(server: McpServer, o: McpServerOptions): void {
  server.registerResource(
    'tag-tree',
    'millwright://tags',
    {
      title: 'Tag tree',
      description: 'Every device with its tags (IDs, names, value types)',
      mimeType: 'application/json',
    },
    async (uri) => resource(uri.href, await o.plant.tree(), o.maxResult),
  );
  server.registerResource(
    'device',
    new ResourceTemplate('millwright://devices/{name}', {
      list: async () => {
        const page = await o.plant.devices(TREE_MAX_DEVICES, 0);
        return {
          resources: page.devices.map((d) => ({
            uri: deviceUri(d.name),
            name: d.name,
            description: `${d.driver} device: its tags and their current values`,
            mimeType: 'application/json',
          })),
        };
      },
    }),
    {
      title: 'Device',
      description: 'A device, its tags and their current values',
      mimeType: 'application/json',
    },
    async (uri, vars) => {
      const name = decodeURIComponent(String(vars['name']));
      return resource(uri.href, await o.plant.device(name), o.maxResult);
    },
  );
}
