/**
 * `TestAISuiteMCPServer`: connects to an MCP server, by a stdio command the edge runs or by a
 * streamable HTTP URL, within a deadline, and answers its tools and resources, or the error.
 *
 * A stdio command runs a program on the edge as the edge's user: only an admin may ask for one
 * (docs/security.md). It runs without a shell, with the SDK's short list of inherited environment
 * variables (PATH, HOME, USER...) plus the `Env` given, and is killed at the deadline or when the
 * answer is read. Bounds: the deadline, the stdio read buffer, the tools and resources read, the
 * text kept of each, and the probes running at once.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { badRequest, forbidden, tooManyRequests } from '../../kernel/errors.js';
import type { AuthContext } from '../../kernel/http/auth-types.js';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';

export const MCP_PROBE = {
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 60_000,
  /** Probes running at once on one edge. */
  concurrent: 4,
  maxArgs: 64,
  maxArgBytes: 4096,
  maxEnv: 64,
  maxHeaders: 32,
  maxUrlBytes: 2048,
  /** Tools and resources read from one server (the rest: `Truncated`). */
  maxItems: 500,
  /** Characters kept of a description; bytes of a tool's input schema (larger: null). */
  maxText: 2000,
  maxSchemaBytes: 16_384,
  /** Largest stdio message from the server (the SDK's read buffer). */
  maxMessageBytes: 4 * 1024 * 1024,
  /** Bytes of the server's stderr kept for the error. */
  maxStderr: 4096,
} as const;

export interface KeyValueInput {
  Key: string;
  Value: string;
}

export interface TestAISuiteMCPServerRequest {
  Command?: string | null;
  Args?: string[] | null;
  Env?: KeyValueInput[] | null;
  URL?: string | null;
  Headers?: KeyValueInput[] | null;
  TimeoutMs?: number | null;
}

export interface McpProbeTool {
  Name: string;
  Title: string | null;
  Description: string | null;
  InputSchema: unknown;
}
export interface McpProbeResource {
  URI: string;
  Name: string;
  Description: string | null;
  MimeType: string | null;
}
export interface TestAISuiteMCPServerResponse {
  Success: boolean;
  Error: string | null;
  Transport: 'stdio' | 'http';
  ServerName: string | null;
  ServerVersion: string | null;
  Tools: McpProbeTool[];
  Resources: McpProbeResource[];
  Truncated: boolean;
  DurationMs: number;
}

let running = 0;

const clip = (s: string | undefined | null): string | null =>
  s === undefined || s === null
    ? null
    : s.length > MCP_PROBE.maxText
      ? `${s.slice(0, MCP_PROBE.maxText)}…`
      : s;

function pairs(name: string, list: KeyValueInput[] | null | undefined, max: number): Record<string, string> {
  const out: Record<string, string> = {};
  if (!list) return out;
  if (list.length > max) throw badRequest(`${name}: at most ${max} entries, got ${list.length}`);
  for (const { Key, Value } of list) {
    if (!Key || Key.length > 256 || /[\0=\r\n]/.test(Key))
      throw badRequest(`${name}: bad key ${JSON.stringify(Key)}`);
    if (Value.length > MCP_PROBE.maxArgBytes || /[\0\r\n]/.test(Value))
      throw badRequest(`${name}: the value of ${Key} is too long or holds a line break`);
    out[Key] = Value;
  }
  return out;
}

/** The MCP SDK's client classes, loaded on the first test (the SDK is large; most edges never test). */
interface McpClientSdk {
  Client: typeof Client;
  StdioClientTransport: typeof StdioClientTransport;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
}

async function loadSdk(): Promise<McpClientSdk> {
  const [client, stdio, http] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
  };
}

