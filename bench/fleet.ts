/**
 * bench/fleet: 1,000 simulated edges speaking the real link protocol from this process (not the
 * manager's), against `millwright manager` as its own process:
 * - connect time for all (activation first, not timed; then TLS + WebSocket + hello + welcome);
 * - manager resident memory per connected edge (RSS after minus before, from /proc);
 * - bridge requests per second through the link (`/api/v1/edge/{p}/{d}/devicehub/version` on a
 *   real `millwright edge` enrolled beside the simulated ones) beside the same request made to
 *   the edge directly (legacy Basic API token);
 * - the floor of that bridge (bench/fleet-floor.mjs, issue 34): a bare Node HTTPS proxy that
 *   forwards each call over one persistent TLS socket to a bare Node answerer of the edge's own
 *   answer, beside the same answerer called directly: the share any Node bridge can reach here;
 * - one TEMPLATE_APPLY task over the simulated edges (`POST /api/v1/async-task/template-apply`
 *   with their ids): the time from the request to the task's end, every subtask SUCCEEDED and
 *   every edge having received its apply exactly once (the edges answer the configuration calls
 *   from memory, test/helpers/sim-edge.ts; what is measured is the manager's side).
 * Targets: all connected in under 30 s, under 100 KiB per connected edge, bridged throughput at
 * least 80% of direct (issue 34), the task over 1,000 edges done in under 60 s.
 *
 *   npm run bench -- fleet [--edges 1000] [--duration 10] [--connections 32] [--rounds 3] [--warmup 5]
 *                          [--workers 1] [--no-floor] [--short]
 *
 * The cases run in rounds, one window of each case per round, every other round in the reverse
 * order (ABBA). Each figure is the median over the rounds, and a share is the median of the
 * rounds' own shares (windows seconds apart, not minutes: on this virtual machine the speed of
 * the processor moves from one window to the next under load, and every process's CPU per call with it). Beside each
 * case: CPU µs per call of every process (/proc, less its idle rate), and per round the CPU the
 * rest of the machine used and a speed probe (CPU ns per step of a fixed loop in this process).
 *
 * The HTTPS load (autocannon) runs in `--workers` worker threads (0: in this process, beside the
 * simulated edges). The services run built (`dist/`), as `npm start` runs them.
 *
 * `--short` (for `npm run bench -- summary`): 100 simulated edges, 5 rounds of 3 s after 2 s of
 * warm-up per case (the connect, memory and task figures are then for 100 edges, not 1,000).
 *
 * `--only direct` or `--only bridged` loads one path only (to profile it, with
 * `MILLWRIGHT_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR"`), without the floor; no share
 * is printed then.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { cpus } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { cleanEnv, runCliJson, startCli, tempDirs } from '../test/helpers/cli.js';
import { http } from '../test/helpers/edge.js';
import { SimEdge } from '../test/helpers/sim-edge.js';
import { LOCAL_PROVIDER_ID } from '../src/edge/auth/index.js';
import { selfSignedCertificate } from '../src/kernel/http/self-signed.js';
import { numArg as arg, reportFigures } from './support.js';

const EDGES = arg('edges', 1000, 100);
const duration = arg('duration', 10, 3);
const connections = arg('connections', 32);
const rounds = arg('rounds', 3, 5);
const warmup = arg('warmup', 5, 2);
const workers = arg('workers', 1);
const noFloor = process.argv.includes('--no-floor');
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

type Case = { key: string; name: string; opts: autocannon.Options };
/** One window of one case: throughput, latency, and CPU µs per call of each process. */
type Snap = { t: number; cpu: Record<string, number>; machine: { busy: number; steal: number } };
type Round = {
  rps: number;
  p50: number;
  p99: number;
  cpu: Record<string, number>;
  othersMsPerS: number;
  probeNs: number;
};

/**
 * The machine's speed as this process sees it: CPU ns per step of a fixed integer loop (about
 * 5 ms). On a virtual machine the host's clock and its other tenants move it, and with it every
 * process's CPU per call; scheduling waits do not (CPU time, not wall time).
 */
const probe = () => {
  const t = process.cpuUsage();
  let x = 1;
  for (let i = 0; i < 2_000_000; i++) x = (x * 31 + i) | 0;
  const d = process.cpuUsage(t);
  return x === 0 ? NaN : ((d.user + d.system) * 1000) / 2_000_000;
};

