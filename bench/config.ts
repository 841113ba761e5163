/**
 * bench/config: configuration templates at scale. A template of 100,000 tags on 100 devices
 * (Generator driver) is uploaded through a session and applied to an empty edge; then the
 * configuration is exported, the template previewed, and a template that changes every tag applied
 * (`use`). Beside them, the floor: the same 100,000 rows inserted directly into a fresh database
 * with the DeviceHub's repository in one transaction (this process, no HTTP, no checks).
 *
 * The edge runs as its own process (`millwright edge`, HTTPS); the client is `EdgeConfigClient`.
 *
 *   npm run bench -- config [--devices 100] [--tags-per-device 1000] [--short]
 *
 * `--short` (for `npm run bench -- summary`): the same 100,000 tags, without the second apply.
 *
 * The export's floor (after the edge has stopped, on its database file): the export's work with no
 * Millwright code around it, step by step: the SQLite read of the exported columns, their JSON
 * text, gzip and the client's `JSON.parse`; their sum is the `exportFloorSeconds` figure.
 *
 * The export and the preview are timed after the edge has settled from the apply (its CPU under a
 * tenth of a core over one second; the first poll of 100,000 tags falls in between otherwise).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import SQLite from 'better-sqlite3';
import { runCliJson, startCli } from '../test/helpers/cli.js';
import { EdgeClient, EdgeConfigClient } from '../src/client/index.js';
import { Database } from '../src/kernel/db/index.js';
import { uuidv7 } from '../src/kernel/ids.js';
import { devicehubMigrations } from '../src/edge/devicehub/index.js';
import { DevicehubRepository } from '../src/edge/devicehub/repository.js';
import { numArg as arg, reportFigures, SHORT } from './support.js';

const deviceCount = arg('devices', 100);
const tagsPerDevice = arg('tags-per-device', 1000);
const total = deviceCount * tagsPerDevice;
const dataDir = mkdtempSync(join(tmpdir(), 'mw-bench-config-'));
const env = {
  ...process.env,
  MILLWRIGHT_EDGE_DATA_DIR: dataDir,
  MILLWRIGHT_EDGE_ADMIN_PASSWORD: 'bench-admin-password',
  MILLWRIGHT_EDGE_DATAHUB_PORT: '0',
  MILLWRIGHT_EDGE_DATAHUB_HOST: '127.0.0.1',
};

function template(description: string): string {
  return JSON.stringify({
    format: 'millwright.config-template',
    version: 1,
    sections: {
      devicehub: {
        devices: Array.from({ length: deviceCount }, (_, d) => ({
          Name: `dev-${d}`,
          DriverID: 'Generator',
          Tags: Array.from({ length: tagsPerDevice }, (_, i) => ({
            TagName: `tag-${i}`,
            Name: 'S',
            ValueType: 'float64',
            Description: description,
            IntervalMs: 60_000,
            Properties: { address: String(i) },
          })),
        })),
      },
    },
  });
}

const secs = (ms: number) => (ms / 1000).toFixed(2);
const rows: Array<[string, string, string, string, string]> = [];
/** Seconds per step, for `bench/summary`. */
const seconds: Record<string, number> = {};
let edgePid = 0;
/** CPU milliseconds (user + system) of process `pid` so far, from /proc (0 where there is none). */
function procCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, in ticks of 1/100 s
  } catch {
    return 0;
  }
}
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/**
 * Runs one step: its wall seconds, and the CPU milliseconds the edge process and this client
 * spent in it (CPU time is what a loaded machine does not inflate much; wall time is).
 */
const time = async <T>(label: string, target: string, fn: () => Promise<T>, key?: string): Promise<T> => {
  const t0 = performance.now();
  const e0 = edgePid ? procCpuMs(edgePid) : 0;
  const c0 = cpuMs();
  const out = await fn();
  const wall = performance.now() - t0;
  const edgeCpu = edgePid ? (procCpuMs(edgePid) - e0).toFixed(0) : '';
  const clientCpu = (cpuMs() - c0).toFixed(0);
  rows.push([label, secs(wall), edgeCpu, clientCpu, target]);
  if (key) seconds[key] = wall / 1000;
  process.stderr.write(`${label}: ${secs(wall)} s (CPU ms: edge ${edgeCpu}, client ${clientCpu})\n`);
  return out;
};

