/**
 * The configuration export written as text (`ConfigService.exportText`, the DeviceHub's
 * `exportJson`): byte for byte the JSON text of the document made of objects
 * (`JSON.stringify(exportDocument())`), placeholders escaped, odd strings and metadata included;
 * a saved export downloads as those bytes and parses back to the same document.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEdgeApp, edgeConfigWith, type EdgeShell } from '../../src/edge/service.js';
import type { DevicehubSection } from '../../src/edge/devicehub/config-section.js';
import { escapePlaceholders } from '../../src/edge/config/document.js';
import { EXPORT_BATCH_TAGS } from '../../src/edge/devicehub/config-export.js';
import { exportBytes } from '../../src/edge/config/export.js';
import { Packer, unpackBytes } from '../../src/edge/config/repository.js';

let shell: EdgeShell;
const dataDir = mkdtempSync(join(tmpdir(), 'mw-config-export-text-'));

after(async () => {
  await shell?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const ODD = 'quote " back \\ tab \t line \n nul-ish \u0001 sep \u2028 é ☃ 😀 {{x}} {{{';

const PLAIN_ODD = 'quote " back \\ tab \t line \n nul-ish \u0001 sep \u2028 é ☃ 😀 x}} {x';

const doc: DevicehubSection = {
  devices: [
    {
      Name: 'zeta',
      DriverID: 'Generator',
      Description: `a device {{Device}} ${ODD}`,
      MetaData: { site: 'B {{Site}}', '10': 'an index key', nested: { list: [1, 'x{{y', true, null] } },
      AliasTopics: true,
      Tags: [
        {
          TagName: 'b-two',
          Name: 'S',
          ValueType: 'float64',
          Description: ODD,
          PublishCoV: true,
          TagFormula: 'value * 2',
          IntervalMs: 250,
          Properties: { address: '7' },
          MetaData: { unit: '°C', note: ODD, n: 1.5, deep: { a: [{ b: '{{c}}' }] }, '2': 'two', '1': 'one' },
        },
        {
          TagName: 'a',
          Name: 'S',
          ValueType: 'int32',
          Properties: { address: '9' },
          MetaData: { '{{k}}': 'v{{' },
        },
        // Odd strings without a placeholder: each written as JSON.stringify writes it.
        ...[PLAIN_ODD, 'q"', 'b\\', 'c\u0001', '😀', 'é ☃ \u2028', 'lone \ud800'].map((odd, i) => ({
          TagName: `odd-${i}`,
          Name: 'S',
          ValueType: 'int32',
          Description: odd,
          TagFormula: odd,
          Properties: { address: String(100 + i) },
          MetaData: { note: odd, [odd]: 'k', list: [odd, 1, -2, 0] },
        })),
      ],
    },
    { Name: 'alpha', DriverID: 'Generator', Tags: [] },
    {
      Name: 'mid',
      DriverID: 'Generator',
      Tags: Array.from({ length: 50 }, (_, i) => ({
        TagName: `t${i}`,
        Name: 'S',
        ValueType: 'float64',
        Description: i % 2 ? '' : `d${i}`,
        IntervalMs: 1000 + i,
        Properties: { address: String(i) },
      })),
    },
    // The text is read a batch of devices at a time: a device above a batch's tags (read alone),
    // and more devices than one batch holds, a few tags each, with none between.
    {
      Name: 'big',
      DriverID: 'Generator',
      Tags: Array.from({ length: EXPORT_BATCH_TAGS + 3 }, (_, i) => ({
        TagName: `b${i}`,
        Name: 'S',
        ValueType: 'float64',
        Properties: { address: String(i) },
      })),
    },
    ...Array.from({ length: 620 }, (_, d) => ({
      Name: `small-${String(d).padStart(3, '0')}`,
      DriverID: 'Generator',
      Tags: Array.from({ length: d % 4 }, (_, i) => ({
        TagName: `s${i}`,
        Name: 'S',
        ValueType: 'int32',
        Description: `{{d${d}}}`,
        Properties: { address: String(i) },
      })),
    })),
  ],
};

/** The text with its `createdAt` value made fixed (the two exports are made at different times). */
const fixed = (text: string) => text.replace(/"createdAt":"[^"]*"/, '"createdAt":"T"');

before(async () => {
  shell = await buildEdgeApp(
    edgeConfigWith({ dataDir, datahubGateway: false, opcuaEnabled: false, logLevel: 'error' }),
  );
  const section = shell.module('devicehub').configSection;
  assert.deepEqual(section.validate(doc), []);
  await shell.database.transaction((trx) =>
    section.apply(doc, {
      mode: 'legacy',
      trx,
      failFast: true,
      fail: (item, message) => assert.fail(`${item}: ${message}`),
      afterCommit: () => undefined,
      progress: () => undefined,
    }),
  );
});

test("the DeviceHub's exportJson is the JSON text of its escaped export, byte for byte", async () => {
  const section = shell.module('devicehub').configSection;
  const objects = JSON.stringify(escapePlaceholders(await section.export()));
  const text = await section.exportJson();
  assert.equal(text, objects);
  assert.ok(text.includes('\\\\{{'), 'placeholders are escaped');
});

test('exportText is the JSON text of exportDocument, byte for byte, every section', async () => {
  const config = shell.module('config');
  const objects = JSON.stringify(await config.exportDocument());
  const { text, sections } = await config.exportText();
  assert.equal(fixed(text), fixed(objects));
  assert.deepEqual(sections, Object.keys((await config.exportDocument()).sections));
});

