/**
 * Starts the real edge service on an ephemeral port in a fresh data directory, and talks to it
 * over HTTPS with an ordinary HTTP client (undici), as any user would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { edgeConfigWith, type EdgeConfig } from '../../src/edge/service.js';
import { startEdge, type EdgeService } from '../../src/edge/service.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';
import { EdgeClient } from '../../src/client/index.js';
import { TEST_LOG_FORMAT } from './log-format.js';

export const ADMIN_PASSWORD = 'first-run-password';

/** An HTTPS agent that accepts the edge's self-signed certificate, as every known client does. */
export const insecureAgent = new Agent({ connect: { rejectUnauthorized: false } });

export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

export async function http(
  url: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    json?: unknown;
    form?: Record<string, string>;
    /** A raw body (with its content type in `headers`). */
    body?: string | Buffer;
  } = {},
): Promise<HttpReply> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  }
  const res = await request(url, {
    method: (options.method ?? (body !== undefined ? 'POST' : 'GET')) as 'GET',
    headers,
    body,
    dispatcher: insecureAgent,
  });
  const text = await res.body.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body: parsed, text };
}

export interface TestEdge {
  edge: EdgeService;
  url: string;
  dataDir: string;
  /** `fetch`-like helper bound to the edge's address. */
  call: (path: string, options?: Parameters<typeof http>[1]) => Promise<HttpReply>;
  stop(): Promise<void>;
}

export async function startTestEdge(overrides: Partial<EdgeConfig> = {}): Promise<TestEdge> {
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'mw-edge-'));
  const edge = await startEdge(
    edgeConfigWith({
      host: '127.0.0.1',
      port: 0,
      // The real nats-server holds 4222 on this machine: the DataHub gateway takes a free port.
      datahubHost: '127.0.0.1',
      datahubPort: 0,
      dataDir,
      adminPassword: ADMIN_PASSWORD,
      logLevel: 'warn',
      logFormat: TEST_LOG_FORMAT,
      // The OPC UA server's start costs seconds (node-opcua loads its standard address space):
      // off unless a suite asks for it (test/e2e/opcua-*.test.ts).
      opcuaEnabled: false,
      opcuaPort: 0,
      opcuaHost: '127.0.0.1',
      ...overrides,
    }),
  );
  return {
    edge,
    url: edge.url,
    dataDir,
    call: (path, options) => http(`${edge.url}${path}`, options),
    async stop() {
      await edge.close();
      if (!overrides.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Logs in as the admin and completes the first-run bootstrap; answers a usable session token. */
export async function bootstrapAdmin(t: TestEdge, newPassword = 'a-new-admin-password'): Promise<string> {
  const login = await t.call('/auth/v2/login', {
    json: { username: 'admin', password: ADMIN_PASSWORD, providerId: LOCAL_PROVIDER_ID },
  });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  const cookie = { cookie: `jwtAccess=${login.body.jwtAccess}` };
  const eula = await t.call('/auth/v2/eula', {
    method: 'PUT',
    headers: cookie,
    json: { agree: true, version: '1.0' },
  });
  if (eula.status !== 204) throw new Error(`eula failed: ${eula.status} ${eula.text}`);
  const pw = await t.call('/auth/v2/password?locale=en-US', {
    method: 'PUT',
    headers: cookie,
    json: { currentPassword: ADMIN_PASSWORD, newPassword },
  });
  if (pw.status !== 200) throw new Error(`password change failed: ${pw.status} ${pw.text}`);
  return pw.body.jwtAccess as string;
}

/** Creates an API client through the REST API and exchanges it for an access token. */
export async function clientToken(
  t: TestEdge,
  adminBearer: string,
  role: 'admin' | 'viewer' = 'admin',
): Promise<{ clientId: string; secret: string; token: string }> {
  const created = await t.call('/auth/v3/api-clients', {
    headers: { authorization: `Bearer ${adminBearer}` },
    json: { name: `test-${role}`, role },
  });
  if (created.status !== 201) throw new Error(`client create failed: ${created.status} ${created.text}`);
  const client = new EdgeClient({
    url: t.url,
    credentials: { clientId: created.body.client_id, clientSecret: created.body.client_secret },
    insecure: true,
  });
  try {
    return {
      clientId: created.body.client_id,
      secret: created.body.client_secret,
      token: await client.token(),
    };
  } finally {
    client.close();
  }
}

export const basic = (user: string, pass = '') =>
  `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** EdgeClient per edge address (no credentials of its own: each call gives its header). */
const clients = new Map<string, EdgeClient>();

/**
 * POSTs a GraphQL request to `path` (e.g. `/devicehub/v2`) with the given Authorization header,
 * through EdgeClient; answers whatever the edge answered.
 */
export async function graphql(
  t: { url: string },
  path: string,
  authorization: string,
  query: string,
  variables?: Record<string, unknown>,
  operationName?: string,
): Promise<HttpReply> {
  let client = clients.get(t.url);
  if (!client) clients.set(t.url, (client = new EdgeClient({ url: t.url, insecure: true })));
  return client.graphqlRaw(path, query, variables, {
    headers: { authorization },
    ...(operationName ? { operationName } : {}),
  });
}
