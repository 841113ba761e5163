/**
 * bench/edge-logs: 1,000,000 log entries walked in pages through the manager's
 * `POST /api/v1/edge-logs/query`, with the manager's resident memory sampled all along.
 * `millwright manager` and three `millwright edge` processes (built, as `npm start` runs them),
 * all enrolled in one project; edges A and B hold 500,000 entries each in their log stores
 * (written into their data directories before they start, interleaved in time), edge C is
 * stopped (offline: named in every page). The walk asks for `--limit` (1,000) entries a page,
 * filtered by component, from the oldest, until the cursor is null, and checks that the pages
 * are in time order without a repeat or a gap (the count).
 * Baseline: the bytes of every page answered (what a manager that gathered the whole result
 * before answering would hold at least) beside the growth of the manager's RSS during the walk.
 * Target: memory does not follow the entries walked: the manager's peak RSS over the last nine
 * tenths of the walk exceeds its RSS at the first tenth by less than 5% of that baseline. Also
 * printed: the growth over the second half of the walk beside the bytes of that half's pages
 * (what a manager that kept them would grow by).
 *
 *   npm run bench -- edge-logs [--entries 1000000] [--limit 1000]
 */
import { readFileSync } from 'node:fs';
import { LogStore } from '../src/kernel/logging/log-store.js';
import { LOCAL_PROVIDER_ID } from '../src/edge/auth/index.js';
import { cleanEnv, runCliJson, startCli, tempDirs, type CliProcess } from '../test/helpers/cli.js';
import { http } from '../test/helpers/edge.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ENTRIES = arg('entries', 1_000_000);
const LIMIT = arg('limit', 1000);
const PER_EDGE = ENTRIES / 2;

const dirs = tempDirs('mw-bench-edge-logs-');
const managerDir = dirs.make();
const edgeDirs = [dirs.make(), dirs.make(), dirs.make()];
const PASSWORD = 'bench-admin-password';
const env = cleanEnv({ MILLWRIGHT_EDGE_ADMIN_PASSWORD: PASSWORD });
const cli = (args: string[]) => runCliJson(args, env);
const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

// The entries, written before the edges start: A at even milliseconds, B at odd ones.
const base = Date.now() - 2 * 3600_000;
const s0 = Date.now();
for (const [k, dir] of edgeDirs.slice(0, 2).entries()) {
  const store = await LogStore.open({
    dataDir: dir,
    maxEntries: 100_000_000,
    flushIntervalMs: 0,
    retentionIntervalMs: 0,
    batchSize: 5000,
    maxBuffered: 20_000,
  });
  for (let i = 0; i < PER_EDGE; i++) {
    store.append({
      time: base + 2 * i * 0.01 + k * 0.01,
      level: i % 10 === 0 ? 'warn' : 'info',
      component: 'bench.fleet',
      message: `${k === 0 ? 'alpha' : 'beta'} entry ${i} of the edge-logs bench`,
      fields: { i, line: 'press-1' },
    });
    if (i % 5000 === 4999) await store.flush();
  }
  await store.close();
}
const seedMs = Date.now() - s0;

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
  'logs',
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
  '3',
]) as { code: string }[];

const procs: CliProcess[] = [];
const manager = await startCli(
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
  ],
  { env, inheritStderr: true, timeoutMs: 60_000 },
);
procs.push(manager);
const M = manager.ready.services.manager!.url;
const call = (path: string, json?: unknown) =>
  http(`${M}${path}`, { headers: { 'x-authtoken': token }, ...(json ? { json } : {}) });