/** Busy and steal time of the whole machine so far, in µs (/proc/stat, ticks of 10 ms). */
const machineUs = () => {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return { busy: (f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!) * 10_000, steal: f[7]! * 10_000 };
};

/**
 * CPU time of each process of the bench (this one, `client`: the load generator and the
 * simulated edges; the services; the floor's two) over a window, less each one's idle rate, per
 * call; and what the rest of the machine used meanwhile (`othersMsPerS`: other jobs, steal).
 */
class Meter {
  readonly #pids: Record<string, number>;
  #idle: Record<string, number> = {};
  idleOthersMsPerS = 0;
  constructor(pids: Record<string, number>) {
    this.#pids = pids;
  }
  #snap(): Snap {
    const cpu: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.#pids)) cpu[name] = cpuUs(pid);
    const own = process.cpuUsage();
    cpu.client = own.user + own.system;
    return { t: performance.now(), cpu, machine: machineUs() };
  }
  #delta(a: Snap) {
    const b = this.#snap();
    const s = (b.t - a.t) / 1000;
    const cpu: Record<string, number> = {};
    let ours = 0;
    for (const k in b.cpu) {
      cpu[k] = b.cpu[k]! - a.cpu[k]!;
      ours += cpu[k]!;
    }
    return { s, cpu, othersMsPerS: (b.machine.busy - a.machine.busy - ours) / s / 1000 };
  }
  async idle(ms: number): Promise<void> {
    const a = this.#snap();
    await new Promise((r) => setTimeout(r, ms));
    const d = this.#delta(a);
    for (const k in d.cpu) this.#idle[k] = d.cpu[k]! / d.s;
    this.idleOthersMsPerS = d.othersMsPerS;
  }
  idleMsPerS(): Record<string, number> {
    return Object.fromEntries(Object.entries(this.#idle).map(([k, v]) => [k, v / 1000]));
  }
  start(): { perCall(n: number): { cpu: Record<string, number>; othersMsPerS: number; probeNs: number } } {
    const p0 = probe();
    const a = this.#snap();
    return {
      perCall: (n) => {
        const d = this.#delta(a);
        const probeNs = (p0 + probe()) / 2;
        const cpu: Record<string, number> = {};
        for (const k in d.cpu) cpu[k] = (d.cpu[k]! - (this.#idle[k] ?? 0) * d.s) / n;
        return { cpu, othersMsPerS: d.othersMsPerS, probeNs };
      },
    };
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * The floor's two bare Node processes (bench/fleet-floor.mjs), serving the edge's own answer to
 * `GET /devicehub/version` (fetched here once): the answerer, and the proxy linked to it.
 */
async function startFloor(
  edgeUrl: string,
  apiToken: string,
  projectId: string,
  deviceId: string,
  token: string,
) {
  const authorization = `Basic ${Buffer.from(`${apiToken}:`).toString('base64')}`;
  const sample = await new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const req = httpsRequest(`${edgeUrl}/devicehub/version`, {
        headers: { authorization },
        rejectUnauthorized: false,
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      });
      req.on('error', reject);
      req.end();
    },
  );
  const headers = { ...sample.headers };
  for (const k of ['date', 'connection', 'keep-alive', 'transfer-encoding']) delete headers[k];
  const pems = selfSignedCertificate({
    commonName: 'localhost',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  const prefix = `/api/v1/edge/${projectId}/${deviceId}`;
  const configFile = join(dirs.make(), 'floor.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      key: pems.private,
      cert: pems.cert,
      authorization,
      token,
      prefix,
      answer: { status: sample.status, headers, body: sample.body.toString('base64') },
    }),
  );
  const script = join(import.meta.dirname, 'fleet-floor.mjs');
  const start = (...args: string[]) =>
    new Promise<{ child: ChildProcess; port: number; linkPort: number }>((resolve, reject) => {
      const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
      floorChildren.push(child);
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        const m = /floor-ready (\{.*\})\n/.exec(out);
        if (m) resolve({ child, ...JSON.parse(m[1]!) });
      });
      child.on('exit', (code) => reject(new Error(`floor ${args[0]} exited ${code}`)));
    });
  const answerer = await start('answerer', configFile);
  const proxy = await start('proxy', configFile, String(answerer.linkPort));
  const cases: Case[] = [
    {
      key: 'floor-direct',
      name: 'floor, direct: GET {bare answerer}/devicehub/version',
      opts: { url: `https://127.0.0.1:${answerer.port}/devicehub/version`, headers: { authorization } },
    },
    {
      key: 'floor-bridged',
      name: 'floor, bridged: GET {bare proxy}/api/v1/edge/{p}/{d}/devicehub/version',
      opts: {
        url: `https://127.0.0.1:${proxy.port}${prefix}/devicehub/version`,
        headers: { 'x-authtoken': token },
      },
    },
  ];
  return { cases, pids: { answerer: answerer.child.pid!, proxy: proxy.child.pid! } };
}
const floorChildren: ChildProcess[] = [];

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '-');

