/**
 * Starts the real edge manager on ephemeral ports (main and admin console) in a fresh data
 * directory, with a global admin API token, and talks to it over HTTPS as any client would.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { managerConfigWith, type ManagerConfig } from '../../src/manager/service.js';
import { startManager, type ManagerService } from '../../src/manager/service.js';
import { http, type HttpReply, type TestEdge } from './edge.js';
import { TEST_LOG_FORMAT } from './log-format.js';

export interface TestManager {
  manager: ManagerService;
  url: string;
  adminUrl: string;
  dataDir: string;
  /** A global admin API token. */
  token: string;
  /** A call to the main API with `X-AuthToken` (unless `headers` say otherwise). */
  call: (
    path: string,
    options?: Parameters<typeof http>[1] & { token?: string | null },
  ) => Promise<HttpReply>;
  /** A call to the admin console API with the admin token. */
  admin: (
    path: string,
    options?: Parameters<typeof http>[1] & { token?: string | null },
  ) => Promise<HttpReply>;
  stop(): Promise<void>;
}

export async function startTestManager(overrides: Partial<ManagerConfig> = {}): Promise<TestManager> {
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'mw-manager-'));
  const manager = await startManager(
    managerConfigWith({
      host: '127.0.0.1',
      port: 0,
      adminPort: 0,
      dataDir,
      logLevel: 'warn',
      logFormat: TEST_LOG_FORMAT,
      heartbeatInterval: 300,
      bridgeTimeout: 5000,
      ...overrides,
    }),
  );
  const { token } = await manager.auth.createToken('test-admin', 'admin');
  const with_ =
    (base: string) =>
    (path: string, options: Parameters<typeof http>[1] & { token?: string | null } = {}) => {
      const { token: t, ...rest } = options;
      const auth: Record<string, string> = t === null ? {} : { 'x-authtoken': t ?? token };
      return http(`${base}${path}`, { ...rest, headers: { ...auth, ...rest.headers } });
    };
  return {
    manager,
    url: manager.url,
    adminUrl: manager.adminUrl,
    dataDir,
    token,
    call: with_(manager.url),
    admin: with_(manager.adminUrl),
    async stop() {
      await manager.close();
      if (!overrides.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A company and a project in it, through the API; answers their ids. */
export async function makeProject(m: TestManager, company = 'acme', project = 'plant-1') {
  const c = await m.call('/api/v1/company', { json: { companyName: company } });
  if (c.status !== 201) throw new Error(`company: ${c.status} ${c.text}`);
  const p = await m.call('/api/v1/project', { json: { companyId: c.body.id, name: project } });
  if (p.status !== 201) throw new Error(`project: ${p.status} ${p.text}`);
  return { companyId: c.body.id as string, projectId: p.body.id as string };
}

/** A fresh activation code of a project. */
export async function activationCode(
  m: TestManager,
  projectId: string,
  ttlSeconds?: number,
): Promise<string> {
  const r = await m.call('/api/v1/activation/code', {
    json: { projectId, ...(ttlSeconds ? { ttlSeconds } : {}) },
  });
  if (r.status !== 201) throw new Error(`activation code: ${r.status} ${r.text}`);
  return r.body.code as string;
}

/**
 * Enrols an in-process test edge with the manager as its admin does (propose the manager's URL,
 * confirm it, activate with `code`); answers the device ID the manager gave it.
 */
export async function enrolTestEdge(
  edge: TestEdge,
  m: TestManager,
  cookie: Record<string, string>,
  code: string,
): Promise<string> {
  const proposed = await edge.call('/dm/cloud/url?locale=en-US', { headers: cookie, json: { url: m.url } });
  if (proposed.status !== 200) throw new Error(`propose: ${proposed.status} ${proposed.text}`);
  const confirmed = await edge.call(`/dm/cloud/url/${proposed.body.tx}/confirm?locale=en-US`, {
    method: 'PUT',
    headers: cookie,
  });
  if (confirmed.status !== 200) throw new Error(`confirm: ${confirmed.status} ${confirmed.text}`);
  const activated = await edge.call('/dm/cloud?locale=en-US', { headers: cookie, json: { code } });
  if (activated.status !== 200) throw new Error(`activate: ${activated.status} ${activated.text}`);
  return activated.body.deviceId as string;
}

/** The `name=value` pairs of a reply's Set-Cookie headers. */
export function cookiesOf(reply: HttpReply): Record<string, string> {
  const raw = reply.headers['set-cookie'];
  const out: Record<string, string> = {};
  for (const line of Array.isArray(raw) ? raw : raw ? [raw] : []) {
    const [pair] = line.split(';');
    const eq = pair!.indexOf('=');
    out[pair!.slice(0, eq)] = pair!.slice(eq + 1);
  }
  return out;
}

/**
 * The manager console's whole sign-in (`/console/login`, the realm's form, the callback) as user
 * `admin` with `password`: the session's cookies (`mwmSession`, `mwmCsrfToken`).
 */
export async function consoleSession(m: TestManager, password: string): Promise<Record<string, string>> {
  const start = await http(`${m.url}/console/login`);
  const login = cookiesOf(start).mwmLogin!;
  const authorize = new URL(String(start.headers.location));
  const posted = await http(`${authorize.origin}${authorize.pathname}`, {
    form: { ...Object.fromEntries(authorize.searchParams), username: 'admin', password },
  });
  const done = await http(String(posted.headers.location), { headers: { cookie: `mwmLogin=${login}` } });
  const cookies = cookiesOf(done);
  if (!cookies.mwmSession || !cookies.mwmCsrfToken) throw new Error(`no console session: ${done.status}`);
  return cookies;
}
