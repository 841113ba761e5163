/**
 * `UploadCsv` and the CSV export. An upload validates every line on its own: a good line is
 * stored (created, or updated when the device already has a tag of that name), a bad line is
 * not touched at all and is reported with its line number and reason. A line is one row, so it is
 * applied whole or not at all.
 */
import { AppError, badRequest } from '../../kernel/errors.js';
import { Database } from '../../kernel/db/index.js';
import {
  FIXED_COLUMNS,
  PROPERTY_PREFIX,
  REQUIRED_COLUMNS,
  csvLine,
  parseCsv,
  type CsvRecord,
} from './csv.js';
import type { DeviceRow, DevicehubRepository, RegisterRow, RegisterWithDevice } from './repository.js';
import { buildRegisterRow } from './rows.js';
import type { CreateRegisterRequest } from './types.js';

export interface UploadLineDetail {
  Line: number;
  DeviceName: string;
  TagName: string;
  Reason: string;
}

export interface UploadStats {
  Total: number;
  Created: number;
  Updated: number;
  Failed: number;
}

export interface UploadStatus {
  Success: boolean;
  Stats: UploadStats;
  FailDetails: UploadLineDetail[];
  /** Deprecated (contract part 9): the FailDetails as `line N: reason` texts. */
  Warnings: string[];
}

/** Largest upload, in data lines. */
export const MAX_UPLOAD_LINES = 200_000;

/** A line's row to store, with its device. */
interface Planned {
  line: number;
  row: RegisterRow;
  device: DeviceRow;
}

type Fail = (line: number, deviceName: string, tagName: string, reason: string) => void;

export class CsvImporter {
  /** The tags a run stored (created or updated), with their device. */
  readonly stored: Array<{ id: string; deviceId: string }> = [];

  constructor(private readonly repo: DevicehubRepository) {}

  async run(text: string): Promise<UploadStatus> {
    const parsed = parseCsv(text);
    const [header, ...records] = parsed.records;
    if (!header) throw badRequest('the CSV is empty; the first line must name the columns');
    const columns = header.fields.map((c) => c.trim());
    for (const c of REQUIRED_COLUMNS) {
      if (!columns.includes(c))
        throw badRequest(
          `the CSV header lacks column "${c}"; columns: ${FIXED_COLUMNS.join(', ')}, Property.<name>...`,
        );
    }
    for (const c of columns) {
      if (!(FIXED_COLUMNS as readonly string[]).includes(c) && !c.startsWith(PROPERTY_PREFIX)) {
        throw badRequest(
          `the CSV header has unknown column ${JSON.stringify(c)}; columns: ${FIXED_COLUMNS.join(', ')}, Property.<name>...`,
        );
      }
    }
    if (records.length > MAX_UPLOAD_LINES)
      throw badRequest(`the CSV has ${records.length} lines; at most ${MAX_UPLOAD_LINES}`);

    const fails: UploadLineDetail[] = [];
    const fail = (line: number, deviceName: string, tagName: string, reason: string) =>
      fails.push({ Line: line, DeviceName: deviceName, TagName: tagName, Reason: reason });

    const { creates, updates } = await this.#plan(columns, records, fail);
    if (parsed.error) fail(parsed.error.line, '', '', parsed.error.reason);

    const { created, updated } = await this.#store(creates, updates, fail);
    fails.sort((a, b) => a.Line - b.Line);
    return {
      Success: fails.length === 0,
      Stats: { Total: records.length, Created: created, Updated: updated, Failed: fails.length },
      FailDetails: fails,
      Warnings: fails.map((f) => `line ${f.Line}: ${f.Reason}`),
    };
  }