try {
  const ids: string[] = [];
  for (const [i, dir] of edgeDirs.entries()) {
    const edge = await startCli(
      [
        'edge',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--datahub-port',
        '0',
        '--data-dir',
        dir,
        '--log-level',
        'warn',
        '--log-retention-entries',
        '100000000',
      ],
      { env, inheritStderr: true, timeoutMs: 60_000 },
    );
    procs.push(edge);
    const url = edge.ready.services.edge!.url;
    const login = await http(`${url}/auth/v2/login`, {
      json: { username: 'admin', password: PASSWORD, providerId: LOCAL_PROVIDER_ID },
    });
    const cookie = { cookie: `jwtAccess=${login.body.jwtAccess}` };
    await http(`${url}/auth/v2/eula`, {
      method: 'PUT',
      headers: cookie,
      json: { agree: true, version: '1.0' },
    });
    const pw = await http(`${url}/auth/v2/password?locale=en-US`, {
      method: 'PUT',
      headers: cookie,
      json: { currentPassword: PASSWORD, newPassword: `${PASSWORD}-2` },
    });
    const c = { cookie: `jwtAccess=${pw.body.jwtAccess}` };
    const proposed = await http(`${url}/dm/cloud/url`, { headers: c, json: { url: M } });
    await http(`${url}/dm/cloud/url/${proposed.body.tx}/confirm`, { method: 'PUT', headers: c });
    const a = await http(`${url}/dm/cloud`, { headers: c, json: { code: codes[i]!.code } });
    if (a.status !== 200) throw new Error(`enrolment: ${a.status} ${a.text}`);
    ids.push(a.body.deviceId);
  }
  const online = async (id: string, want: boolean) => {
    for (let t = 0; t < 300; t++) {
      if ((await call(`/api/v1/device/${id}`)).body.online === want) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`device ${id} online=${want} not reached`);
  };
  for (const id of ids) await online(id, true);
  await procs[3]!.stop();
  await online(ids[2]!, false);
  await new Promise((r) => setTimeout(r, 2000));

  const rssBefore = rssMiB(manager.pid);
  let peak = rssBefore;
  let cursor: string | undefined;
  let pages = 0;
  let entries = 0;
  let bytes = 0;
  let last = '';
  let offlineNamed = 0;
  /** RSS once a tenth of the walk is done, and the peak over the other nine tenths. */
  let atTenth = NaN;
  let peakLater = 0;
  /** RSS at half the walk, and the peak over the second half. */
  let atHalf = NaN;
  let peakSecondHalf = 0;
  const w0 = Date.now();
  do {
    const r = await call('/api/v1/edge-logs/query', {
      projectId: project.id,
      component: 'bench.fleet',
      from: new Date(base - 1000).toISOString(),
      limit: LIMIT,
      deadlineMs: 30_000,
      ...(cursor ? { cursor } : {}),
    });
    if (r.status !== 200) throw new Error(`page ${pages}: ${r.status} ${r.text.slice(0, 300)}`);
    pages++;
    bytes += Buffer.byteLength(r.text);
    for (const e of r.body.entries as { timestamp: string }[]) {
      if (e.timestamp <= last) throw new Error(`page ${pages}: out of order at ${e.timestamp}`);
      last = e.timestamp;
    }
    entries += r.body.count;
    if ((r.body.unavailable as { deviceId: string }[]).some((u) => u.deviceId === ids[2])) offlineNamed++;
    cursor = r.body.cursor ?? undefined;
    if (pages % 10 === 0) {
      const rss = rssMiB(manager.pid);
      peak = Math.max(peak, rss);
      if (pages === Math.round(ENTRIES / LIMIT / 10)) atTenth = rss;
      if (pages > ENTRIES / LIMIT / 10) peakLater = Math.max(peakLater, rss);
      if (pages === Math.round(ENTRIES / LIMIT / 20) * 10) atHalf = rss;
      if (pages > ENTRIES / LIMIT / 2) peakSecondHalf = Math.max(peakSecondHalf, rss);
    }
  } while (cursor);
  const walkMs = Date.now() - w0;
  peak = Math.max(peak, rssMiB(manager.pid));
  const rssAfter = rssMiB(manager.pid);
  if (entries !== ENTRIES) throw new Error(`walked ${entries} entries, not ${ENTRIES}`);
  if (offlineNamed !== pages)
    throw new Error(`the offline edge was named in ${offlineNamed} of ${pages} pages`);
  const growth = peak - rssBefore;
  const baselineMiB = bytes / 1024 / 1024;
  const fmt = (n: number) => n.toFixed(1);
  console.log(`\n| measure | value |\n| --- | --- |`);
  console.log(
    `| entries written before start (2 edges) | ${ENTRIES.toLocaleString('en')} in ${fmt(seedMs / 1000)} s |`,
  );
  console.log(`| pages of ${LIMIT} (offline edge named in each) | ${pages} (${offlineNamed}) |`);
  console.log(
    `| walk | ${fmt(walkMs / 1000)} s, ${Math.round(entries / (walkMs / 1000)).toLocaleString('en')} entries/s |`,
  );
  console.log(
    `| manager RSS before / peak / after, MiB | ${fmt(rssBefore)} / ${fmt(peak)} / ${fmt(rssAfter)} |`,
  );
  console.log(`| manager RSS growth (peak - before), MiB | ${fmt(growth)} |`);
  console.log(`| baseline: bytes of every page answered, MiB | ${fmt(baselineMiB)} |`);
  console.log(`| growth / baseline | ${fmt((100 * growth) / baselineMiB)}% |`);
  const late = peakLater - atTenth;
  console.log(
    `| RSS at a tenth of the walk / peak over the other nine tenths, MiB | ${fmt(atTenth)} / ${fmt(peakLater)} |`,
  );
  console.log(
    `| growth over the last nine tenths / baseline (target < 5%) | ${fmt(late)} MiB, ${fmt((100 * late) / baselineMiB)}% ${late < baselineMiB / 20 ? 'PASS' : 'FAIL'} |`,
  );
  // A manager that kept the pages would grow by half the baseline over the second half of the
  // walk; one whose memory is bounded by a page stays where the first half left it.
  const second = peakSecondHalf - atHalf;
  console.log(
    `| RSS at half the walk / peak over the second half, MiB | ${fmt(atHalf)} / ${fmt(peakSecondHalf)} |`,
  );
  console.log(
    `| growth over the second half / its pages' bytes (${fmt(baselineMiB / 2)} MiB) | ${fmt(second)} MiB, ${fmt((200 * second) / baselineMiB)}% |`,
  );
} finally {
  for (const p of procs.reverse()) await p.stop().catch(() => undefined);
  dirs.removeAll();
}
