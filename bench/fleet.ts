/**
 * bench/fleet: 1,000 simulated edges speaking the real link protocol from this process (not the
 * manager's), against `millwright manager` as its own process:
 * - connect time for all (activation first, not timed; then TLS + WebSocket + hello + welcome);
 * - manager resident memory per connected edge (RSS after minus before, from /proc);
 * - bridge requests per second through the link (`/api/v1/edge/{p}/{d}/devicehub/version` on a
 *   real `millwright edge` enrolled beside the simulated ones) beside the same request made to
 *   the edge directly (legacy Basic API token), rounds alternating.
 * - one TEMPLATE_APPLY task over the simulated edges (`POST /api/v1/async-task/template-apply`
 *   with their ids): the time from the request to the task's end, every subtask SUCCEEDED and
 *   every edge having received its apply exactly once (the edges answer the configuration calls
 *   from memory, test/helpers/sim-edge.ts; what is measured is the manager's side).
 * Targets: all connected in under 30 s, under 100 KiB per connected edge, bridged throughput at
 * least 50% of direct, the task over 1,000 edges done in under 60 s.
 *
 *   npm run bench -- fleet [--edges 1000] [--duration 10] [--connections 32] [--rounds 2] [--warmup 5]
 *                          [--workers 1] [--short]
 *
 * The HTTPS load (autocannon) runs in `--workers` worker threads (0: in this process, beside the
 * simulated edges). The services run built (`dist/`), as `npm start` runs them.
 *
 * `--short` (for `npm run bench -- summary`): 100 simulated edges, 2 rounds of 4 s after 2 s of
 * warm-up (the connect, memory and task figures are then for 100 edges, not 1,000).
 *
 * `--only direct` or `--only bridged` loads one path only (to profile it, with
 * `MILLWRIGHT_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR"`); no share is printed then.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import autocannon from 'autocannon';
import { cleanEnv, runCliJson, startCli, tempDirs } from '../test/helpers/cli.js';
import { http } from '../test/helpers/edge.js';
import { SimEdge } from '../test/helpers/sim-edge.js';
import { LOCAL_PROVIDER_ID } from '../src/edge/auth/index.js';
import { numArg as arg, reportFigures } from './support.js';

const EDGES = arg('edges', 1000, 100);
const duration = arg('duration', 10, 4);
const connections = arg('connections', 32);
const rounds = arg('rounds', 2);
const warmup = arg('warmup', 5, 2);
const workers = arg('workers', 1);
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;

const dirs = tempDirs('mw-bench-fleet-');
const managerDir = dirs.make();
const edgeDir = dirs.make();
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password' });
const cli = (args: string[]) => runCliJson(args, env);

/** CPU time (user + system) of a process so far, in µs (from /proc: clock ticks of 10 ms). */
const cpuUs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
};

const rssKiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const token = cli(['manager', 'token', 'create', '--data-dir', managerDir, '--name', 'bench'])
  .token as string;
cli(['manager', 'company', 'create', '--data-dir', managerDir, '--name', 'bench']);
const project = cli([
  'manager',
  'project',
  'create',
  '--data-dir',
  managerDir,
  '--company-name',
  'bench',
  '--name',
  'fleet',
]);
const codes = cli([
  'manager',
  'activation-code',
  'create',
  '--data-dir',
  managerDir,
  '--project-id',
  project.id,
  '--count',
  String(Math.min(EDGES + 1, 1000)),
]) as { code: string }[];
while (codes.length < EDGES + 1) {
  codes.push(
    ...cli([
      'manager',
      'activation-code',
      'create',
      '--data-dir',
      managerDir,
      '--project-id',
      project.id,
      '--count',
      '1000',
    ]),
  );
}

