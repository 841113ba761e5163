/**
 * bench/acquisition-drivers: the second-wave drivers end to end, one case per driver, each beside
 * its protocol library's own tight loop against the same peer (target: the edge at least 70% of
 * it). The edge (`millwright edge`, its own process) polls one device; a `nats` client counts the
 * values on `devicehub.raw.>` through the edge's gateway.
 *
 * - `s7`: snap7's server (node-snap7 S7Server, its own process, behind a relay that counts the S7
 *   read requests) with DB3 of 4,096 INTs, every one a tag. Ceiling: node-snap7's client reading
 *   the same 8,192 bytes (`DBRead`, split by snap7 into PDU-sized requests) in a tight loop.
 * - `snmp`: Debian's snmpd on a free port; the first `--oids` (default 3,000) object instances of
 *   a walk of mib-2 less its volatile tables, every one an `OID` tag (v2c, GET of 50 per request).
 *   Ceiling: net-snmp's session getting the same OIDs, 50 per request, in a tight loop. Requests
 *   counted by the agent (snmpInPkts). 3,000 tags put the `max` case's cap (300,000 values/s) far
 *   above the ceiling (77,000-119,000 values/s on a quiet machine); 500 capped it at 50,000.
 *
 * Per driver two runs, paced first: `max` (IntervalMs 10: the edge reads back to back while a read takes
 * longer than 10 ms, compared with the ceiling; a read cycle shorter than that is read every
 * 10 ms, at most tags × 100 values/s, which the row names) and `paced` (IntervalMs 1000: the edge
 * CPU at that stated load). `max` and the ceiling are measured in `--rounds` (default 4) pairs of
 * windows of `--seconds / --rounds` each, alternating (edge, loop, loop, edge, edge, ...), the edge
 * stopped (SIGSTOP) while the loop runs; the ratio is that of the medians of the rounds. Before
 * 2026-11-28 the ceiling was one window after the edge had ended, so that a change of the machine's
 * load between the two windows (or the history's compaction in the edge's one) moved the ratio by
 * 30 points between runs; each round's figures and the peer's CPU are in the table. `--s7-connections` and `--snmp-concurrency` set the devices'
 * `connections` and `maxConcurrentRequests` (default: the drivers' defaults, 2 and 4), e.g. 1 to
 * compare with one request in flight.
 *
 * Each row gives the edge's CPU in all and of its main thread, CPU µs per value delivered, and the
 * bench process's own CPU (the NATS subscriber counting the values, on the same cores); the windows'
 * monotonic times go to stderr, to slice a CPU profile of the edge.
 *
 *   npm run bench -- acquisition-drivers [--driver s7|snmp|all] [--seconds 10] [--oids 3000]
 *     [--s7-connections N] [--snmp-concurrency N] [--rounds 4]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import snmp from 'net-snmp';
import type { Varbind } from 'net-snmp';
import { EdgeClient } from '../src/client/index.js';
import type { Snap7Client } from '../src/edge/acquisition/drivers/s7.js';
import { S7Peer } from '../test/helpers/peers/s7.js';
import { Snmpd } from '../test/helpers/peers/snmpd.js';
import { cleanEnv, runCliJson, startCli } from '../test/helpers/cli.js';
import { reportFigures, type Figures } from './support.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
};
const DRIVER = arg('driver', 'all');
const SECONDS = Number(arg('seconds', '10'));
const OIDS = Number(arg('oids', '3000'));
const S7_CONNECTIONS = arg('s7-connections', '');
const SNMP_CONCURRENCY = arg('snmp-concurrency', '');
const ROUNDS = Number(arg('rounds', '4'));
/** After SIGCONT, the edge's time to take up its reads again before a window counts. */
const SETTLE_MS = 500;
/** After SIGSTOP, the time for the subscriber to take the messages already sent. */
const DRAIN_MS = 200;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const FAILED = Buffer.from('{"success":false');
const startsWith = (data: Uint8Array, prefix: Uint8Array): boolean => {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
};

