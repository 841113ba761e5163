/**
 * The DeviceHub section's export read from the tables: devices by name, each with its tags by ID,
 * as template objects (`config-section.ts`), and the rows they were made of, for a diff.
 */
import { findDriver } from './catalogue/index.js';
import type { TemplateDevice, TemplateTag } from './config-section.js';
import type { DeviceRow, DevicehubRepository, ExportArray, RegisterArray } from './repository.js';
import { isStringifiedObject } from './json-canonical.js';
import { parseJson } from './rows.js';
import type { Param } from './types.js';

/** What an export reads: the devices by name, and each one's registers (as arrays) by ID. */
export interface ExportRead {
  devices: DeviceRow[];
  tags: RegisterArray[][];
}

const byName = (a: DeviceRow, b: DeviceRow): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export async function readExport(repo: DevicehubRepository): Promise<ExportRead> {
  const devices = await repo.getDevices();
  devices.sort(byName);
  const index = new Map(devices.map((d, i) => [d.id, i]));
  const tags: RegisterArray[][] = devices.map(() => []);
  for (const r of await repo.registerArrays()) {
    const i = index.get(r[1]);
    if (i !== undefined) tags[i]!.push(r);
  }
  return { devices, tags };
}

export const exportDevice = (d: DeviceRow, tags: RegisterArray[]): TemplateDevice => ({
  ...deviceOut(d),
  Tags: tags.map(tagOut),
});

function deviceOut(d: DeviceRow): Omit<TemplateDevice, 'Tags'> {
  return {
    ID: d.id,
    Name: d.name,
    DriverID: findDriver(d.driver_id)?.id ?? d.driver_id,
    Description: d.description,
    Properties: parseJson(d.properties) as Record<string, string>,
    MetaData: parseJson(d.metadata) as Record<string, unknown>,
    DHParams: parseJson(d.dh_params || '[]') as Param[],
    WorkerParams: parseJson(d.worker_params || '[]') as Param[],
    AliasTopics: d.alias_topics === 1,
    Debug: d.debug === 1,
  };
}

function tagOut(r: RegisterArray): TemplateTag {
  return {
    ID: r[0],
    TagName: r[3],
    Name: r[2],
    ValueType: r[5],
    Description: r[4],
    PublishCoV: r[6] === 1,
    TagFormula: r[7],
    IntervalMs: r[8],
    Properties: objectText(r[9]) as Record<string, string>,
    MetaData: objectText(r[10]),
  };
}

/** A JSON object column as `parseJson` reads it; `{}` (most metadata) without parsing. */
const objectText = (text: string): Record<string, unknown> =>
  text === '{}' ? {} : (parseJson(text) as Record<string, unknown>);

/**
 * `JSON.stringify` replacer that escapes every `{{` of a string value as `\{{` (keys stay): the
 * same text as `JSON.stringify(escapePlaceholders(value))` of the configuration service, for data
 * read from JSON (no `toJSON`, no class instances).
 */
