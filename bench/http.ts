/**
 * bench/http: requests per second and latency of an authenticated `GET /devicehub/version`
 * (Bearer access token, and the legacy Basic API token) against the same server's
 * unauthenticated `GET /health` (the ceiling), and OAuth token issuance per second.
 *
 * The edge runs as its own process (`millwright edge`, HTTPS, the self-signed certificate); the
 * load comes from autocannon in this process over keep-alive connections. Rounds alternate
 * (ceiling, authenticated, ceiling, authenticated...) so that drift of the machine hits both.
 *
 *   npm run bench -- http [--duration 10] [--connections 32] [--rounds 2]
 */
import { runCliJson, startCli } from '../test/helpers/cli.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { EdgeClient } from '../src/client/index.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const duration = arg('duration', 10);
const connections = arg('connections', 32);
const rounds = arg('rounds', 2);
const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-http-'));
const env = {
  ...process.env,
  MILLWRIGHT_EDGE_DATA_DIR: dataDir,
  MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
};

const cli = (args: string[]) => runCliJson(args, env);

async function startEdge(): Promise<{ url: string; stop: () => Promise<unknown> }> {
  const edge = await startCli(
    [
      'edge',
      '--port',
      '0',
      '--datahub-port',
      '0',
      '--host',
      '127.0.0.1',
      '--log-level',
      'warn',
      '--auth-rate-limit',
      '1000000',
    ],
    { env, inheritStderr: true },
  );
  return { url: edge.ready.services.edge!.url, stop: edge.stop };
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function load(opts: autocannon.Options): Promise<Result> {
  const r = await autocannon({
    connections,
    duration,
    ...opts,
    tlsOptions: { rejectUnauthorized: false },
  } as autocannon.Options);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
  };
}

const client = cli(['edge', 'api-client', 'create', '--name', 'bench']);
const apiToken = cli(['edge', 'api-token', 'create', '--name', 'bench-legacy']);
const edge = await startEdge();
try {
  const tokenBody = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: client.client_id,
    client_secret: client.client_secret,
  }).toString();
  const edgeClient = new EdgeClient({
    url: edge.url,
    credentials: { clientId: client.client_id, clientSecret: client.client_secret },
    insecure: true,
  });
  const accessToken = await edgeClient.token();
  edgeClient.close();

  const cases: [string, autocannon.Options][] = [
    ['GET /health (no auth, ceiling)', { url: `${edge.url}/health` }],
    [
      'GET /devicehub/version, Bearer access token',
      { url: `${edge.url}/devicehub/version`, headers: { authorization: `Bearer ${accessToken}` } },
    ],
    [
      'GET /devicehub/version, legacy Basic API token',
      {
        url: `${edge.url}/devicehub/version`,
        headers: { authorization: `Basic ${Buffer.from(`${apiToken.token}:`).toString('base64')}` },
      },
    ],
  ];
  const results = new Map<string, Result[]>();
  // Warm-up: JIT and TLS session setup.
  await load({ url: `${edge.url}/health`, duration: 2 });
  for (let round = 0; round < rounds; round++) {
    for (const [name, opts] of cases) {
      const r = await load(opts);
      if (r.errors || r.non2xx) throw new Error(`${name}: ${r.errors} errors, ${r.non2xx} non-2xx answers`);
      results.set(name, [...(results.get(name) ?? []), r]);
    }
  }
  const token = await load({
    url: `${edge.url}/auth/v3/oauth/token`,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: tokenBody,
  });
  if (token.errors || token.non2xx)
    throw new Error(`token issuance: ${token.errors} errors, ${token.non2xx} non-2xx`);

  const avg = (rs: Result[], k: keyof Result) => rs.reduce((s, r) => s + r[k], 0) / rs.length;
  const ceiling = avg(results.get(cases[0]![0])!, 'rps');
  console.log(
    `\nbench/http: ${rounds} rounds x ${duration} s per case, ${connections} keep-alive HTTPS connections, ` +
      `${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}\n`,
  );
  console.log('| case | requests/s | p50 ms | p99 ms | share of ceiling |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name] of cases) {
    const rs = results.get(name)!;
    const rps = avg(rs, 'rps');
    console.log(
      `| ${name} | ${Math.round(rps)} | ${avg(rs, 'p50').toFixed(1)} | ${avg(rs, 'p99').toFixed(1)} | ${((rps / ceiling) * 100).toFixed(1)}% |`,
    );
  }
  console.log(
    `| POST /auth/v3/oauth/token (issuance) | ${Math.round(token.rps)} | ${token.p50.toFixed(1)} | ${token.p99.toFixed(1)} | ${((token.rps / ceiling) * 100).toFixed(1)}% |`,
  );
  const authShare = avg(results.get(cases[1]![0])!, 'rps') / ceiling;
  console.log(
    `\ntarget: authenticated throughput >= 80% of the ceiling: ${(authShare * 100).toFixed(1)}% ${authShare >= 0.8 ? 'MET' : 'NOT MET'}`,
  );
} finally {
  await edge.stop();
  setTimeout(() => rmSync(dataDir, { recursive: true, force: true }), 500);
}