function ticks(path: string): number {
  const stat = readFileSync(path, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds of a process: in all, and of its main thread (JavaScript) alone. */
function cpuSeconds(pid: number): { all: number; main: number } {
  return { all: ticks(`/proc/${pid}/stat`), main: ticks(`/proc/${pid}/task/${pid}/stat`) };
}

/**
 * CPU seconds of each thread of a process, keyed `<name>/<tid>` (`main` for the main thread; the
 * others as `/proc/<pid>/task/<tid>/comm` names them: `node` for libuv's pool, where the history's
 * DuckDB statements and snap7's blocking calls run, and for worker threads).
 */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name =
        tid === String(pid)
          ? 'main'
          : `${readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim()}/${tid}`;
      out.set(name, ticks(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** CPU seconds of this process (the bench: the NATS subscriber counting the values). */
function ownCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** The monotonic clock in µs, the clock of a V8 CPU profile's timestamps (to slice a profile). */
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

interface Case {
  name: string;
  /** Starts the peer; answers the device's properties and tags, and a request counter. */
  setup(): Promise<{
    props: Record<string, string>;
    tags: Array<{ Name: string; TagName: string; ValueType: string; Properties: Record<string, string> }>;
    requests(): Promise<number>;
    /** The peer's process (its CPU is reported beside the edge's). */
    pid(): number | undefined;
    ceiling(seconds: number): Promise<number>;
    stop(): Promise<void>;
  }>;
  driver: string;
}

const s7Case: Case = {
  name: 's7',
  driver: 'S7',
  async setup() {
    const peer = new S7Peer();
    await peer.start();
    const tags = Array.from({ length: 4096 }, (_, i) => ({
      Name: 'DB',
      TagName: `w${i}`,
      ValueType: 'int16',
      Properties: { dbNumber: '3', address: String(i * 2) },
    }));
    return {
      props: {
        host: '127.0.0.1',
        port: String(peer.port),
        ReconnectInterval: '1',
        ...(S7_CONNECTIONS ? { connections: S7_CONNECTIONS } : {}),
      },
      tags,
      requests: async () => (await peer.stats()).reads,
      pid: () => peer.pid,
      async ceiling(seconds) {
        const snap7 = createRequire(import.meta.url)('node-snap7') as { S7Client: new () => Snap7Client };
        const c = new snap7.S7Client();
        c.SetParam(2, peer.port);
        await new Promise<void>((res, rej) =>
          c.ConnectTo('127.0.0.1', 0, 1, (e) => (e ? rej(new Error(String(e))) : res())),
        );
        let values = 0;
        const until = performance.now() + seconds * 1000;
        const t0 = performance.now();
        while (performance.now() < until) {
          await new Promise<void>((res, rej) =>
            c.ReadArea(0x84, 3, 0, 8192, 0x02, (e) => (e ? rej(new Error(c.ErrorText(e))) : res())),
          );
          values += 4096;
        }
        c.Disconnect();
        return values / ((performance.now() - t0) / 1000);
      },
      stop: () => peer.stop(),
    };
  },
};

/**
 * Tables of mib-2 whose rows come and go while the bench runs (TCP and UDP connections and
 * listeners, processes and their figures) and sysUpTime: left out of the tags, so that a row that
 * vanished is not a failed value. What is left of this machine's snmpd walk is about 6,500
 * instances (system, interfaces, IP, ICMP, SNMP, the installed software of HOST-RESOURCES, ...).
 */
const VOLATILE = ['6.13.', '6.19.', '6.20.', '7.5.', '7.7.', '25.4.', '25.5.', '1.3.'].map(
  (t) => `1.3.6.1.2.1.${t}`,
);

const snmpCase: Case = {
  name: 'snmp',
  driver: 'SNMP',
  async setup() {
    const agent = new Snmpd();
    await agent.start();
    const session = snmp.createSession('127.0.0.1', 'public', {
      port: agent.port,
      version: snmp.Version2c,
      timeout: 2000,
    });
    const oids: string[] = [];
    await new Promise<void>((res, rej) =>
      session.subtree(
        '1.3.6.1.2.1',
        50,
        (vbs: Varbind[]) => {
          for (const vb of vbs)
            if (!snmp.isVarbindError(vb) && oids.length < OIDS && !VOLATILE.some((p) => vb.oid.startsWith(p)))
              oids.push(vb.oid);
          return oids.length >= OIDS ? true : undefined;
        },
        (err: Error | null) => (err ? rej(err) : res()),
      ),
    );
    const get = (list: string[]) =>
      new Promise<Varbind[]>((res, rej) => session.get(list, (e, v) => (e ? rej(e) : res(v!))));
    return {
      props: {
        host: '127.0.0.1',
        port: String(agent.port),
        maxOidsPerRequest: '50',
        requestTimeoutMs: '2000',
        ...(SNMP_CONCURRENCY ? { maxConcurrentRequests: SNMP_CONCURRENCY } : {}),
      },
      tags: oids.map((oid, i) => ({
        Name: 'OID',
        TagName: `o${i}`,
        ValueType: 'string',
        Properties: { oid },
      })),
      // snmpInPkts, less the request that asks for it.
      requests: async () => Number((await get(['1.3.6.1.2.1.11.1.0']))[0]!.value),
      pid: () => agent.pid,
      async ceiling(seconds) {
        let values = 0;
        const until = performance.now() + seconds * 1000;
        const t0 = performance.now();
        while (performance.now() < until) {
          for (let k = 0; k < oids.length; k += 50) values += (await get(oids.slice(k, k + 50))).length;
        }
        return values / ((performance.now() - t0) / 1000);
      },
      async stop() {
        session.close();
        await agent.stop();
      },
    };
  },
};

/** What the edge delivered in one window, and the CPU of the edge, the bench and the peer in it. */
interface EdgeWindow {
  values: number;
  failures: number;
  requests: number;
  wall: number;
  /** CPU seconds in the window: the edge in all, its main thread, the bench, the peer. */
  edge: number;
  main: number;
  own: number;
  peer: number;
}

/** The library's loop in one window: values/s, and the CPU shares of the bench and the peer. */
interface CeilingWindow {
  rate: number;
  own: number;
  peer: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const pct = (x: number) => `${(x * 100).toFixed(0)}%`;

/** CPU seconds of a process (all its threads), 0 when there is none or it ended. */
function processCpu(pid: number | undefined): number {
  try {
    return pid ? ticks(`/proc/${pid}/stat`) : 0;
  } catch {
    return 0;
  }
}

type Peer = Awaited<ReturnType<Case['setup']>>;

/** Counts the values the subscriber got, and what the edge, the bench and the peer used meanwhile. */
async function edgeWindow(
  peer: Peer,
  edgePid: number,
  count: { received: number; failures: number },
  seconds: number,
  snmpCounter: boolean,
): Promise<EdgeWindow> {
  const r0 = await peer.requests();
  const cpu0 = cpuSeconds(edgePid);
  const own0 = ownCpuSeconds();
  const peer0 = processCpu(peer.pid());
  count.received = 0;
  count.failures = 0;
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const wall = (performance.now() - t0) / 1000;
  const values = count.received;
  const failures = count.failures;
  const cpu1 = cpuSeconds(edgePid);
  const own = ownCpuSeconds() - own0;
  const peerCpu = processCpu(peer.pid()) - peer0;
  // snmpInPkts counts the request that asks for it.
  const requests = (await peer.requests()) - r0 - (snmpCounter ? 1 : 0);
  return {
    values,
    failures,
    requests,
    wall,
    edge: cpu1.all - cpu0.all,
    main: cpu1.main - cpu0.main,
    own,
    peer: peerCpu,
  };
}

/** The library's loop for `seconds`, with the bench's and the peer's CPU share meanwhile. */
async function ceilingWindow(peer: Peer, seconds: number): Promise<CeilingWindow> {
  const own0 = ownCpuSeconds();
  const peer0 = processCpu(peer.pid());
  const t0 = performance.now();
  const rate = await peer.ceiling(seconds);
  const wall = (performance.now() - t0) / 1000;
  return { rate, own: (ownCpuSeconds() - own0) / wall, peer: (processCpu(peer.pid()) - peer0) / wall };
}

/** Sums the windows (one window for `paced`, the edge's rounds for `max`). */
function total(ws: EdgeWindow[]): EdgeWindow {
  const t: EdgeWindow = { values: 0, failures: 0, requests: 0, wall: 0, edge: 0, main: 0, own: 0, peer: 0 };
  for (const w of ws) for (const k of Object.keys(t) as Array<keyof EdgeWindow>) t[k] += w[k];
  return t;
}

/** One table row of edge windows: values/s, requests a cycle, CPU shares and µs per value. */
function edgeRow(name: string, label: string, tags: number, w: EdgeWindow): string {
  const perValue = w.values > 0 ? ((w.edge * 1e6) / w.values).toFixed(1) : '';
  const cycles = w.values / tags;
  return `| ${name} | ${label} | ${fmt(w.values / w.wall)} | ${(w.requests / Math.max(1, cycles)).toFixed(1)} | ${pct(w.edge / w.wall)} | ${pct(w.main / w.wall)} | ${perValue} | ${pct(w.own / w.wall)} | ${pct(w.peer / w.wall)} | ${w.failures} |`;
}

/** The edge's CPU by thread over a phase, to stderr (the history's worker, libuv's pool). */
function logThreads(pid: number, threads0: Map<string, number>, wall: number): void {
  const split = [...threadCpu(pid)]
    .map(([name, sec]) => [name, (sec - (threads0.get(name) ?? 0)) / wall] as const)
    .filter(([, share]) => share >= 0.005)
    .sort((x, y) => y[1] - x[1])
    .slice(0, 6);
  console.error(`  edge CPU by thread: ${split.map(([n, v]) => `${n} ${(v * 100).toFixed(1)}%`).join(', ')}`);
}

/**
 * The `max` comparison: ROUNDS pairs of an edge window and a window of the library's loop, in the
 * order E C C E E C ... (so that a trend in the machine's load hits both sides alike). While the
 * library's loop runs the edge is stopped (SIGSTOP: no CPU, no requests, as when the ceiling was
 * measured after the edge had ended); after SIGCONT it runs SETTLE_MS before a window counts.
 */
async function maxRounds(
  peer: Peer,
  edgePid: number,
  count: { received: number; failures: number },
  snmpCounter: boolean,
): Promise<{ edge: EdgeWindow[]; ceiling: CeilingWindow[] }> {
  const edge: EdgeWindow[] = [];
  const ceiling: CeilingWindow[] = [];
  const window = SECONDS / ROUNDS;
  let stopped = false;
  const pause = async () => {
    process.kill(edgePid, 'SIGSTOP');
    stopped = true;
    await sleep(DRAIN_MS); // the messages already on the subscriber's socket
  };
  const resume = async () => {
    process.kill(edgePid, 'SIGCONT');
    stopped = false;
    await sleep(SETTLE_MS);
  };
  try {
    // The library's loop warmed up once (its first window would carry its JIT's compile).
    await pause();
    await peer.ceiling(Math.min(1, window));
    await resume();
    for (let k = 0; k < ROUNDS; k++) {
      for (const side of k % 2 === 0 ? (['edge', 'ceiling'] as const) : (['ceiling', 'edge'] as const)) {
        if (side === 'edge') {
          if (stopped) await resume();
          edge.push(await edgeWindow(peer, edgePid, count, window, snmpCounter));
        } else {
          if (!stopped) await pause();
          ceiling.push(await ceilingWindow(peer, window));
        }
      }
    }
  } finally {
    if (stopped) process.kill(edgePid, 'SIGCONT');
  }
  return { edge, ceiling };
}

async function createDevice(
  gql: (q: string, v?: Record<string, unknown>) => Promise<any>,
  c: Case,
  peer: Peer,
  interval: number,
): Promise<string> {
  const dev = (
    await gql(`mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`, {
      in: {
        Name: `d-${interval}`,
        DriverID: c.driver,
        Properties: Object.entries(peer.props).map(([Key, Value]) => ({ Key, Value })),
      },
    })
  ).CreateDevice.ID as string;
  await gql(`mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`, {
    in: peer.tags.map((t) => ({
      ...t,
      DeviceID: dev,
      IntervalMs: interval,
      Properties: Object.entries(t.Properties).map(([Name, Value]) => ({ Name, Value })),
    })),
  });
  return dev;
}

async function run(c: Case) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-drivers-'));
  const env = {
    ...cleanEnv(),
    MILLWRIGHT_EDGE_DATA_DIR: dataDir,
    MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
    MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
    MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
  };
  const peer = await c.setup();
  const client = runCliJson(['edge', 'api-client', 'create', '--name', 'bench'], env);
  const edge = await startCli(['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'], {
    env,
    inheritStderr: true,
    // A loaded machine (this one is shared) can take more than the default 30 s to start the edge.
    timeoutMs: 180_000,
  });
  const ready = edge.ready.services.edge!;
  const api = new EdgeClient({
    url: ready.url,
    natsUrl: ready.natsUrl!,
    credentials: { clientId: client.client_id, clientSecret: client.client_secret },
    insecure: true,
  });
  const gql = (q: string, v?: Record<string, unknown>): Promise<any> => api.graphql('/devicehub/v2', q, v);
  const nc = await api.nats();
  const count = { received: 0, failures: 0 };
  // As little work per message as a consumer that counts can do: the failure flag is read from
  // the payload's first bytes, without decoding the payload's text (it shares the two cores).
  nc.subscribe('devicehub.raw.>', {
    callback: (_e, m) => {
      count.received++;
      if (startsWith(m.data, FAILED)) count.failures++;
    },
  });
  const rows: string[] = [];
  const snmpCounter = c.name === 'snmp';
  // Paced first: a window after the max one would also carry the history's work on the max
  // window's values (appends still queued, and the minute's compaction of a million values or more
  // into a segment: 30% of a core for seconds on libuv's threads), not the paced load's.
  let dev = await createDevice(gql, c, peer, 1000);
  await sleep(3000);
  let threads0 = threadCpu(edge.pid);
  let m0 = monoUs();
  const paced = await edgeWindow(peer, edge.pid, count, SECONDS, snmpCounter);
  // For slicing a CPU profile of the edge (MILLWRIGHT_CHILD_NODE_ARGS="--cpu-prof ...").
  console.error(`window ${c.name} 1000: monotonic µs ${m0} to ${monoUs()}`);
  logThreads(edge.pid, threads0, paced.wall);
  rows.push(edgeRow(c.name, 'edge, paced (IntervalMs 1000)', peer.tags.length, paced));
  await gql(`mutation($in: [ID!]!) { DeleteDevices(IDs: $in) }`, { in: [dev] });
  await sleep(1000);

  dev = await createDevice(gql, c, peer, 10);
  await sleep(3000);
  threads0 = threadCpu(edge.pid);
  m0 = monoUs();
  const rounds = await maxRounds(peer, edge.pid, count, snmpCounter);
  console.error(`window ${c.name} 10 (rounds, the edge stopped between): monotonic µs ${m0} to ${monoUs()}`);
  const max = total(rounds.edge);
  logThreads(edge.pid, threads0, max.wall);
  const cap = fmt(peer.tags.length * 100);
  rows.push(
    edgeRow(
      c.name,
      `edge, max (IntervalMs 10: at most ${cap}/s), ${ROUNDS} rounds in all`,
      peer.tags.length,
      max,
    ),
  );
  await gql(`mutation($in: [ID!]!) { DeleteDevices(IDs: $in) }`, { in: [dev] });
  await nc.close();
  api.close();
  await edge.stop();
  await peer.stop();
  rmSync(dataDir, { recursive: true, force: true });

  const edgeRates = rounds.edge.map((w) => w.values / w.wall);
  const ceilRates = rounds.ceiling.map((w) => w.rate);
  rounds.edge.forEach((w, k) => {
    const cw = rounds.ceiling[k]!;
    rows.push(edgeRow(c.name, `round ${k + 1}: edge, max`, peer.tags.length, w));
    rows.push(
      `| ${c.name} | round ${k + 1}: the library's loop (${pct(edgeRates[k]! / cw.rate)}) | ${fmt(cw.rate)} | | | | | ${pct(cw.own)} | ${pct(cw.peer)} | |`,
    );
  });
  const maxRate = median(edgeRates);
  const ceiling = median(ceilRates);
  rows.push(`| ${c.name} | edge max, median of the rounds | ${fmt(maxRate)} | | | | | | | |`);
  rows.push(
    `| ${c.name} | ceiling: the library's tight loop, same values, median of the rounds | ${fmt(ceiling)} | | | | | | | |`,
  );
  rows.push(
    `| ${c.name} | edge max / ceiling (ratio of the medians) | ${pct(maxRate / ceiling)} | | | | | | | |`,
  );
  return { rows, tags: peer.tags.length, maxRate, ceiling };
}

const cases = [s7Case, snmpCase].filter((c) => DRIVER === 'all' || c.name === DRIVER);
const out: string[] = [];
const figures: Figures = {};
const la0 = loadavg();
for (const c of cases) {
  const r = await run(c);
  figures[`${c.name}EdgePerSecond`] = r.maxRate;
  figures[`${c.name}CeilingPerSecond`] = r.ceiling;
  const setting =
    c.name === 's7'
      ? `connections ${S7_CONNECTIONS || 'default (2)'}`
      : `maxConcurrentRequests ${SNMP_CONCURRENCY || 'default (4)'}`;
  console.log(`${c.name}: ${r.tags} tags on one device, ${setting}`);
  out.push(...r.rows);
}
console.log(
  `\nbench/acquisition-drivers: window ${SECONDS} s per run; ${cpus().length} × ${cpus()[0]?.model}; Node ${process.version}; load average before ${la0.map((x) => x.toFixed(2)).join(' ')}, after ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}\n`,
);
console.log(
  '| driver | case | values/s delivered | requests per read cycle | edge CPU (one core = 100%) | of it the main thread | edge CPU µs per value | bench CPU (subscriber; the loop) | peer CPU | failed values |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const row of out) console.log(row);
reportFigures(figures);
process.exit(0);
