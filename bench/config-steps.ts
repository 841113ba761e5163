/**
 * bench/config-steps: the CPU time of each step of a configuration export and preview of 100,000
 * tags, in this process (no HTTP, no other sections than the DeviceHub's): what `bench/config`
 * measures end to end, split. CPU time (`process.cpuUsage`), not wall time, so that a loaded
 * machine moves it little; each step is run `--rounds` times, the median printed.
 *
 *   npm run bench -- config-steps [--devices 100] [--tags-per-device 1000] [--rounds 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Database } from '../src/kernel/db/index.js';
import { configMigrations, ConfigService, type TemplateDocument } from '../src/edge/config/index.js';
import {
  devicehubMigrations,
  DevicehubConfigSection,
  type DeviceHubService,
} from '../src/edge/devicehub/index.js';
import { DevicehubRepository } from '../src/edge/devicehub/repository.js';
import { numArg as arg } from './support.js';

const deviceCount = arg('devices', 100);
const tagsPerDevice = arg('tags-per-device', 1000);
const rounds = arg('rounds', 3);

function template(description: string): TemplateDocument {
  return {
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
  } as TemplateDocument;
}

const dir = mkdtempSync(join(tmpdir(), 'mw-bench-config-steps-'));
const db = Database.open({ sqlitePath: join(dir, 'edge.db') });
await db.migrate([devicehubMigrations, configMigrations]);
const repo = new DevicehubRepository(db);
const service = { committed: () => undefined } as unknown as DeviceHubService;
const section = new DevicehubConfigSection(repo, service);
const config = new ConfigService({ database: db, sections: () => [section] });

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const results = new Map<string, number[]>();
async function step<T>(label: string, fn: () => Promise<T> | T): Promise<T> {
  const t0 = cpuMs();
  const out = await fn();
  const list = results.get(label) ?? [];
  list.push(cpuMs() - t0);
  results.set(label, list);
  return out;
}

await config.apply(template('first'));
const saved = await config.saveTemplate(template('second'), { name: 'second' });
for (let r = 0; r < rounds; r++) {
  // Export: what `EdgeConfigClient.export` asks of the edge (save the current configuration, download it).
  await step('export: DeviceHub section (SQL + rows + objects)', () => section.export());
  const made = await step('export: whole (createFromCurrent)', () =>
    config.createFromCurrent({ name: `export ${r}` }),
  );
  const pieces = await step('export: download (unpack)', () => config.download(made.id));
  await config.deleteTemplate(made.id);
  if (pieces.reduce((n, p) => n + p.length, 0) < 1000) throw new Error('short export');
  // Preview: load the saved template, check it, export the current configuration, diff.
  const { doc } = await step('preview: load (unpack + parse)', () => config.load(saved.id));
  const answer = await step('preview: whole (preview)', () => config.preview(doc, { mode: 'use' }));
  await step('preview: answer as JSON', () => JSON.stringify(answer));
  const again = (await config.load(saved.id)).doc;
  await step('preview: prepare (envelope, secrets, parameters, validate)', () =>
    config.prepare(again, { mode: 'use' }),
  );
}
await db.close();
rmSync(dir, { recursive: true, force: true });

const median = (l: number[]) => [...l].sort((a, b) => a - b)[Math.floor(l.length / 2)]!;
console.log(`\nbench/config-steps: ${deviceCount} x ${tagsPerDevice} tags, CPU ms, median of ${rounds}\n`);
console.log('| step | CPU ms |');
console.log('|---|---:|');
for (const [label, l] of results) console.log(`| ${label} | ${median(l).toFixed(0)} |`);
