/**
 * bench/devicehub: the DeviceHub configuration API at scale. 100,000 tags on 100 devices, loaded
 * by two 50,000-line `UploadCsv` requests (GraphQL multipart); then `ListRegistersFromAllDevices`
 * walked end to end in pages of 1,000 with `ContinueFrom` (keyset), through the real GraphQL
 * endpoint over HTTPS, against the same SQL query run directly on the same database file (the
 * repository's own query, in this process). Beside the upload: the same rows inserted directly.
 * A walk with `SkipCount` (offset paging) shows why deep pages need the keyset.
 *
 * The edge runs as its own process (`millwright edge`, HTTPS, self-signed certificate); one
 * request at a time over a keep-alive connection.
 *
 *   npm run bench -- devicehub [--walks 3] [--devices 100] [--tags-per-device 1000] [--interval-ms 1000] [--short]
 *
 * `--short` (for `npm run bench -- summary`): the same 100,000 tags and walks, and only the page
 * figures (no re-upload, no offset walk, no upload baselines).
 */
import { runCliJson, startCli } from '../test/helpers/cli.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EdgeClient } from '../src/client/index.js';
import { Database, typed } from '../src/kernel/db/index.js';
import type { DevicehubTables } from '../src/edge/devicehub/repository.js';
import { uuidv7 } from '../src/kernel/ids.js';
import { createDevicehub, devicehubMigrations } from '../src/edge/devicehub/index.js';
import { numArg as arg, reportFigures, SHORT } from './support.js';

const walks = arg('walks', 3);
const deviceCount = arg('devices', 100);
const tagsPerDevice = arg('tags-per-device', 1000);
// The tags' IntervalMs: 1000 (the figure of record: the edge polls, publishes and records every
// tag each second while it serves the pages); 86400000 (a day) shows the pages without that data
// plane, to split a page's time between the two (a diagnostic, not the target's condition).
const intervalMs = arg('interval-ms', 1000);
const PAGE = 1000;
const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-devicehub-'));
const env = {
  ...process.env,
  MILLWRIGHT_EDGE_DATA_DIR: dataDir,
  MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
  MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
  MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
};

const cli = (args: string[]) => runCliJson(args, env);

async function startEdge() {
  const edge = await startCli(['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'], {
    env,
    inheritStderr: true,
  });
  return { url: edge.ready.services.edge!.url, stop: edge.stop, pid: edge.pid, output: edge.output };
}

// The edge's resident memory now and at its peak (MiB), from /proc (Linux only; -1 elsewhere).
const edgeMemory = (pid: number) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 };
  } catch {
    return { rssMiB: -1, peakRssMiB: -1 };
  }
};
// The edge's CPU time so far (user + system, all its threads), ms, from /proc (NaN elsewhere).
const edgeCpuMs = (pid: number) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in ticks of 1/100 s
  } catch {
    return NaN;
  }
};

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const ms = (x: number) => x.toFixed(1);