/**
 * The loads' tables: each case's median over its rounds (throughput, latency, CPU per call of
 * each process), each round, and the shares: bridged / direct and the floor's, each the median
 * of the rounds' own shares (a round's cases run back to back, so a share compares windows
 * seconds apart, not minutes). Returns the figures for `reportFigures`.
 */
function report(loaded: Case[], results: Map<string, Round[]>, meter: Meter): Record<string, number> {
  const med = (key: string, f: (r: Round) => number) => median((results.get(key) ?? []).map(f));
  const procs = Object.keys(meter.idleMsPerS());
  console.log(
    `\n| case | requests/s (median; least, most) | p50 ms | p99 ms | ${procs.map((p) => `${p} µs/call`).join(' | ')} |`,
  );
  console.log(`|---|---:|---:|---:|${procs.map(() => '---:').join('|')}|`);
  for (const c of loaded) {
    const rs = results.get(c.key)!.map((r) => r.rps);
    console.log(
      `| ${c.name} | ${fmt(median(rs), 0)} (${fmt(Math.min(...rs), 0)}; ${fmt(Math.max(...rs), 0)}) | ${fmt(med(c.key, (r) => r.p50))} | ${fmt(med(c.key, (r) => r.p99))} | ${procs.map((p) => fmt(med(c.key, (r) => r.cpu[p] ?? NaN))).join(' | ')} |`,
    );
  }
  const idle = meter.idleMsPerS();
  console.log(
    `\nCPU per call: each process's CPU over the round from /proc (client: this process, the load generator and the simulated edges), less its CPU with no load (${procs.map((p) => `${p} ${fmt(idle[p]!)}`).join(', ')} ms/s over 3 s; the rest of the machine ${fmt(meter.idleOthersMsPerS)} ms/s); medians over the rounds.`,
  );
  console.log(
    `\nEach round: req/s (the rest of the machine's CPU during the window, ms/s; the speed probe, ns per step; the busiest service's µs per call):`,
  );
  for (const c of loaded) {
    const rs = results.get(c.key)!;
    const busiest = (r: Round) => Math.max(...procs.filter((p) => p !== 'client').map((p) => r.cpu[p] ?? 0));
    console.log(
      `  ${c.key}: ${rs.map((r) => `${fmt(r.rps, 0)} (${fmt(r.othersMsPerS, 0)}; ${fmt(r.probeNs, 2)}; ${fmt(busiest(r))})`).join(', ')}`,
    );
  }
  const shares = (a: string, b: string) => {
    const x = results.get(a);
    const y = results.get(b);
    return x && y ? x.map((r, i) => y[i]!.rps / r.rps) : [];
  };
  const bridgedShares = shares('direct', 'bridged');
  const floorShares = shares('floor-direct', 'floor-bridged');
  const line = (label: string, xs: number[]) =>
    xs.length &&
    console.log(
      `${label}: ${pct(median(xs))} (median of ${xs.length} rounds; least ${pct(Math.min(...xs))}, most ${pct(Math.max(...xs))}; rounds ${xs.map(pct).join(', ')})`,
    );
  console.log('');
  line('bridged / direct', bridgedShares);
  line('floor: bare proxy / bare answerer', floorShares);
  if (bridgedShares.length) {
    console.log(
      `bridged / direct against the target (at least 80%): ${median(bridgedShares) >= 0.8 ? 'met' : 'MISSED'}`,
    );
  }
  const cpu = (key: string, proc: string) => med(key, (r) => r.cpu[proc] ?? NaN);
  return {
    directPerSecond: med('direct', (r) => r.rps),
    bridgedPerSecond: med('bridged', (r) => r.rps),
    bridgedShare: median(bridgedShares),
    bridgedShareLeast: Math.min(...bridgedShares),
    bridgedShareMost: Math.max(...bridgedShares),
    floorDirectPerSecond: med('floor-direct', (r) => r.rps),
    floorBridgedPerSecond: med('floor-bridged', (r) => r.rps),
    floorShare: median(floorShares),
    managerUsPerBridgedCall: cpu('bridged', 'manager'),
    edgeUsPerBridgedCall: cpu('bridged', 'edge'),
    edgeUsPerDirectCall: cpu('direct', 'edge'),
    proxyUsPerFloorCall: cpu('floor-bridged', 'proxy'),
    answererUsPerFloorBridgedCall: cpu('floor-bridged', 'answerer'),
    answererUsPerFloorDirectCall: cpu('floor-direct', 'answerer'),
    clientUsPerDirectCall: cpu('direct', 'client'),
    clientUsPerBridgedCall: cpu('bridged', 'client'),
  };
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

  // The floor (bench/fleet-floor.mjs): a bare Node answerer serving the edge's very answer, and a
  // bare Node proxy forwarding each call over one persistent TLS socket to it.
  const floor = noFloor || only ? null : await startFloor(edgeUrl, apiToken, project.id, deviceId, token);
  const cases: Case[] = [
    {
      key: 'direct',
      name: 'direct: GET {edge}/devicehub/version',
      opts: {
        url: `${edgeUrl}/devicehub/version`,
        headers: { authorization: `Basic ${Buffer.from(`${apiToken}:`).toString('base64')}` },
      },
    },
    {
      key: 'bridged',
      name: 'bridged: GET {manager}/api/v1/edge/{p}/{d}/devicehub/version',
      opts: {
        url: `${managerUrl}/api/v1/edge/${project.id}/${deviceId}/devicehub/version`,
        headers: { 'x-authtoken': token },
      },
    },
    ...(floor ? floor.cases : []),
  ];
  const loaded = cases.filter((c) => !only || c.key === only);
  const procs: Record<string, number> = {
    manager: managerProc.pid,
    edge: edgeProc.pid,
    ...(floor?.pids ?? {}),
  };
  const meter = new Meter(procs);
  // Each process's CPU with no load (heartbeats, timers, the edge's own work), per second: taken
  // off its CPU per call, which at a few hundred calls per second it would otherwise dominate.
  await meter.idle(3000);
  const load = async (o: autocannon.Options, seconds: number): Promise<Round> => {
    const m = meter.start();
    const r = await autocannon({
      connections,
      duration: seconds,
      ...o,
      // The load generator in its own thread (`--workers 1`) or in this one (`--workers 0`,
      // the default of `--short`: the 100 simulated edges' heartbeats are a few per second).
      ...(workers > 0 ? { workers } : {}),
      tlsOptions: { rejectUnauthorized: false },
    } as autocannon.Options);
    if (r.errors || r.non2xx) throw new Error(`${o.url}: ${r.errors} errors, ${r.non2xx} non-2xx`);
    const n = r.requests.total;
    return {
      rps: n / (r.duration > 0 ? r.duration : seconds),
      p50: r.latency.p50,
      p99: r.latency.p99,
      ...m.perCall(n),
    };
  };
  // Every case warmed up alike first (JIT, TLS sessions, the bridge's caches), unmeasured.
  for (const c of loaded) await load(c.opts, warmup);
  const results = new Map<string, Round[]>(loaded.map((c) => [c.key, []]));
  for (let round = 0; round < rounds; round++) {
    // ABBA: every other round in the reverse order, so that a drift of the machine during a
    // round pair touches each case alike.
    const order = round % 2 ? [...loaded].reverse() : loaded;
    for (const c of order) results.get(c.key)!.push(await load(c.opts, duration));
  }
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
  const figures = report(loaded, results, meter);
  reportFigures({ edges: EDGES, ...figures });
} finally {
  for (const sim of sims) sim.stop();
  for (const child of floorChildren) child.kill();
  await edgeProc.stop();
  await managerProc.stop();
  dirs.removeAll();
}
