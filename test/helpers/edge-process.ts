/**
 * The edge as a `millwright edge` process on a data directory of the test's own, with an admin
 * API-client token: for the tests that kill it (SIGKILL) and start it again on the same data.
 */
import { startCli, cleanEnv, type CliProcess } from './cli.js';
import { bootstrapAdmin, clientToken, graphql, http, ADMIN_PASSWORD, type TestEdge } from './edge.js';

export interface EdgeProcess {
  proc: CliProcess;
  url: string;
  natsUrl: string;
  /** The admin API client's `Authorization` header value. */
  auth: string;
  /** POSTs a GraphQL document to `/cc/v2` and answers `data` (throws on errors). */
  cc(query: string, variables?: Record<string, unknown>): Promise<any>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export async function startEdgeProcess(
  dataDir: string,
  credentials?: { clientId: string; secret: string },
  /** How long the process may take to be ready (longer beside `millwright up` on a loaded machine). */
  timeoutMs = 60_000,
): Promise<EdgeProcess & { credentials: { clientId: string; secret: string } }> {
  const proc = await startCli(
    [
      'edge',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--datahub-host',
      '127.0.0.1',
      '--datahub-port',
      '0',
      '--data-dir',
      dataDir,
      '--log-level',
      'warn',
    ],
    {
      env: cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: ADMIN_PASSWORD }),
      timeoutMs,
    },
  );
  const svc = proc.ready.services.edge;
  if (!svc?.natsUrl) throw new Error(`no edge in the ready line: ${JSON.stringify(proc.ready)}`);
  const url = svc.url.replace('localhost', '127.0.0.1');
  const t = {
    url,
    call: (path: string, o?: Parameters<typeof http>[1]) => http(`${url}${path}`, o),
  } as unknown as TestEdge;
  let creds = credentials;
  if (!creds) {
    const bearer = await bootstrapAdmin(t);
    const c = await clientToken(t, bearer);
    creds = { clientId: c.clientId, secret: c.secret };
  }
  const tok = await t.call('/auth/v3/oauth/token', {
    form: { grant_type: 'client_credentials', client_id: creds.clientId, client_secret: creds.secret },
  });
  if (tok.status !== 200) throw new Error(`token: ${tok.status} ${tok.text}`);
  const auth = `Bearer ${tok.body.access_token}`;
  let dead = false;
  return {
    proc,
    url,
    natsUrl: svc.natsUrl.replace('localhost', '127.0.0.1'),
    auth,
    credentials: creds,
    async cc(query, variables) {
      const r = await graphql(t, '/cc/v2', auth, query, variables);
      if (r.status !== 200 || r.body?.errors) throw new Error(`cc/v2: ${r.status} ${r.text}`);
      return r.body.data;
    },
    async kill() {
      dead = true;
      process.kill(proc.pid, 'SIGKILL');
      await proc.stop();
    },
    async stop() {
      if (!dead) await proc.stop();
    },
  };
}

/**
 * The edge-side steps of an activation, over the edge's own API as its console does them: the
 * manager's address proposed and confirmed, then the activation code.
 */
export async function enrolEdgeProcess(edge: EdgeProcess, managerUrl: string, code: string): Promise<void> {
  const h = { authorization: edge.auth };
  const proposed = await http(`${edge.url}/dm/cloud/url?locale=en-US`, {
    headers: h,
    json: { url: managerUrl },
  });
  if (proposed.status !== 200) throw new Error(`proposing the manager: ${proposed.status} ${proposed.text}`);
  const confirmed = await http(`${edge.url}/dm/cloud/url/${proposed.body.tx}/confirm?locale=en-US`, {
    method: 'PUT',
    headers: h,
  });
  if (confirmed.status !== 200)
    throw new Error(`confirming the manager: ${confirmed.status} ${confirmed.text}`);
  const activated = await http(`${edge.url}/dm/cloud?locale=en-US`, { headers: h, json: { code } });
  if (activated.status >= 300) throw new Error(`activating: ${activated.status} ${activated.text}`);
}