const escapeReplacer = (_key: string, value: unknown): unknown =>
  typeof value === 'string' && value.includes('{{') ? value.replace(/\{\{/g, '\\{{') : value;

/**
 * A string that `JSON.stringify` writes as it is between quotes: no quote, backslash, control
 * character or surrogate (a pair would be written as it is too, but the test stays simple).
 */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON.stringify escapes
const PLAIN = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/**
 * A string value as JSON text, `{{` escaped (a column read as something else: as it is). A plain
 * string (most names, IDs, types) is quoted without `JSON.stringify`.
 */
const str = (text: string): string =>
  typeof text !== 'string'
    ? String(JSON.stringify(text, escapeReplacer))
    : text.includes('{{')
      ? JSON.stringify(text.replace(/\{\{/g, '\\{{'))
      : PLAIN.test(text)
        ? `"${text}"`
        : JSON.stringify(text);

/**
 * A JSON object column as JSON text (`objectText`, escaped, stringified); `{}` as it is. A text
 * without `{{` (outside strings there is none) and without `\u` escapes has no `{{` to escape:
 * stringified without the replacer, which would take `JSON.stringify` off its fast path; and when
 * it is already what `JSON.stringify` writes (as the edge stores it), copied as it is, without
 * being parsed and written again (`isStringifiedObject`).
 */
const objectJson = (text: string): string =>
  text === '{}'
    ? '{}'
    : text.includes('{{') || text.includes('\\u')
      ? JSON.stringify(parseJson(text), escapeReplacer)
      : isStringifiedObject(text)
        ? text
        : JSON.stringify(parseJson(text));

/** A value of a column that is not text (a number as read) as JSON, or undefined when omitted. */
const valueJson = (value: unknown): string | undefined => JSON.stringify(value, escapeReplacer);

/** One tag as the JSON text of `tagOut` (`{{` escaped), without its object. */
function tagJson(r: ExportArray): string {
  let out = `{"ID":${str(r[0])},"TagName":${str(r[3])},"Name":${str(r[2])},"ValueType":${str(r[5])}`;
  out += `,"Description":${str(r[4])},"PublishCoV":${r[6] === 1},"TagFormula":${str(r[7])}`;
  const interval = typeof r[8] === 'number' && Number.isFinite(r[8]) ? String(r[8]) : valueJson(r[8]);
  if (interval !== undefined) out += `,"IntervalMs":${interval}`;
  return `${out},"Properties":${objectJson(r[9])},"MetaData":${objectJson(r[10])}}`;
}

/** One device as JSON text (`{{` escaped), its tags' texts given. */
function deviceJson(d: DeviceRow, tags: string[]): string {
  const head = JSON.stringify(deviceOut(d), escapeReplacer);
  return `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"Tags":[${tags.join(',')}]}`;
}

/** Registers one batch of `exportText` reads at most (a device with more is read alone). */
export const EXPORT_BATCH_TAGS = 4096;
/** Devices in one batch at most (the length of its `IN` list). */
const EXPORT_BATCH_DEVICES = 500;

/**
 * The section's export as JSON text, `{{` escaped: byte for byte
 * `JSON.stringify(escapePlaceholders({ devices: read.devices.map(exportDevice) }))` of
 * `readExport`'s rows, written from the rows without the template objects of the 100,000 tags and
 * read a batch of devices at a time (`eachExportBatch`): each batch's rows become text at once and
 * are let go, so that a few thousand rows live at a time, not 100,000 (kept alive through every
 * young-generation collection of the read, they were half its time).
 */
export async function exportText(repo: DevicehubRepository): Promise<string> {
  const parts: string[] = [];
  await eachExportBatch(repo, (d, tags) => parts.push(deviceJson(d, tags.map(tagJson))));
  return `{"devices":[${parts.join(',')}]}`;
}

/**
 * `exportText` as UTF-8 bytes in pieces (a device's text at a time, encoded as soon as written): no
 * string of the whole section to join and encode again. `each` is handed every piece as it is made.
 */
export async function exportBytes(
  repo: DevicehubRepository,
  each: (piece: Buffer) => void = () => undefined,
): Promise<Buffer[]> {
  const pieces: Buffer[] = [];
  const push = (piece: Buffer) => {
    pieces.push(piece);
    each(piece);
  };
  push(Buffer.from('{"devices":[', 'utf8'));
  const comma = Buffer.from(',', 'utf8');
  await eachExportBatch(repo, (d, tags) => {
    if (pieces.length > 1) push(comma);
    push(Buffer.from(deviceJson(d, tags.map(tagJson)), 'utf8'));
  });
  push(Buffer.from(']}', 'utf8'));
  return pieces;
}

/**
 * Hands every device (in name order, as `readExport`) with its registers (by ID, the exported
 * columns) to `each`, reading a batch of devices at a time: a batch's rows are let go once handed.
 */
export async function eachExportBatch(
  repo: DevicehubRepository,
  each: (device: DeviceRow, tags: ExportArray[]) => void,
): Promise<void> {
  const devices = await repo.getDevices();
  devices.sort(byName);
  const counts = new Map(await repo.registerCounts());
  let batch: DeviceRow[] = [];
  let size = 0;
  const flush = async (): Promise<void> => {
    const index = new Map(batch.map((d, i) => [d.id, i]));
    const tags: ExportArray[][] = batch.map(() => []);
    for (const r of await repo.exportArrays(batch.map((d) => d.id))) {
      const i = index.get(r[1]);
      if (i !== undefined) tags[i]!.push(r);
    }
    for (const [i, d] of batch.entries()) each(d, tags[i]!);
    batch = [];
    size = 0;
  };
  for (const d of devices) {
    const n = counts.get(d.id) ?? 0;
    if (batch.length > 0 && (size + n > EXPORT_BATCH_TAGS || batch.length >= EXPORT_BATCH_DEVICES))
      await flush();
    batch.push(d);
    size += n;
  }
  if (batch.length > 0) await flush();
}