const client = cli(['edge', 'api-client', 'create', '--name', 'bench']);
const edge = await startEdge();
try {
  const edgeApi = new EdgeClient({
    url: edge.url,
    credentials: { clientId: client.client_id, clientSecret: client.client_secret },
    insecure: true,
  });
  const gql = (query: string, variables?: Record<string, unknown>): Promise<any> =>
    edgeApi.graphql('/devicehub/v2', query, variables);

  // 100 devices.
  const devices: Array<{ ID: string; Name: string }> = [];
  for (let d = 0; d < deviceCount; d++) {
    devices.push(
      (
        await gql(
          `mutation($n: String!) { CreateDevice(input: { Name: $n, DriverID: "Generator" }) { ID Name } }`,
          { n: `dev-${String(d).padStart(3, '0')}` },
        )
      ).CreateDevice,
    );
  }

  const csvFor = (from: number, to: number) => {
    const lines = [
      'DeviceName,TagName,Name,ValueType,Description,IntervalMs,PublishCoV,TagFormula,MetaData,Property.address,Property.amplitude',
    ];
    for (let d = from; d < to; d++) {
      for (let i = 0; i < tagsPerDevice; i++) {
        lines.push(
          `${devices[d]!.Name},tag_${String(i).padStart(5, '0')},S,float64,sine ${i},${intervalMs},false,,,${i},${(i % 7) + 1}`,
        );
      }
    }
    return lines.join('\n') + '\n';
  };
  const upload = async (csv: string) => {
    const form = new FormData();
    form.append(
      'operations',
      JSON.stringify({
        query: 'mutation($f: Upload!) { UploadCsv(File: $f) { Stats { Total Created Updated Failed } } }',
        variables: { f: null },
      }),
    );
    form.append('map', JSON.stringify({ 0: ['variables.f'] }));
    form.append('0', new Blob([csv], { type: 'text/csv' }), 'tags.csv');
    const t0 = performance.now();
    const res = await edgeApi.request('POST', '/devicehub/v2', { formData: form });
    const took = performance.now() - t0;
    const body = res.body;
    if (res.status !== 200 || body.errors)
      throw new Error(`upload ${res.status}: ${JSON.stringify(body.errors)}`);
    return { took, stats: body.data.UploadCsv.Stats, bytes: Buffer.byteLength(csv) };
  };
  const half = Math.floor(deviceCount / 2);
  const up1 = await upload(csvFor(0, half));
  const up2 = await upload(csvFor(half, deviceCount));
  const total = deviceCount * tagsPerDevice;
  if (up1.stats.Created + up2.stats.Created !== total)
    throw new Error(`uploads created ${up1.stats.Created + up2.stats.Created} of ${total}`);
  // Re-upload of the first half: every line an update.
  const up3 = SHORT ? undefined : await upload(csvFor(0, half));
  process.stderr.write(`uploaded ${total} tags: ${((up1.took + up2.took) / 1000).toFixed(1)} s\n`);

  // Walk through GraphQL.
  const PAGE_QUERY = `query($in: ListRegistersFromAllDevicesRequest) { ListRegistersFromAllDevices(input: $in) {
    TotalCount Last Registers { ID DeviceID TagName Name ValueType IntervalMs Topics { Format Topic } } } }`;
  // MILLWRIGHT_BENCH_PAGE_WINDOWS=<file>: each measured page's start and end on the monotonic clock
  // in microseconds (the clock of a V8 CPU profile's timestamps), to lay the pages over the edge's
  // profile (`--cpu-prof`) and see what its main thread ran while a page waited.
  const windows: Array<[number, number]> = [];
  const micros = () => Number(process.hrtime.bigint() / 1000n);
  const walk = async (mode: 'keyset' | 'offset') => {
    const times: number[] = [];
    let cursor: string | null = null;
    let seen = 0;
    for (let page = 0; ; page++) {
      const input: Record<string, unknown> = { Limit: PAGE };
      if (mode === 'keyset' && cursor) input.ContinueFrom = cursor;
      if (mode === 'offset') input.SkipCount = page * PAGE;
      const t0 = performance.now();
      const w0 = micros();
      const data = await gql(PAGE_QUERY, { in: input });
      times.push(performance.now() - t0);
      windows.push([w0, micros()]);
      const r = data.ListRegistersFromAllDevices;
      seen += r.Registers.length;
      if (r.Registers.length < PAGE) break;
      cursor = r.Last;
    }
    if (seen !== total) throw new Error(`${mode} walk saw ${seen} of ${total}`);
    return times;
  };
  await walk('keyset'); // warm-up
  windows.length = 0;
  const api: number[] = [];
  const cpu0 = edgeCpuMs(edge.pid);
  for (let w = 0; w < walks; w++) api.push(...(await walk('keyset')));
  const edgeCpuPerPage = (edgeCpuMs(edge.pid) - cpu0) / api.length;
  if (process.env.MILLWRIGHT_BENCH_PAGE_WINDOWS)
    writeFileSync(process.env.MILLWRIGHT_BENCH_PAGE_WINDOWS, JSON.stringify(windows.slice(0, api.length)));
  const memory = edgeMemory(edge.pid);
  process.stderr.write(
    `${walks + 1} walks through GraphQL done; edge RSS ${memory.rssMiB.toFixed(0)} MiB, peak ${memory.peakRssMiB.toFixed(0)} MiB; ` +
      `edge CPU ${edgeCpuPerPage.toFixed(1)} ms per measured page (all its threads, its data plane included)\n`,
  );
  const offset = SHORT ? undefined : await walk('offset');

  // Baseline: the same SQL as the DeviceHub's keyset page and count, on the same database file,
  // in this process (the repository is private to the DeviceHub: the SQL is written out here).
  const database = Database.open({ sqlitePath: join(dataDir, 'edge.db') });
  const db = database.typed<DevicehubTables>();
  const direct: number[] = [];
  for (let w = 0; w < walks + 1; w++) {
    let after: string | undefined;
    for (;;) {
      const t0 = performance.now();
      await db
        .selectFrom('dh_register as c')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      let q = db
        .selectFrom('dh_register as r')
        .innerJoin('dh_device as d', 'd.id', 'r.device_id')
        .select([
          'r.id',
          'r.device_id',
          'r.name',
          'r.tag_name',
          'r.description',
          'r.value_type',
          'r.publish_cov',
          'r.tag_formula',
          'r.interval_ms',
          'r.properties',
          'r.metadata',
          'r.created_at',
          'r.updated_at',
          'd.name as device_name',
          'd.alias_topics',
        ]);
      if (after) q = q.where('r.id', '>', after);
      const rows: Array<{ id: string }> = await q.orderBy('r.id').limit(PAGE).execute();
      if (w > 0) direct.push(performance.now() - t0);
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1]!.id;
    }
  }
  await database.close();

  // Baselines of the upload, on a scratch database: the same 50,000 tags validated and inserted by
  // the DeviceHub service in this process (CreateRegisters without HTTP, 10,000 per call), and the
  // same rows inserted by SQL alone.
  const uploadBaselines = async () => {
    const scratch = Database.open({ sqlitePath: join(dataDir, 'scratch.db') });
    await scratch.migrate([devicehubMigrations]);
    const hub = createDevicehub(scratch).service;
    const scratchDevices = [];
    for (const d of devices.slice(0, half)) {
      scratchDevices.push(await hub.createDevice({ Name: d.Name, DriverID: 'Generator' }));
    }
    const inputs = scratchDevices.flatMap((d) =>
      Array.from({ length: tagsPerDevice }, (_, i) => ({
        DeviceID: d.ID,
        Name: 'S',
        TagName: `tag_${i}`,
        ValueType: 'float64',
        Description: `sine ${i}`,
        IntervalMs: 1000,
        Properties: [
          { Name: 'address', Value: String(i) },
          { Name: 'amplitude', Value: String((i % 7) + 1) },
        ],
      })),
    );
    const t0 = performance.now();
    for (let i = 0; i < inputs.length; i += 10_000) await hub.createRegisters(inputs.slice(i, i + 10_000));
    const directInsert = performance.now() - t0;
    const now = Date.now();
    const rows = inputs.map((input) => ({
      id: uuidv7(now),
      device_id: input.DeviceID,
      name: input.Name,
      tag_name: `${input.TagName}_sql`,
      description: input.Description,
      value_type: input.ValueType,
      publish_cov: 0,
      tag_formula: '',
      interval_ms: input.IntervalMs,
      properties: JSON.stringify({
        address: input.Properties[0]!.Value,
        amplitude: input.Properties[1]!.Value,
      }),
      metadata: '{}',
      created_at: now,
      updated_at: now,
    }));
    const t1 = performance.now();
    await scratch.transaction(async (untyped) => {
      const trx = typed<DevicehubTables>(untyped);
      for (let i = 0; i < rows.length; i += 500)
        await trx
          .insertInto('dh_register')
          .values(rows.slice(i, i + 500))
          .execute();
    });
    const insertOnly = performance.now() - t1;
    await scratch.close();
    return { rows: rows.length, directInsert, insertOnly };
  };
  const baselines = SHORT ? undefined : await uploadBaselines();

  console.log(
    `\nbench/devicehub: ${total} tags on ${deviceCount} devices (Generator, register S, polled every ${intervalMs} ms), ${walks} walks of ${total / PAGE} pages of ${PAGE}; ` +
      `${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, SQLite\n`,
  );
  console.log('| case | pages | p50 ms/page | p99 ms/page | max ms/page | walk s |');
  console.log('|---|---:|---:|---:|---:|---:|');
  const row = (name: string, xs: number[], perWalk: number) =>
    console.log(
      `| ${name} | ${xs.length} | ${ms(quantile(xs, 0.5))} | ${ms(quantile(xs, 0.99))} | ${ms(Math.max(...xs))} | ${(xs.reduce((a, b) => a + b, 0) / perWalk / 1000).toFixed(2)} |`,
    );
  row('SQL query directly (baseline: keyset page + count, same file)', direct, walks);
  row('ListRegistersFromAllDevices over HTTPS, ContinueFrom (keyset)', api, walks);
  if (offset) row('ListRegistersFromAllDevices over HTTPS, SkipCount (offset)', offset, 1);
  console.log('\n| upload | lines | MB | seconds | lines/s |');
  console.log('|---|---:|---:|---:|---:|');
  const urow = (name: string, u: { took: number; stats: any; bytes: number }) =>
    console.log(
      `| ${name} | ${u.stats.Total} | ${(u.bytes / 1e6).toFixed(1)} | ${(u.took / 1000).toFixed(2)} | ${Math.round(u.stats.Total / (u.took / 1000))} |`,
    );
  if (baselines) {
    const { rows, insertOnly, directInsert } = baselines;
    console.log(
      `| same rows inserted directly, SQL only (baseline) | ${rows} | - | ${(insertOnly / 1000).toFixed(2)} | ${Math.round(rows / (insertOnly / 1000))} |`,
    );
    console.log(
      `| same tags validated and inserted by the DeviceHub service in the bench process (no HTTP) | ${rows} | - | ${(directInsert / 1000).toFixed(2)} | ${Math.round(rows / (directInsert / 1000))} |`,
    );
  }
  urow('UploadCsv, empty database (creates)', up1);
  urow('UploadCsv, 50,000 tags present (creates)', up2);
  if (up3) urow('UploadCsv, same file again (updates)', up3);
  const p99 = quantile(api, 0.99);
  const worstUpload = Math.max(up1.took, up2.took, up3?.took ?? 0) / 1000;
  console.log(
    `\ntarget: page p99 < 50 ms: ${ms(p99)} ms ${p99 < 50 ? 'MET' : 'NOT MET'}; 50,000-line upload < 10 s: ${worstUpload.toFixed(2)} s ${worstUpload < 10 ? 'MET' : 'NOT MET'}`,
  );
  reportFigures({
    tags: total,
    pageP99Ms: p99,
    sqlPageP99Ms: quantile(direct, 0.99),
    pageP50Ms: quantile(api, 0.5),
    sqlPageP50Ms: quantile(direct, 0.5),
    edgeCpuMsPerPage: edgeCpuPerPage,
    edgeRssMiB: memory.rssMiB,
    edgePeakRssMiB: memory.peakRssMiB,
  });
} finally {
  await edge.stop();
  // MILLWRIGHT_BENCH_EDGE_STDOUT=<file>: the edge's standard output, where V8's traces go
  // (`MILLWRIGHT_CHILD_NODE_ARGS=--trace-gc-nvp`: each collection's phases, on the main thread).
  if (process.env.MILLWRIGHT_BENCH_EDGE_STDOUT)
    writeFileSync(process.env.MILLWRIGHT_BENCH_EDGE_STDOUT, edge.output());
  setTimeout(() => rmSync(dataDir, { recursive: true, force: true }), 500);
}