const managerProc = await startCli(
  [
    'manager',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--admin-port',
    '0',
    '--data-dir',
    managerDir,
    '--log-level',
    'warn',
    '--max-links',
    '5000',
    '--activation-rate-limit',
    '1000000',
    '--heartbeat-interval',
    '10000',
  ],
  { env, inheritStderr: true, timeoutMs: 60_000 },
);
const managerUrl = managerProc.ready.services.manager!.url;
const edgeProc = await startCli(
  [
    'edge',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--datahub-port',
    '0',
    '--data-dir',
    edgeDir,
    '--log-level',
    'warn',
    '--auth-rate-limit',
    '1000000',
  ],
  { env, inheritStderr: true, timeoutMs: 60_000 },
);
const edgeUrl = edgeProc.ready.services.edge!.url;
const sims: SimEdge[] = [];
try {
  // Activation of the simulated edges (not timed).
  const t0 = Date.now();
  await pool(codes.slice(0, EDGES), 16, async (c) => {
    const sim = new SimEdge();
    await sim.activate(managerUrl, c.code);
    sims.push(sim);
  });
  const activationMs = Date.now() - t0;
  await new Promise((r) => setTimeout(r, 2000));
  const rssBefore = rssKiB(managerProc.pid);

  // Connect all: TLS, upgrade, hello, until the manager's welcome.
  const c0 = Date.now();
  await pool(sims, 100, (sim) => sim.connect());
  const connectMs = Date.now() - c0;
  await new Promise((r) => setTimeout(r, 3000));
  const rssAfter = rssKiB(managerProc.pid);
  const perEdgeKiB = (rssAfter - rssBefore) / EDGES;

  // The real edge, enrolled through the three bootstrap calls.
  const login = await http(`${edgeUrl}/auth/v2/login`, {
    json: { username: 'admin', password: 'bench-admin-password', providerId: LOCAL_PROVIDER_ID },
  });
  let cookie = { cookie: `jwtAccess=${login.body.jwtAccess}` };
  await http(`${edgeUrl}/auth/v2/eula`, {
    method: 'PUT',
    headers: cookie,
    json: { agree: true, version: '1.0' },
  });
  const pw = await http(`${edgeUrl}/auth/v2/password`, {
    method: 'PUT',
    headers: cookie,
    json: { currentPassword: 'bench-admin-password', newPassword: 'bench-new-password' },
  });
  cookie = { cookie: `jwtAccess=${pw.body.jwtAccess}` };
  const tx = (await http(`${edgeUrl}/dm/cloud/url`, { headers: cookie, json: { url: managerUrl } })).body.tx;
  await http(`${edgeUrl}/dm/cloud/url/${tx}/confirm`, { method: 'PUT', headers: cookie });
  const enrolled = await http(`${edgeUrl}/dm/cloud`, { headers: cookie, json: { code: codes[EDGES]!.code } });
  if (enrolled.status !== 200) throw new Error(`enrol: ${enrolled.status} ${enrolled.text}`);
  const deviceId = enrolled.body.deviceId as string;
  for (let i = 0; i < 200; i++) {
    const d = await http(`${managerUrl}/api/v1/device/${deviceId}`, { headers: { 'x-authtoken': token } });
    if (d.body.online) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const apiToken = (
    await http(`${edgeUrl}/auth/v3/api-tokens`, { headers: cookie, json: { name: 'bench', role: 'viewer' } })
  ).body.token;

  const cases: [string, autocannon.Options][] = [
    [
      'direct: GET {edge}/devicehub/version',
      {
        url: `${edgeUrl}/devicehub/version`,
        headers: { authorization: `Basic ${Buffer.from(`${apiToken}:`).toString('base64')}` },
      },
    ],
    [
      'bridged: GET {manager}/api/v1/edge/{p}/{d}/devicehub/version',
      {
        url: `${managerUrl}/api/v1/edge/${project.id}/${deviceId}/devicehub/version`,
        headers: { 'x-authtoken': token },
      },
    ],
  ];
  const loaded = cases.filter(([name]) => !only || name.startsWith(`${only}:`));
  // Each service's CPU with no load (heartbeats, timers, the edge's own work), per second: taken
  // off its CPU per call, which at a few hundred calls per second it would otherwise dominate.
  const i0 = [cpuUs(managerProc.pid), cpuUs(edgeProc.pid), performance.now()] as const;
  await new Promise((r) => setTimeout(r, 3000));
  const idleS = (performance.now() - i0[2]) / 1000;
  const idle = {
    manager: (cpuUs(managerProc.pid) - i0[0]) / idleS,
    edge: (cpuUs(edgeProc.pid) - i0[1]) / idleS,
  };
  const load = async (o: autocannon.Options) => {
    const m0 = cpuUs(managerProc.pid);
    const e0 = cpuUs(edgeProc.pid);
    const t0 = performance.now();
    const r = await autocannon({
      connections,
      duration,
      ...o,
      // The load generator in its own thread: the 1,000 simulated edges share this process's
      // event loop, and their work (heartbeats, TLS, garbage collection of their sockets) would
      // delay its requests, both cases alike (`--workers 0` measures that way).
      ...(workers > 0 ? { workers } : {}),
      tlsOptions: { rejectUnauthorized: false },
    } as autocannon.Options);
    if (r.errors || r.non2xx) throw new Error(`${o.url}: ${r.errors} errors, ${r.non2xx} non-2xx`);
    const n = r.requests.total;
    const s = (performance.now() - t0) / 1000;
    const managerCpu = (cpuUs(managerProc.pid) - m0 - idle.manager * s) / n;
    const edgeCpu = (cpuUs(edgeProc.pid) - e0 - idle.edge * s) / n;
    return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, managerCpu, edgeCpu };
  };
  // Both paths warmed up alike first (JIT, TLS sessions, the bridge's caches), unmeasured.
  for (const [, o] of loaded) await load({ ...o, duration: warmup });
  type Round = { rps: number; p50: number; p99: number; managerCpu: number; edgeCpu: number };
  const results = new Map<string, Round[]>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, o] of loaded) results.set(name, [...(results.get(name) ?? []), await load(o)]);
  }
  const avg = (name: string, k: keyof Round) => {
    const rs = results.get(name) ?? [];
    return rs.length ? rs.reduce((s, r) => s + r[k], 0) / rs.length : NaN;
  };
  const direct = avg(cases[0]![0], 'rps');
  const bridged = avg(cases[1]![0], 'rps');
  // One TEMPLATE_APPLY task over the simulated edges.
  const H = { 'x-authtoken': token };
  const tpl = await http(`${managerUrl}/api/v1/template/create/v2`, {
    headers: H,
    json: {
      friendlyName: 'bench',
      projectId: project.id,
      content: { format: 'millwright.config-template', version: 1, sections: { devicehub: { devices: [] } } },
    },
  });
  if (tpl.status !== 201) throw new Error(`template: ${tpl.status} ${tpl.text}`);
  const a0 = Date.now();
  const started = await http(`${managerUrl}/api/v1/async-task/template-apply`, {
    headers: H,
    json: { templateId: tpl.body.id, deviceIds: sims.map((x) => x.deviceId), deadlineSeconds: 600 },
  });
  if (started.status !== 202) throw new Error(`task: ${started.status} ${started.text}`);
  let task: any;
  for (;;) {
    task = (await http(`${managerUrl}/api/v1/async-task/${started.body.taskId}`, { headers: H })).body;
    if (task.status !== 'RUNNING') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const taskMs = Date.now() - a0;
  const once = sims.filter((x) => [...x.applies.values()].reduce((n, v) => n + v, 0) === 1).length;

  const online = (
    await http(`${managerUrl}/api/v1/system/deployment-info`, { headers: { 'x-authtoken': token } })
  ).body;

  console.log(
    `\nbench/fleet: ${EDGES} simulated edges in this process, manager and edge as their own processes; ` +
      `${rounds} rounds x ${duration} s, ${connections} HTTPS connections (${workers > 0 ? `${workers} worker thread(s)` : 'in process'}); ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}\n`,
  );
  console.log('| measure | value | target |');
  console.log('|---|---:|---|');
  console.log(
    `| activation of ${EDGES} edges (POST /dm/activate, 16 at a time) | ${(activationMs / 1000).toFixed(1)} s | (not a target) |`,
  );
  console.log(
    `| all ${EDGES} linked (TLS + WebSocket + hello + welcome, 100 at a time) | ${(connectMs / 1000).toFixed(1)} s | under 30 s: ${connectMs < 30_000 ? 'met' : 'MISSED'} |`,
  );
  console.log(`| devices online per the manager | ${online.online} of ${online.devices} | |`);
  console.log(
    `| one TEMPLATE_APPLY task over ${EDGES} edges, request to end (${task.status}, ${task.counts.SUCCEEDED ?? 0} subtasks SUCCEEDED, ${once} edges applied exactly once) | ${(taskMs / 1000).toFixed(1)} s | under 60 s: ${taskMs < 60_000 && task.status === 'SUCCEEDED' && once === EDGES ? 'met' : 'MISSED'} |`,
  );
  console.log(
    `| manager RSS before / after linking | ${(rssBefore / 1024).toFixed(0)} / ${(rssAfter / 1024).toFixed(0)} MiB | |`,
  );
  console.log(
    `| manager memory per linked edge | ${perEdgeKiB.toFixed(1)} KiB | under 100 KiB: ${perEdgeKiB < 100 ? 'met' : 'MISSED'} |`,
  );
  console.log('\n| case | requests/s | p50 ms | p99 ms | share of direct |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name] of loaded) {
    console.log(
      `| ${name} | ${avg(name, 'rps').toFixed(0)} | ${avg(name, 'p50').toFixed(1)} | ${avg(name, 'p99').toFixed(1)} | ${only ? '-' : `${((avg(name, 'rps') / direct) * 100).toFixed(1)}%`} |`,
    );
  }
  console.log(
    `\nCPU per call: /proc before and after each round, less each service's CPU with no load (manager ${(idle.manager / 1000).toFixed(1)} ms/s, edge ${(idle.edge / 1000).toFixed(1)} ms/s over 3 s)`,
  );
  console.log('\n| case | manager CPU µs per call | edge CPU µs per call |');
  console.log('|---|---:|---:|');
  for (const [name] of loaded) {
    console.log(`| ${name} | ${avg(name, 'managerCpu').toFixed(1)} | ${avg(name, 'edgeCpu').toFixed(1)} |`);
  }
  for (const [name] of loaded) {
    console.log(
      `${name.split(':')[0]} by round: ${results
        .get(name)!
        .map((r) => r.rps.toFixed(0))
        .join(', ')} req/s`,
    );
  }
  if (!only) {
    console.log(
      `\nbridged / direct: ${((bridged / direct) * 100).toFixed(1)}% (target at least 50%: ${bridged / direct >= 0.5 ? 'met' : 'MISSED'})`,
    );
  }
  reportFigures({ edges: EDGES, directPerSecond: direct, bridgedPerSecond: bridged });
} finally {
  for (const sim of sims) sim.stop();
  await edgeProc.stop();
  await managerProc.stop();
  dirs.removeAll();
}