test('exportBytes is the UTF-8 of exportText, each range a section; exportJsonBytes that of exportJson', async () => {
  const section = shell.module('devicehub').configSection;
  assert.equal(Buffer.concat(await section.exportJsonBytes!()).toString('utf8'), await section.exportJson!());
  const config = shell.module('config');
  const { text, sections } = await config.exportText();
  const out = await exportBytes(shell.sections());
  const bytes = Buffer.concat(out.pieces);
  assert.equal(out.size, bytes.length);
  assert.equal(fixed(bytes.toString('utf8')), fixed(text));
  assert.deepEqual(out.sections, sections);
  const parsed = JSON.parse(bytes.toString('utf8')) as { sections: Record<string, unknown> };
  assert.deepEqual(
    out.ranges.map(([start, end]) => JSON.parse(bytes.toString('utf8', start, end)) as unknown),
    Object.values(parsed.sections),
  );
});

test('the pieces exportBytes hands out as it writes them are its bytes, in order', async () => {
  const handed: Buffer[] = [];
  const out = await exportBytes(shell.sections(), (piece) => handed.push(piece));
  assert.ok(handed.length > 3, 'the DeviceHub hands its pieces');
  assert.ok(Buffer.concat(handed).equals(Buffer.concat(out.pieces)));
});

test('a Packer stores its pieces as gzip members that unpack to them, in order', async () => {
  // 5.6 MiB in pieces of different sizes and contents: several members of about 1 MiB.
  const pieces = Array.from({ length: 40 }, (_, i) =>
    Buffer.from(
      `<${i}:${'x'.repeat(1000 + 997 * i)}${String(i).repeat(50 * i)}>`.repeat(1 + (i % 3)),
      'utf8',
    ),
  );
  const packer = new Packer();
  for (const p of pieces) packer.add(p);
  packer.add(Buffer.alloc(0));
  const whole = Buffer.concat(pieces);
  const stored = await packer.done();
  assert.ok((await unpackBytes(stored, whole.length)).equals(whole));
  assert.ok((await unpackBytes(stored)).equals(whole));
  assert.equal(await new Packer().done(), '');
});

test('an export downloads the same from its kept bytes and from the store; a deleted one not at all', async () => {
  const config = shell.module('config');
  const saved = await config.createFromCurrent({ name: 'export twice' });
  const first = Buffer.concat(await config.download(saved.id));
  const second = Buffer.concat(await config.download(saved.id));
  assert.ok(first.length > 1000);
  assert.equal(first.toString(), second.toString());
  const again = await config.createFromCurrent({ name: 'export deleted' });
  await config.deleteTemplate(again.id);
  await assert.rejects(config.download(again.id), /not found/);
  await config.deleteTemplate(saved.id);
});

test('a saved export downloads as the bytes of its text and reads back as the same document', async () => {
  const config = shell.module('config');
  const saved = await config.createFromCurrent({ name: 'export' });
  const text = Buffer.concat(await config.download(saved.id)).toString('utf8');
  assert.equal(fixed(text), fixed(JSON.stringify(await config.exportDocument())));
  assert.equal(saved.size, Buffer.byteLength(text));
  const { doc: loaded } = await config.load(saved.id);
  const preview = await config.preview(loaded, { mode: 'use' });
  assert.deepEqual(preview.sections.devicehub, { added: [], changed: [], removed: [], restarts: [] });
  await config.deleteTemplate(saved.id);
});

test('a diff over the stored rows (diffCurrent) is the diff of the export, in the same order', async () => {
  const section = shell.module('devicehub').configSection;
  const current = (await section.export()) as DevicehubSection;
  const copy = structuredClone(current);
  const byName = new Map(copy.devices.map((d) => [d.Name, d]));
  const big = byName.get('big')!;
  big.Tags![10]!.Description = 'changed';
  big.Tags!.splice(20, 1);
  big.Tags!.push({ TagName: 'new-tag', Name: 'S', ValueType: 'int32', Properties: { address: '1' } });
  byName.get('zeta')!.Description = 'another description';
  byName.get('small-007')!.Tags![0]!.MetaData = { unit: 'bar' };
  byName.get('small-011')!.Tags![1]!.Properties = { address: '99' };
  const next: DevicehubSection = {
    devices: [
      {
        Name: 'new-device',
        DriverID: 'Generator',
        Tags: [{ TagName: 'x', Name: 'S', ValueType: 'int16', Properties: { address: '0' } }],
      },
      ...copy.devices.filter((d) => d.Name !== 'alpha' && d.Name !== 'small-005').reverse(),
    ],
  };
  for (const mode of ['use', 'legacy', 'merge-apply'] as const) {
    const stored = await section.diffCurrent!(next, mode);
    assert.deepEqual(stored, section.diff(current, next, mode), mode);
    if (mode !== 'merge-apply') assert.ok(stored.changed.includes('big/' + big.Tags![10]!.TagName), mode);
  }
  const use = await section.diffCurrent!(next, 'use');
  assert.ok(use.removed.includes('alpha') && use.removed.includes('small-005'));
  assert.ok(use.added.includes('new-device') && use.added.includes('big/new-tag'));
  assert.ok(
    use.changed.includes('zeta') &&
      use.changed.includes('small-007/s0') &&
      use.changed.includes('small-011/s1'),
  );
});