/** Waits until process `pid` uses under a tenth of a core over one second (at most 60 s): ms waited. */
async function settle(pid: number): Promise<number> {
  const t0 = performance.now();
  let last = procCpuMs(pid);
  while (performance.now() - t0 < 60_000) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = procCpuMs(pid);
    if (now - last < 100) break;
    last = now;
  }
  return performance.now() - t0;
}

const client = runCliJson(['edge', 'api-client', 'create', '--name', 'bench'], env);
const edge = await startCli(['edge', '--port', '0', '--host', '127.0.0.1', '--log-level', 'warn'], {
  env,
  inheritStderr: true,
  // A start takes seconds on a quiet machine, and more than the default 30 s at load 25.
  timeoutMs: 180_000,
});
edgePid = edge.pid;
const api = new EdgeClient({
  url: edge.ready.services.edge!.url,
  credentials: { clientId: client.client_id, clientSecret: client.client_secret },
  insecure: true,
  timeoutMs: 300_000,
});
const config = new EdgeConfigClient(api);
try {
  const first = template('first');
  const sizeMiB = (Buffer.byteLength(first) / 1048576).toFixed(1);
  await time(
    `apply ${total.toLocaleString('en')} tags to an empty edge (upload ${sizeMiB} MiB + apply)`,
    '< 30 s',
    () => config.apply(first, { mode: 'legacy' }),
    'applySeconds',
  );
  // The apply starts polling the 100,000 tags: their first reads (acquisition, history, DataHub)
  // take the edge's main thread for seconds. The export is timed once that has passed (the edge's
  // CPU under a tenth of a core over one second, at most 60 s of waiting), so that the figure is
  // the export's and not the apply's aftermath; the wait is printed.
  const settled = await settle(edgePid);
  process.stderr.write(`edge settled after the apply in ${secs(settled)} s\n`);
  const exported = await time('export (every section)', '< 5 s', () => config.export(), 'exportSeconds');
  const count = (exported.sections as any).devicehub.devices.reduce(
    (n: number, d: any) => n + d.Tags.length,
    0,
  );
  if (count !== total) throw new Error(`exported ${count} tags, expected ${total}`);
  const second = template('second');
  const saved = await config.apply<{ template: { id: string } }>(second, { name: 'bench', saveOnly: true });
  const preview = await time(
    'preview (every tag changed)',
    '< 5 s',
    () => api.rest('POST', `/config/templates/${saved.template.id}/preview`, { mode: 'use' }),
    'previewSeconds',
  );
  if (preview.sections.devicehub.changed.length !== total)
    throw new Error('preview did not see every tag changed');
  if (!SHORT)
    await time(`apply, every one of ${total.toLocaleString('en')} tags changed (use)`, '< 30 s', () =>
      api.rest('POST', `/config/templates/${saved.template.id}/apply`, { mode: 'use' }),
    );
} finally {
  api.close();
  await edge.stop();
  edgePid = 0;
}

