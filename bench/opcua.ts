/**
 * bench/opcua: the edge's OPC UA server under 10,000 tags changing at 1 Hz. The tags are
 * Generator tags (register `N`, random, a new value every read) on 10 devices, read every second
 * by the acquisition engine and published on the DataHub; the OPC UA server follows them. One
 * node-opcua client monitors every tag (one monitored item per tag, sampling interval 0, queue 1,
 * one subscription publishing every 100 ms) and counts notifications per second and the latency
 * from the value's DataHub publish (the payload's `timestamp`, which the server passes as the
 * source timestamp) to the notification at the client. Edge CPU is read from /proc, with and
 * without the client attached.
 *
 * Baseline in the same run: the same client monitoring 10,000 variables of a bare node-opcua
 * server (its own process) that sets every variable once per second in a loop, source timestamp
 * = the time of the set. Target: the edge reaches at least 70% of the ceiling's notifications per
 * second.
 *
 *   npm run bench -- opcua [--tags 10000] [--seconds 20] [--warmup 8]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AttributeIds,
  ClientMonitoredItemGroup,
  ClientSubscription,
  DataType,
  MessageSecurityMode,
  OPCUACertificateManager,
  OPCUAClient,
  OPCUAServer,
  SecurityPolicy,
  StatusCodes,
  TimestampsToReturn,
  UserTokenType,
  Variant,
  type DataValue,
  type UAVariable,
  type UserIdentityInfo,
} from 'node-opcua';
import { EdgeClient } from '../src/client/index.js';
import { cleanEnv, runCliJson, startCli } from '../test/helpers/cli.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const TAGS = arg('tags', 10_000);
const SECONDS = arg('seconds', 20);
const WARMUP = arg('warmup', 8);
const DEVICES = 10;
const PER_DEVICE = Math.ceil(TAGS / DEVICES);
const BATCH = 1000;

/** CPU seconds (user + system) of a process, from /proc. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
const quantile = (sorted: Float64Array, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- the ceiling: a bare node-opcua server, in its own process ----------------------------------
if (process.argv.includes('--ceiling-server')) {
  const pki = mkdtempSync(join(tmpdir(), 'mw-bench-opcua-ceiling-'));
  const server = new OPCUAServer({
    port: 0,
    hostname: '127.0.0.1',
    allowAnonymous: true,
    securityModes: [MessageSecurityMode.None],
    securityPolicies: [SecurityPolicy.None],
    serverCertificateManager: new OPCUACertificateManager({ rootFolder: pki }),
  });
  await server.initialize();
  const ns = server.engine.addressSpace!.getOwnNamespace();
  const folder = ns.addFolder(server.engine.addressSpace!.rootFolder.objects, { browseName: 'Bench' });
  const vars: UAVariable[] = [];
  for (let i = 0; i < TAGS; i++) {
    vars.push(
      ns.addVariable({
        organizedBy: folder,
        browseName: `v${i}`,
        nodeId: `s=v${i}`,
        dataType: 'Double',
        minimumSamplingInterval: 0,
        value: new Variant({ dataType: DataType.Double, value: 0 }),
      }),
    );
  }
  setInterval(() => {
    const now = new Date();
    for (const v of vars) {
      v.setValueFromSource(
        new Variant({ dataType: DataType.Double, value: Math.random() }),
        StatusCodes.Good,
        now,
      );
    }
  }, 1000);
  await server.start();
  process.stdout.write(`${JSON.stringify({ port: server.endpoints[0]!.port })}\n`);
  process.on('SIGTERM', () => {
    void server.shutdown(0).finally(() => {
      rmSync(pki, { recursive: true, force: true });
      process.exit(0);
    });
  });
  await new Promise(() => undefined);
}

// --- the client ----------------------------------------------------------------------------------
interface Measure {
  notificationsPerSecond: number;
  p50: number;
  p99: number;
  cpu: number;
  items: number;
  setupSeconds: number;
}

async function measure(
  endpoint: string,
  nodeIds: string[],
  identity: UserIdentityInfo,
  serverPid: number,
): Promise<Measure> {
  const pki = mkdtempSync(join(tmpdir(), 'mw-bench-opcua-client-'));
  const client = OPCUAClient.create({
    applicationName: 'millwright-bench',
    securityMode: MessageSecurityMode.None,
    securityPolicy: SecurityPolicy.None,
    endpointMustExist: false,
    requestedSessionTimeout: 600_000,
    defaultTransactionTimeout: 120_000,
    clientCertificateManager: new OPCUACertificateManager({
      rootFolder: pki,
      automaticallyAcceptUnknownCertificate: true,
    }),
  });
  await client.connect(endpoint);
  const session = await client.createSession(identity);
  const t0 = Date.now();
  const sub = ClientSubscription.create(session, {
    requestedPublishingInterval: 100,
    requestedLifetimeCount: 6000,
    requestedMaxKeepAliveCount: 100,
    maxNotificationsPerPublish: 0,
    publishingEnabled: true,
    priority: 1,
  });
  await new Promise<void>((resolve) => sub.once('started', () => resolve()));
  let counting = false;
  let received = 0;
  const lat = new Float64Array(TAGS * (SECONDS + 5) * 2);
  let latN = 0;
  let good = 0;
  const onChange = (dv: DataValue) => {
    if (!counting) return;
    received++;
    if (dv.statusCode.value === 0) good++;
    const ts = dv.sourceTimestamp?.getTime();
    if (ts !== undefined && latN < lat.length) lat[latN++] = Date.now() - ts;
  };
  for (let i = 0; i < nodeIds.length; i += BATCH) {
    const group = ClientMonitoredItemGroup.create(
      sub,
      nodeIds.slice(i, i + BATCH).map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value })),
      { samplingInterval: 0, queueSize: 1, discardOldest: true },
      TimestampsToReturn.Both,
    );
    group.on('changed', (_item, dv) => onChange(dv));
    await new Promise<void>((resolve) => group.once('initialized', () => resolve()));
  }
  const setupSeconds = (Date.now() - t0) / 1000;
  await sleep(WARMUP * 1000);
  counting = true;
  const cpu0 = cpuSeconds(serverPid);
  const w0 = Date.now();
  await sleep(SECONDS * 1000);
  counting = false;
  const wall = (Date.now() - w0) / 1000;
  const cpu = (cpuSeconds(serverPid) - cpu0) / wall;
  await sub.terminate().catch(() => undefined);
  await session.close().catch(() => undefined);
  await client.disconnect();
  rmSync(pki, { recursive: true, force: true });
  const sorted = lat.subarray(0, latN).sort();
  if (good < received * 0.99) console.warn(`only ${good} of ${received} notifications were Good`);
  return {
    notificationsPerSecond: received / wall,
    p50: latN ? quantile(sorted, 0.5) : NaN,
    p99: latN ? quantile(sorted, 0.99) : NaN,
    cpu,
    items: nodeIds.length,
    setupSeconds,
  };
}

const children: ChildProcess[] = [];
const stops: Array<() => Promise<unknown>> = [];
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
});

async function startCeiling(): Promise<{ port: number; pid: number }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', import.meta.filename, '--ceiling-server', '--tags', String(TAGS)],
    {
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  children.push(child);
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && out.includes('\n')) resolve((JSON.parse(line) as { port: number }).port);
    });
    child.on('exit', (code) => reject(new Error(`ceiling server exited ${code}`)));
  });
  return { port, pid: child.pid! };
}

// --- the run --------------------------------------------------------------------------------------
const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-opcua-'));
const env = {
  ...cleanEnv(),
  MILLWRIGHT_EDGE_DATA_DIR: dataDir,
  MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
  MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
  MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
  MILLWRIGHT_EDGE_OPCUA_ENABLED: 'true',
  MILLWRIGHT_EDGE_OPCUA_PORT: '0',
  MILLWRIGHT_EDGE_OPCUA_HOST: '127.0.0.1',
};
try {
  // 1. The ceiling.
  const ceiling = await startCeiling();
  console.log(
    `ceiling: bare node-opcua server with ${TAGS.toLocaleString('en-US')} variables (pid ${ceiling.pid})`,
  );
  const bare = await measure(
    `opc.tcp://127.0.0.1:${ceiling.port}`,
    Array.from({ length: TAGS }, (_, i) => `ns=1;s=v${i}`),
    { type: UserTokenType.Anonymous },
    ceiling.pid,
  );
  children[0]!.kill('SIGTERM');
  console.log(bare);

  // 2. The edge.
  const apiClient = runCliJson(['edge', 'api-client', 'create', '--name', 'bench'], env);
  const edge = await startCli(['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'], {
    env,
    inheritStderr: true,
  });
  stops.push(() => edge.stop());
  const ready = edge.ready.services.edge!;
  const api = new EdgeClient({
    url: ready.url,
    credentials: { clientId: apiClient.client_id, clientSecret: apiClient.client_secret },
    insecure: true,
  });
  const t0 = Date.now();
  const nodeIds: string[] = [];
  for (let d = 0; d < DEVICES; d++) {
    const dev = (
      await api.graphql(
        '/devicehub/v2',
        `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID } }`,
        {
          in: { Name: `gen${d}`, DriverID: 'Generator' },
        },
      )
    ).CreateDevice.ID as string;
    const n = Math.min(PER_DEVICE, TAGS - d * PER_DEVICE);
    for (let i = 0; i < n; i += BATCH) {
      await api.graphql(
        '/devicehub/v2',
        `mutation($in: [CreateRegisterRequest!]!) { CreateRegisters(input: $in) { ID } }`,
        {
          in: Array.from({ length: Math.min(BATCH, n - i) }, (_, j) => ({
            DeviceID: dev,
            Name: 'N',
            TagName: `n${i + j}`,
            ValueType: 'float64',
            IntervalMs: 1000,
            Properties: [{ Name: 'address', Value: String((i + j) % 65536) }],
          })),
        },
      );
    }
    for (let i = 0; i < n; i++) nodeIds.push(`ns=1;s=DeviceHub/gen${d}/n${i}`);
  }
  await api.graphql(
    '/opcua/v2',
    `mutation { SetUser(input: { Username: "bench", Password: "bench-password" }) { Username } }`,
  );
  await api.graphql('/opcua/v2', `mutation { SyncNodes { ID } }`);
  for (;;) {
    const s = await api.graphql('/opcua/v2', `{ GetCurrentSync { State Added Error } }`);
    if (s.GetCurrentSync.State !== 'Running') {
      if (s.GetCurrentSync.State !== 'Succeeded') throw new Error(`sync failed: ${s.GetCurrentSync.Error}`);
      break;
    }
    await sleep(200);
  }
  // The address space is brought in line in the server's worker thread, in slices.
  while (
    (await api.graphql('/opcua/v2', `{ GetServerSettings { AddressSpaceNodes } }`)).GetServerSettings
      .AddressSpaceNodes < nodeIds.length
  )
    await sleep(200);
  console.log(
    `edge: ${nodeIds.length.toLocaleString('en-US')} tags configured and synced in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
  await sleep(WARMUP * 1000);
  const idle0 = cpuSeconds(edge.pid);
  const i0 = Date.now();
  await sleep(10_000);
  const idleCpu = (cpuSeconds(edge.pid) - idle0) / ((Date.now() - i0) / 1000);
  const opcuaPort = ready.ports['opcua-port']!;
  const mw = await measure(
    `opc.tcp://127.0.0.1:${opcuaPort}`,
    nodeIds,
    { type: UserTokenType.UserName, userName: 'bench', password: 'bench-password' },
    edge.pid,
  );
  console.log(mw);

  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const row = (name: string, m: Measure, extra = '') =>
    `| ${name} | ${m.items.toLocaleString('en-US')} | ${Math.round(m.notificationsPerSecond).toLocaleString('en-US')} | ${m.p50.toFixed(0)} | ${m.p99.toFixed(0)} | ${pct(m.cpu)}${extra} | ${m.setupSeconds.toFixed(1)} | ${pct(m.notificationsPerSecond / bare.notificationsPerSecond)} |`;
  console.log(
    `\nMachine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node.js ${process.version}; ${SECONDS} s measured after ${WARMUP} s warm-up\n`,
  );
  console.log(
    '| server | monitored items | notifications/s | p50 ms | p99 ms | server CPU | subscribe s | share of ceiling |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  console.log(row('bare node-opcua server, loop sets (ceiling)', bare));
  console.log(
    row('Millwright edge (Generator → DataHub → OPC UA)', mw, ` (${pct(idleCpu)} without the client)`),
  );
} finally {
  for (const stop of stops) await stop().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
}
process.exit(0);
