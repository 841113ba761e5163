/**
 * A real `millwright edge` process (the built CLI) with an admin and a viewer API client, for
 * the tests that watch the process from outside while user expressions and scripts run in it:
 * its resident memory (/proc/<pid>/status), how fast it answers a probe request, and GraphQL over
 * HTTPS and over graphql-transport-ws WebSockets.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { basic, http } from './edge.js';
import { cleanEnv, startCli, tempDirs, type CliProcess } from './cli.js';
import { LOCAL_PROVIDER_ID } from '../../src/edge/auth/index.js';

export interface LiveEdge {
  p: CliProcess;
  url: string;
  admin: string;
  viewer: string;
  /** POSTs a GraphQL request to `path` as `auth`; answers the parsed body. */
  gql(path: string, auth: string, query: string, variables?: Record<string, unknown>): Promise<any>;
  /** One probe request (`GET /devicehub/version`): its round-trip time, ms. */
  probe(): Promise<number>;
  rss(): number;
  /**
   * The longest stretch the edge's main thread ran without yielding since its ready line, ms
   * (`millwright_main_thread_blocked_max_seconds`: its own CPU time, not a loaded machine's delays).
   */
  blockedMs(): Promise<number>;
  stop(): Promise<void>;
}

export async function startLiveEdge(extraArgs: string[] = []): Promise<LiveEdge> {
  const dirs = tempDirs('mw-live-edge-');
  const dir = dirs.make();
  const p = await startCli(
    ['edge', '--port', '0', '--datahub-port', '0', '--host', '127.0.0.1', '--data-dir', dir, ...extraArgs],
    // A loaded machine (tests of other files at once) can take long to start a process.
    { env: cleanEnv(), timeoutMs: 120_000 },
  );
  const url = p.ready.services.edge!.url;
  const tokenOf = async (c: { client_id: string; client_secret: string }) => {
    const tok = await http(`${url}/auth/v3/oauth/token`, {
      headers: { authorization: basic(c.client_id, c.client_secret) },
      form: { grant_type: 'client_credentials' },
    });
    assert.equal(tok.status, 200, tok.text);
    return `Bearer ${tok.body.access_token}`;
  };
  // The first-run bootstrap through the API (login, EULA, a password of the admin's own), then
  // both API clients: a CLI process (`edge api-client create`) costs seconds of CPU loading the
  // services.
  const first = await http(`${url}/auth/v2/login`, {
    json: {
      username: 'admin',
      password: p.ready.services.edge!.firstRun!.password!,
      providerId: LOCAL_PROVIDER_ID,
    },
  });
  assert.equal(first.status, 200, first.text);
  const cookie = (jwt: string) => ({ cookie: `jwtAccess=${jwt}` });
  const eula = await http(`${url}/auth/v2/eula`, {
    method: 'PUT',
    headers: cookie(first.body.jwtAccess),
    json: { agree: true, version: '1.0' },
  });
  assert.equal(eula.status, 204, eula.text);
  const own = await http(`${url}/auth/v2/password?locale=en-US`, {
    method: 'PUT',
    headers: cookie(first.body.jwtAccess),
    json: {
      currentPassword: p.ready.services.edge!.firstRun!.password!,
      newPassword: 'live-edge-admin-password',
    },
  });
  assert.equal(own.status, 200, own.text);
  const adminClient = await http(`${url}/auth/v3/api-clients`, {
    headers: cookie(own.body.jwtAccess),
    json: { name: 'admin', role: 'admin' },
  });
  assert.equal(adminClient.status, 201, adminClient.text);
  const admin = await tokenOf(adminClient.body);
  const viewerClient = await http(`${url}/auth/v3/api-clients`, {
    headers: { authorization: admin },
    json: { name: 'viewer', role: 'viewer' },
  });
  assert.equal(viewerClient.status, 201, viewerClient.text);
  const viewer = await tokenOf(viewerClient.body);
  return {
    p,
    url,
    admin,
    viewer,
    async gql(path, auth, query, variables) {
      const r = await http(`${url}${path}`, { headers: { authorization: auth }, json: { query, variables } });
      assert.equal(r.status, 200, r.text);
      return r.body;
    },
    async probe() {
      const began = performance.now();
      const r = await http(`${url}/devicehub/version`, { headers: { authorization: admin } });
      assert.ok(r.status < 500, r.text);
      return performance.now() - began;
    },
    async blockedMs() {
      const r = await http(`${url}/devicehub/metrics`, { headers: { authorization: admin } });
      assert.equal(r.status, 200, r.text);
      const m = /^millwright_main_thread_blocked_max_seconds\{since="ready"\} (\S+)$/m.exec(r.text);
      assert.ok(m, 'the blocked-stretch metric is exposed');
      return Number(m[1]) * 1000;
    },
    rss() {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'));
      if (!m) throw new Error(`no VmRSS for ${p.pid}`);
      return Number(m[1]) * 1024;
    },
    async stop() {
      await p.stop();
      dirs.removeAll();
    },
  };
}

export interface WsClient {
  ws: WebSocket;
  next(ms?: number): Promise<any>;
  send(m: unknown): void;
}

/** A graphql-transport-ws client on `path`, acknowledged. */
export async function wsClient(e: LiveEdge, path: string, auth: string): Promise<WsClient> {
  const ws = new WebSocket(`${e.url.replace(/^https/, 'wss')}${path}`, 'graphql-transport-ws', {
    headers: { authorization: auth },
    rejectUnauthorized: false,
  });
  const queue: any[] = [];
  const waiters: ((m: any) => void)[] = [];
  ws.on('message', (data) => {
    const m = JSON.parse(String(data));
    const w = waiters.shift();
    if (w) w(m);
    else queue.push(m);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = (ms = 10_000): Promise<any> =>
    queue.length > 0
      ? Promise.resolve(queue.shift())
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no WebSocket message within ${ms} ms`)), ms);
          waiters.push((m) => {
            clearTimeout(timer);
            resolve(m);
          });
        });
  const send = (m: unknown) => ws.send(JSON.stringify(m));
  send({ type: 'connection_init', payload: {} });
  assert.equal((await next()).type, 'connection_ack');
  return { ws, next, send };
}

/**
 * Runs `work` while probing the edge back to back; answers `work`'s result, how long it took,
 * and the probes' round-trip times (at least one probe is made).
 */
export async function whileProbing<T>(
  e: LiveEdge,
  work: () => Promise<T>,
): Promise<{ result: T; ms: number; probes: number[] }> {
  const probes: number[] = [];
  let done = false;
  const loop = (async () => {
    do {
      probes.push(await e.probe());
      await new Promise((r) => setTimeout(r, 10));
    } while (!done);
  })();
  const began = performance.now();
  try {
    const result = await work();
    return { result, ms: performance.now() - began, probes };
  } finally {
    done = true;
    await loop;
  }
}