/** The transport the request asks for, after its checks; throws a 400 or a 403. */
function transportOf(
  input: TestAISuiteMCPServerRequest,
  caller: AuthContext | null,
  sdk: McpClientSdk,
): { kind: 'stdio'; transport: StdioClientTransport } | { kind: 'http'; transport: Transport } {
  const command = input.Command ?? '';
  const url = input.URL ?? '';
  if ((command === '') === (url === ''))
    throw badRequest('give either Command (stdio) or URL (streamable HTTP)');
  if (command !== '') {
    if (caller?.role !== 'admin')
      throw forbidden(
        `the ${caller?.role ?? 'anonymous'} role cannot run a program on the edge: a stdio Command needs the admin role`,
      );
    const args = input.Args ?? [];
    if (command.length > MCP_PROBE.maxArgBytes || command.includes('\0'))
      throw badRequest('Command is too long');
    if (args.length > MCP_PROBE.maxArgs)
      throw badRequest(`Args: at most ${MCP_PROBE.maxArgs}, got ${args.length}`);
    if (args.some((a) => a.length > MCP_PROBE.maxArgBytes || a.includes('\0')))
      throw badRequest(`Args: each at most ${MCP_PROBE.maxArgBytes} characters, no NUL`);
    const env = pairs('Env', input.Env, MCP_PROBE.maxEnv);
    return {
      kind: 'stdio',
      transport: new sdk.StdioClientTransport({
        command,
        args,
        env,
        stderr: 'pipe',
        maxBufferSize: MCP_PROBE.maxMessageBytes,
      }),
    };
  }
  if (input.Args?.length || input.Env?.length) throw badRequest('Args and Env go with Command, not URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest(`URL ${JSON.stringify(url.slice(0, 200))} is not a URL`);
  }
  if (url.length > MCP_PROBE.maxUrlBytes || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:'))
    throw badRequest(`URL must be an http: or https: URL of at most ${MCP_PROBE.maxUrlBytes} characters`);
  const headers = pairs('Headers', input.Headers, MCP_PROBE.maxHeaders);
  return {
    kind: 'http',
    transport: new sdk.StreamableHTTPClientTransport(parsed, { requestInit: { headers } }),
  };
}

function timeoutOf(input: TestAISuiteMCPServerRequest): number {
  const t = input.TimeoutMs ?? MCP_PROBE.defaultTimeoutMs;
  if (!Number.isInteger(t) || t < 100 || t > MCP_PROBE.maxTimeoutMs)
    throw badRequest(`TimeoutMs must be an integer from 100 to ${MCP_PROBE.maxTimeoutMs}, got ${String(t)}`);
  return t;
}

/** Connects, lists, disconnects; a failure of the server (or the deadline) is the answer's Error. */
export async function testMcpServer(
  input: TestAISuiteMCPServerRequest,
  caller: AuthContext | null,
): Promise<TestAISuiteMCPServerResponse> {
  const timeoutMs = timeoutOf(input);
  const sdk = await loadSdk();
  const { kind, transport } = transportOf(input, caller, sdk);
  if (running >= MCP_PROBE.concurrent)
    throw tooManyRequests(
      `at most ${MCP_PROBE.concurrent} MCP server tests run at once: retry when one ends`,
    );
  running++;
  const started = Date.now();
  let stderr = '';
  if (kind === 'stdio') {
    transport.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < MCP_PROBE.maxStderr)
        stderr += chunk.toString('utf8').slice(0, MCP_PROBE.maxStderr - stderr.length);
    });
  }
  const out: TestAISuiteMCPServerResponse = {
    Success: false,
    Error: null,
    Transport: kind,
    ServerName: null,
    ServerVersion: null,
    Tools: [],
    Resources: [],
    Truncated: false,
    DurationMs: 0,
  };
  const client = new sdk.Client({ name: 'millwright-edge', version: MILLWRIGHT_VERSION });
  const signal = AbortSignal.timeout(timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no complete answer within ${timeoutMs} ms (TimeoutMs)`)),
      timeoutMs,
    );
  });
  try {
    await Promise.race([probe(client, transport, out, { signal, timeout: timeoutMs }), deadline]);
    out.Success = true;
  } catch (err) {
    out.Error = errorText(err, kind, signal.aborted ? timeoutMs : null, stderr);
  } finally {
    clearTimeout(timer);
    // Ends the session; a stdio server's process is killed.
    await client.close().catch(() => undefined);
    await transport.close().catch(() => undefined);
    running--;
    out.DurationMs = Date.now() - started;
  }
  return out;
}

/** The error of a failed test, for people: the deadline, an HTTP status, a stdio server's stderr. */
function errorText(err: unknown, kind: 'stdio' | 'http', deadline: number | null, stderr: string): string {
  let message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  if (deadline !== null) message = `no complete answer within ${deadline} ms (TimeoutMs)`;
  else if (kind === 'http' && typeof code === 'number' && code >= 100 && code < 600)
    message = `HTTP ${code}: ${message}`;
  const more = stderr.trim();
  return more ? `${message}; the server's stderr: ${more}` : message;
}

async function probe(
  client: Client,
  transport: Transport,
  out: TestAISuiteMCPServerResponse,
  options: { signal: AbortSignal; timeout: number },
): Promise<void> {
  await client.connect(transport, options);
  const version = client.getServerVersion();
  out.ServerName = clip(version?.name);
  out.ServerVersion = clip(version?.version);
  const caps = client.getServerCapabilities() ?? {};
  let cursor: string | undefined;
  if (caps.tools) {
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, options);
      for (const t of page.tools) {
        if (out.Tools.length >= MCP_PROBE.maxItems) {
          out.Truncated = true;
          break;
        }
        const schema = JSON.stringify(t.inputSchema ?? null);
        out.Tools.push({
          Name: clip(t.name) ?? '',
          Title: clip(t.title ?? t.annotations?.title),
          Description: clip(t.description),
          InputSchema: schema.length <= MCP_PROBE.maxSchemaBytes ? t.inputSchema : null,
        });
      }
      cursor = out.Truncated ? undefined : page.nextCursor;
    } while (cursor);
  }
  if (caps.resources) {
    do {
      const page = await client.listResources(cursor ? { cursor } : {}, options);
      for (const r of page.resources) {
        if (out.Resources.length >= MCP_PROBE.maxItems) {
          out.Truncated = true;
          break;
        }
        out.Resources.push({
          URI: clip(r.uri) ?? '',
          Name: clip(r.name) ?? '',
          Description: clip(r.description),
          MimeType: clip(r.mimeType),
        });
      }
      cursor = out.Resources.length >= MCP_PROBE.maxItems ? undefined : page.nextCursor;
    } while (cursor);
  }
}
