/**
 * The DeviceHub section's export read from the tables: devices by name, each with its tags by ID,
 * as template objects (`config-section.ts`), and the rows they were made of, for a diff.
 */
import { findDriver } from './catalogue/index.js';
import type { TemplateDevice, TemplateTag } from './config-section.js';
import type { DeviceRow, DevicehubRepository, RegisterArray } from './repository.js';
import { parseJson } from './rows.js';
import type { Param } from './types.js';

/** What an export reads: the devices by name, and each one's registers (as arrays) by ID. */
export interface ExportRead {
  devices: DeviceRow[];
  tags: RegisterArray[][];
}

export async function readExport(repo: DevicehubRepository): Promise<ExportRead> {
  const devices = await repo.getDevices();
  devices.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
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