// The export's floor: its work with no Millwright code around it, in this process, on the edge's
// own database file (the 100,000 tags just applied): better-sqlite3 reading the exported columns of
// each device's registers (one statement a device, in the order of the (device_id, id) index, so
// that no sort is needed and a device's rows die young) and writing their JSON text at once (each
// stored string quoted by JSON.stringify, each stored object text copied), encoded; gzip (level 1,
// what the store needs); the client's decode and JSON.parse of the document. No HTTP, no TLS, no
// checks, no placeholder escaping.
{
  const sqlite = new SQLite(join(dataDir, 'edge.db'), { readonly: true });
  let bytes = Buffer.alloc(0);
  let text = '';
  const floorReadText = () => {
    const q = JSON.stringify;
    const ids = sqlite.prepare('SELECT id FROM dh_device ORDER BY name').pluck().all() as string[];
    const read = sqlite
      .prepare(
        'SELECT id, name, tag_name, description, value_type, publish_cov, tag_formula, interval_ms, properties, metadata FROM dh_register WHERE device_id = ? ORDER BY id',
      )
      .raw();
    const pieces = ids.map((id) => {
      const tags = (read.all(id) as unknown[][]).map(
        (r) =>
          `{"ID":${q(r[0])},"TagName":${q(r[2])},"Name":${q(r[1])},"ValueType":${q(r[4])},"Description":${q(r[3])},"PublishCoV":${r[5] === 1},"TagFormula":${q(r[6])},"IntervalMs":${r[7] as number},"Properties":${r[8] as string},"MetaData":${r[9] as string}}`,
      );
      return Buffer.from(`{"ID":${q(id)},"Tags":[${tags.join(',')}]}`, 'utf8');
    });
    bytes = Buffer.concat([
      Buffer.from('{"devices":['),
      ...pieces.flatMap((p, i) => (i ? [Buffer.from(','), p] : [p])),
      Buffer.from(']}'),
    ]);
  };
  const floorParts: Array<[string, () => unknown]> = [
    ['read the exported columns of 100,000 rows, write their JSON text (UTF-8)', floorReadText],
    ['gzip level 1 of that text', () => gzipSync(bytes, { level: 1 })],
    ["the client's decode and JSON.parse of it", () => JSON.parse((text = bytes.toString('utf8')))],
  ];
  let floorSum = 0;
  for (const [label, fn] of floorParts) {
    const t0 = performance.now();
    await time(`export floor: ${label}`, '', async () => fn());
    floorSum += performance.now() - t0;
  }
  if (text.length === 0) throw new Error('the floor wrote no text');
  rows.push(['export floor: the three steps above, one after the other', secs(floorSum), '', '', '']);
  process.stderr.write(`export floor: ${secs(floorSum)} s (${bytes.length} bytes)\n`);
  seconds.exportFloorSeconds = floorSum / 1000;
  sqlite.close();
}

// The floor: the rows inserted directly, one transaction, no checks, no HTTP.
const floorDir = mkdtempSync(join(tmpdir(), 'mw-bench-config-floor-'));
const db = Database.open({ sqlitePath: join(floorDir, 'floor.db') });
await db.migrate([devicehubMigrations]);
const repo = new DevicehubRepository(db);
await time(
  `floor: ${total.toLocaleString('en')} rows inserted directly (repository, one transaction)`,
  '',
  async () => {
    const now = Date.now();
    await db.transaction(async (trx) => {
      for (let d = 0; d < deviceCount; d++) {
        const id = uuidv7(now);
        await repo.insertDevice(
          {
            id,
            name: `dev-${d}`,
            driver_id: 'x',
            description: '',
            properties: '{}',
            metadata: '{}',
            dh_params: '[]',
            worker_params: '[]',
            alias_topics: 0,
            debug: 0,
            created_at: now,
            updated_at: now,
          },
          trx as never,
        );
        await repo.insertRegisters(
          Array.from({ length: tagsPerDevice }, (_, i) => ({
            id: uuidv7(now),
            device_id: id,
            name: 'S',
            tag_name: `tag-${i}`,
            description: 'first',
            value_type: 'float64',
            publish_cov: 0,
            tag_formula: '',
            interval_ms: 60_000,
            properties: `{"address":"${i}"}`,
            metadata: '{}',
            created_at: now,
            updated_at: now,
          })),
          trx as never,
        );
      }
    });
  },
  'floorSeconds',
);
await db.close();
rmSync(floorDir, { recursive: true, force: true });
rmSync(dataDir, { recursive: true, force: true });

console.log(
  `\nbench/config: ${deviceCount} devices x ${tagsPerDevice} tags, ${cpus().length} cores (${cpus()[0]?.model ?? '?'})\n`,
);
console.log('| step | seconds | edge CPU ms | client CPU ms | target |');
console.log('|---|---:|---:|---:|---|');
for (const [label, s, edgeCpu, clientCpu, target] of rows)
  console.log(`| ${label} | ${s} | ${edgeCpu} | ${clientCpu} | ${target} |`);
reportFigures({ tags: total, ...seconds });
