/**
 * An MCP client (the SDK's own) on an edge's `/mcp` over HTTPS with the edge's self-signed
 * certificate, authenticated by a bearer token as any assistant would be.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { fetch as undiciFetch } from 'undici';
import { insecureAgent } from './edge.js';

/** `fetch` through undici with the agent that accepts the edge's self-signed certificate. */
export const insecureFetch = ((url: string | URL, init?: RequestInit) =>
  undiciFetch(url, { ...(init as object), dispatcher: insecureAgent })) as unknown as typeof fetch;

export async function mcpClient(baseUrl: string, bearer: string, name = 'test-assistant'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${bearer}` } },
    fetch: insecureFetch,
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool; answers its parsed JSON text, or `{ error }` with the text of a tool error. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<{ error?: string; value?: any }> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  if (r.isError) return { error: text };
  return { value: JSON.parse(text) };
}
