/**
 * The MCP sessions of `/mcp` (streamable HTTP, stateful): one SDK transport and one `McpServer`
 * per session, at most `maxSessions` at once, each closed after `idleMs` without a request, and
 * each bound to the credential that opened it (another caller naming its ID is answered 404, as
 * if it did not exist).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Logger } from 'pino';
import { badRequest, notFound, tooManyRequests } from '../../kernel/errors.js';
import type { AuthContext } from '../../kernel/http/auth-types.js';

export const SESSION_HEADER = 'mcp-session-id';

/**
 * The MCP SDK's server side, loaded by the first `/mcp` request: loading it with the edge cost
 * about a third of a second of every start (docs/performance.md, "The test suite").
 */
let sdk:
  | Promise<
      [
        typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
        typeof import('@modelcontextprotocol/sdk/types.js'),
      ]
    >
  | undefined;
const loadSdk = () =>
  (sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]));

interface Session {
  id: string;
  subject: string;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastSeen: number;
}

export interface McpSessionsOptions {
  maxSessions: number;
  idleMs: number;
  /** A new MCP server for a session (loaded with the SDK at the first session). */
  newServer: () => Promise<McpServer>;
  logger: Logger;
}

export class McpSessions {
  readonly #sessions = new Map<string, Session>();
  /** Sessions being initialized (counted against the bound before they have an ID). */
  #opening = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(private readonly o: McpSessionsOptions) {
    this.#timer = setInterval(() => this.sweep(), Math.min(30_000, Math.max(1000, o.idleMs / 2)));
    this.#timer.unref();
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Hands one HTTP request of `/mcp` to its session's transport (a new one for an initialize). */
  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    caller: AuthContext,
    body: unknown,
    /** Takes the response from the HTTP framework: called once every refusal above is past. */
    hijack: () => void,
  ): Promise<void> {
    const auth: AuthInfo = {
      token: '',
      clientId: caller.subject,
      scopes: [caller.role],
      extra: { role: caller.role },
    };
    const withAuth = Object.assign(req, { auth });
    const header = req.headers[SESSION_HEADER];
    const id = Array.isArray(header) ? header[0] : header;
    if (id !== undefined) {
      const session = this.#sessions.get(id);
      // Another caller's session is not disclosed.
      if (!session || session.subject !== caller.subject)
        throw notFound(`no MCP session "${id}": initialize a new one`);
      session.lastSeen = Date.now();
      hijack();
      await session.transport.handleRequest(withAuth, res, body);
      return;
    }
    const [, { isInitializeRequest }] = await loadSdk();
    if (req.method !== 'POST' || !isInitializeRequest(body))
      throw badRequest(
        `send the ${SESSION_HEADER} header of an initialized session, or an initialize request`,
      );
    if (this.#sessions.size + this.#opening >= this.o.maxSessions)
      throw tooManyRequests(
        `at most ${this.o.maxSessions} MCP sessions are open (--mcp-max-sessions): close one (DELETE /mcp) or wait for an idle one to expire`,
      );
    hijack();
    await this.#open(withAuth, res, caller, body);
  }

  async #open(
    req: IncomingMessage & { auth: AuthInfo },
    res: ServerResponse,
    caller: AuthContext,
    body: unknown,
  ): Promise<void> {
    // Counted before the first await, so that concurrent initializes cannot pass the bound.
    this.#opening++;
    let opened = false;
    let server: McpServer | undefined;
    try {
      server = await this.o.newServer();
      const [{ StreamableHTTPServerTransport }] = await loadSdk();
      const session = server;
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          opened = true;
          this.#opening--;
          this.#sessions.set(sid, {
            id: sid,
            subject: caller.subject,
            transport,
            server: session,
            lastSeen: Date.now(),
          });
          this.o.logger.info(
            { session: sid, subject: caller.subject, role: caller.role },
            'MCP session opened',
          );
        },
      });
      transport.onclose = () => {
        const sid = transport.sessionId;
        if (sid && this.#sessions.delete(sid)) this.o.logger.info({ session: sid }, 'MCP session closed');
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      if (!opened) {
        this.#opening--;
        await server?.close().catch(() => undefined);
      }
    }
  }

  /** Closes the sessions idle for longer than the bound. */
  sweep(now = Date.now()): void {
    for (const s of [...this.#sessions.values()]) {
      if (now - s.lastSeen > this.o.idleMs) {
        this.o.logger.info({ session: s.id }, 'MCP session idle: closed');
        this.#sessions.delete(s.id);
        void s.server.close().catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    const all = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.all(all.map((s) => s.server.close().catch(() => undefined)));
  }
}