  /** The rows the lines make (created or updated); a bad line is reported and makes none. */
  async #plan(
    columns: string[],
    records: CsvRecord[],
    fail: Fail,
  ): Promise<{ creates: Planned[]; updates: Planned[] }> {
    const col = (name: string) => columns.indexOf(name);
    const at = (fields: string[], name: string) => {
      const i = col(name);
      return i < 0 ? undefined : fields[i];
    };

    // Devices named in the file, and their existing tags.
    const deviceNames = [
      ...new Set(records.map((r) => (at(r.fields, 'DeviceName') ?? '').trim()).filter((n) => n !== '')),
    ];
    const devices = new Map((await this.repo.getDevicesByNames(deviceNames)).map((d) => [d.name, d]));
    const existing = new Map<string, RegisterRow>();
    for (const r of await this.repo.registersOfDevices([...devices.values()].map((d) => d.id))) {
      existing.set(`${r.device_id}\u0000${r.tag_name}`, r);
    }

    const creates: Array<{ line: number; row: RegisterRow; device: DeviceRow }> = [];
    const updates: Array<{ line: number; row: RegisterRow; device: DeviceRow }> = [];
    const lineOf = new Map<string, number>();
    const now = Date.now();
    for (const rec of records) {
      const f = rec.fields;
      const deviceName = (at(f, 'DeviceName') ?? '').trim();
      const tagName = (at(f, 'TagName') ?? '').trim();
      if (f.length !== columns.length) {
        fail(
          rec.line,
          deviceName,
          tagName,
          `the line has ${f.length} fields; the header has ${columns.length}`,
        );
        continue;
      }
      const device = devices.get(deviceName);
      if (!device) {
        fail(
          rec.line,
          deviceName,
          tagName,
          deviceName ? `device ${JSON.stringify(deviceName)} does not exist` : 'DeviceName is empty',
        );
        continue;
      }
      try {
        const input = lineInput(columns, f, device.id);
        const key = `${device.id}\u0000${tagName}`;
        const first = lineOf.get(key);
        if (first !== undefined) {
          throw badRequest(
            `tag ${JSON.stringify(tagName)} of device ${JSON.stringify(deviceName)} is already on line ${first}`,
          );
        }
        const row = buildRegisterRow(device, input, undefined, now);
        lineOf.set(key, rec.line);
        const old = existing.get(key);
        if (old) {
          row.id = old.id;
          row.created_at = old.created_at;
          updates.push({ line: rec.line, row, device });
        } else {
          creates.push({ line: rec.line, row, device });
        }
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        fail(rec.line, deviceName, tagName, err.message);
      }
    }
    return { creates, updates };
  }

  /** Stores the rows in one transaction; when another request wrote the same tags, line by line. */
  async #store(
    creates: Planned[],
    updates: Planned[],
    fail: Fail,
  ): Promise<{ created: number; updated: number }> {
    let created = 0;
    let updated = 0;
    try {
      await this.repo.transaction(async (trx) => {
        await this.repo.insertRegisters(
          creates.map((c) => c.row),
          trx,
        );
        for (const u of updates) await this.repo.updateRegister(u.row, trx);
      });
      created = creates.length;
      updated = updates.length;
      for (const c of [...creates, ...updates]) this.stored.push({ id: c.row.id, deviceId: c.row.device_id });
    } catch (err) {
      // Someone wrote the same tags meanwhile: store line by line, reporting the lines that clash.
      if (!Database.isUniqueViolation(err)) throw err;
      for (const c of creates) {
        try {
          await this.repo.insertRegisters([c.row]);
          created++;
          this.stored.push({ id: c.row.id, deviceId: c.row.device_id });
        } catch (e) {
          if (!Database.isUniqueViolation(e)) throw e;
          fail(
            c.line,
            c.device.name,
            c.row.tag_name,
            `tag ${JSON.stringify(c.row.tag_name)} of device ${JSON.stringify(c.device.name)} was created by another request meanwhile`,
          );
        }
      }
      for (const u of updates) {
        await this.repo.updateRegister(u.row);
        updated++;
        this.stored.push({ id: u.row.id, deviceId: u.row.device_id });
      }
    }
    return { created, updated };
  }
}

function lineInput(columns: string[], fields: string[], deviceId: string): CreateRegisterRequest {
  const get = (name: string) => {
    const i = columns.indexOf(name);
    return i < 0 ? '' : (fields[i] ?? '');
  };
  const interval = get('IntervalMs').trim();
  let intervalMs: number | null = null;
  if (interval !== '') {
    intervalMs = /^\d+$/.test(interval) ? Number(interval) : NaN;
    if (!Number.isSafeInteger(intervalMs)) {
      throw badRequest(
        `tag ${JSON.stringify(get('TagName'))}: IntervalMs ${JSON.stringify(interval)} is not allowed; allowed values: integers`,
      );
    }
  }
  const cov = get('PublishCoV').trim().toLowerCase();
  if (!['', 'true', 'false', '1', '0'].includes(cov)) {
    throw badRequest(
      `tag ${JSON.stringify(get('TagName'))}: PublishCoV ${JSON.stringify(get('PublishCoV'))} is not allowed; allowed values: true, false`,
    );
  }
  const properties: Array<{ Name: string; Value: string }> = [];
  for (const [i, c] of columns.entries()) {
    if (!c.startsWith(PROPERTY_PREFIX)) continue;
    const v = fields[i] ?? '';
    if (v !== '') properties.push({ Name: c.slice(PROPERTY_PREFIX.length), Value: v });
  }
  return {
    DeviceID: deviceId,
    TagName: get('TagName').trim(),
    Name: get('Name').trim(),
    ValueType: get('ValueType').trim(),
    Description: get('Description'),
    IntervalMs: intervalMs,
    PublishCoV: cov === 'true' || cov === '1',
    TagFormula: get('TagFormula'),
    Properties: properties,
    MetaData: get('MetaData'),
  };
}

/** All given tags as CSV in the upload format; properties as `Property.<name>` columns. */
export function exportCsv(rows: RegisterWithDevice[]): string {
  const propNames: string[] = [];
  const known = new Set<string>();
  const parsed = rows.map((r) => {
    const props = JSON.parse(r.properties) as Record<string, string>;
    for (const k of Object.keys(props)) {
      if (!known.has(k)) {
        known.add(k);
        propNames.push(k);
      }
    }
    return props;
  });
  const lines = [csvLine([...FIXED_COLUMNS, ...propNames.map((p) => `${PROPERTY_PREFIX}${p}`)])];
  for (const [i, r] of rows.entries()) {
    const props = parsed[i]!;
    const meta = r.metadata && r.metadata !== '{}' ? r.metadata : '';
    lines.push(
      csvLine([
        r.device_name,
        r.tag_name,
        r.name,
        r.value_type,
        r.description,
        String(r.interval_ms),
        r.publish_cov === 1 ? 'true' : 'false',
        r.tag_formula,
        meta,
        ...propNames.map((p) => props[p] ?? ''),
      ]),
    );
  }
  return lines.join('\r\n') + '\r\n';
}
