/**
 * bench/audit: the cost of the manager's audit trail on a mutating call. Two `millwright manager`
 * processes, one as deployed (the audit trail on: each change and its hash-chained record in one
 * transaction) and one with `--audit-trail false`, each on its own store, take the same load:
 * `POST /api/v1/company` with a new name per request (a create: the validation, the uniqueness
 * check, one insert), over keep-alive HTTPS connections from autocannon in this process. Rounds
 * alternate (on, off, on, off...) after a warm-up of each, so that drift of the machine hits both.
 * Target (issue 27): with the trail on, at least 90% of the throughput with it off.
 *
 * Afterwards the trail of the first manager holds exactly one record per created company, and the
 * chain verifies; the second holds none. On SQLite the bench then measures the floor
 * (bench/audit-floor.ts: what SQLite alone charges for the record) and the ratio it caps.
 *
 *   npm run bench -- audit [--db sqlite|postgres] [--duration 10] [--connections 16] [--rounds 2]
 *                          [--warmup 3]
 *
 * `--db postgres` puts each manager on a fresh PostgreSQL database (MILLWRIGHT_TEST_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres), dropped at the end. The services run built
 * (`dist/`), as `npm start` runs them.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../test/helpers/cli.js';
import { http } from '../test/helpers/edge.js';
import { pgTestDatabase, type PgTestDatabase } from '../test/helpers/postgres.js';
import { floorReport, measureFloor } from './audit-floor.js';
import { reportFigures, type Figures } from './support.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const duration = Number(arg('duration', '10'));
const connections = Number(arg('connections', '16'));
const rounds = Number(arg('rounds', '2'));
const warmup = Number(arg('warmup', '3'));
const dialect = arg('db', 'sqlite');
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('--db is sqlite or postgres');

const dirs = tempDirs('mw-bench-audit-');
const env = cleanEnv();

interface Manager {
  name: string;
  proc: CliProcess;
  url: string;
  adminUrl: string;
  token: string;
  pg: PgTestDatabase | null;
}

async function startManager(name: string, auditTrail: boolean): Promise<Manager> {
  const dataDir = dirs.make();
  const pg = dialect === 'postgres' ? await pgTestDatabase() : null;
  if (dialect === 'postgres' && !pg) throw new Error('PostgreSQL is not reachable');
  const store = ['--data-dir', dataDir, ...(pg ? ['--database-url', pg.url] : [])];
  const proc = await startCli(
    [
      'manager',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--admin-port',
      '0',
      '--log-level',
      'warn',
      '--audit-trail',
      String(auditTrail),
      ...store,
    ],
    { env, inheritStderr: true, timeoutMs: 60_000 },
  );
  const token = runCliJson(['manager', 'token', 'create', '--name', 'bench', ...store], env).token as string;
  const m = proc.ready.services.manager!;
  return { name, proc, url: m.url, adminUrl: m.adminUrl!, token, pg };
}

/** CPU time (user + system, µs) the process has used so far (`/proc/<pid>/stat`, clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

let serial = 0;
async function load(m: Manager, seconds: number) {
  const cpu0 = cpuMicros(m.proc.pid);
  const r = await autocannon({
    url: m.url,
    connections,
    duration: seconds,
    tlsOptions: { rejectUnauthorized: false },
    requests: [
      {
        method: 'POST',
        path: '/api/v1/company',
        headers: { 'content-type': 'application/json', 'x-authtoken': m.token },
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({ companyName: `bench-${m.name}-${++serial}` }),
        }),
      },
    ],
  } as autocannon.Options);
  if (r.errors > 0 || r.non2xx > 0) throw new Error(`${m.name}: ${r.errors} errors, ${r.non2xx} non-2xx`);
  // The manager's CPU per request: steadier than the throughput on a loaded machine.
  const cpu = (cpuMicros(m.proc.pid) - cpu0) / Math.max(1, r.requests.total);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, done: r.requests.total, cpu };
}

const on = await startManager('on', true);
const off = await startManager('off', false);
const load0 = loadavg()[0]!;
try {
  await load(on, warmup);
  await load(off, warmup);
  const results = {
    on: [] as Awaited<ReturnType<typeof load>>[],
    off: [] as Awaited<ReturnType<typeof load>>[],
  };
  for (let i = 0; i < rounds; i++) {
    results.on.push(await load(on, duration));
    results.off.push(await load(off, duration));
  }
  const load1 = loadavg()[0]!;
  const avg = (xs: { rps: number }[]) => xs.reduce((a, x) => a + x.rps, 0) / xs.length;
  const share = avg(results.on) / avg(results.off);
  const row = (label: string, xs: Awaited<ReturnType<typeof load>>[]) =>
    `| ${label.padEnd(38)} | ${xs
      .map((x) => x.rps.toFixed(0))
      .join(', ')
      .padEnd(
        14,
      )} | ${avg(xs).toFixed(0).padStart(10)} | ${(xs.reduce((a, x) => a + x.p50, 0) / xs.length).toFixed(1).padStart(6)} | ${(xs.reduce((a, x) => a + x.p99, 0) / xs.length).toFixed(1).padStart(6)} | ${(xs.reduce((a, x) => a + x.cpu, 0) / xs.length).toFixed(0).padStart(12)} |`;
  console.log(
    `\nPOST /api/v1/company on ${dialect}, ${connections} connections, ${rounds} x ${duration} s per case; load average ${load0.toFixed(2)} at start, ${load1.toFixed(2)} at end\n`,
  );
  console.log(
    '| case                                   | rounds (req/s) | mean req/s | p50 ms | p99 ms | CPU µs / req |',
  );
  console.log(
    '| -------------------------------------- | -------------- | ---------- | ------ | ------ | ------------ |',
  );
  console.log(row('audit trail off (--audit-trail false)', results.off));
  console.log(row('audit trail on (as deployed)', results.on));
  const cpuShare = results.off.reduce((a, x) => a + x.cpu, 0) / results.on.reduce((a, x) => a + x.cpu, 0);
  console.log(`\nwith the trail on: ${(share * 100).toFixed(1)}% of the throughput with it off (target 90%)`);
  console.log(
    `the manager's CPU per request, off / on: ${(cpuShare * 100).toFixed(1)}% (the throughput a CPU-bound manager would keep)`,
  );
  // The floor (bench/audit-floor): what SQLite alone charges for the record, at this run's load,
  // beside the trail-off manager's CPU per request of this run.
  const offCpu = results.off.reduce((a, x) => a + x.cpu, 0) / results.off.length;
  const floor = dialect === 'sqlite' ? measureFloor(3000, 3) : null;
  if (floor) {
    console.log(
      `\nThe floor: SQLite alone (better-sqlite3, the manager's schema and pragmas), this process\n`,
    );
    for (const line of floorReport(floor, offCpu, "this run's trail-off manager")) console.log(line);
  }
  const figures: Figures = {
    offPerSecond: avg(results.off),
    onPerSecond: avg(results.on),
    cpuShare,
    ...(floor ? { floorRecordUs: floor.recordUs, floorCap: offCpu / (offCpu + floor.recordUs) } : {}),
  };

  // The trail holds exactly what was done: one record per company created, the chain intact.
  const created = async (m: Manager) =>
    (await http(`${m.url}/api/v1/company/list/paged?limit=1`, { headers: { 'x-authtoken': m.token } })).body
      .total as number;
  const recorded = async (m: Manager) =>
    (
      await http(`${m.adminUrl}/admin/v1/logs/v2?action=company.create&limit=1`, {
        headers: { 'x-authtoken': m.token },
      })
    ).body.total as number;
  const [cOn, rOn, cOff, rOff] = [
    await created(on),
    await recorded(on),
    await created(off),
    await recorded(off),
  ];
  const verify = (
    await http(`${on.adminUrl}/admin/v1/logs/v2/verify`, { headers: { 'x-authtoken': on.token } })
  ).body;
  console.log(
    `trail on: ${cOn} companies, ${rOn} company.create records, verify ${verify.ok ? 'ok' : 'BROKEN'} (${verify.checked} records); trail off: ${cOff} companies, ${rOff} records`,
  );
  if (cOn !== rOn || rOff !== 0 || !verify.ok) {
    process.exitCode = 1;
    console.error('the audit trail does not match the changes');
  } else reportFigures(figures);
} finally {
  for (const m of [on, off]) {
    await m.proc.stop();
    await m.pg?.drop();
  }
  dirs.removeAll();
}
