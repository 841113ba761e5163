/**
 * The DeviceHub's domain: drivers, devices and tags (registers), their validation against the
 * catalogue, paging, topics, tag state, and the CSV upload and export. No HTTP, no GraphQL: the
 * resolvers translate. Objects returned are in the wire shape (PascalCase), as the contract names
 * them.
 */
import { randomBytes } from 'node:crypto';
import { AppError, badRequest, conflict, notFound } from '../../kernel/errors.js';
import { Database } from '../../kernel/db/index.js';
import { parseListInput, runList, type ListDefinition, type ListInput } from '../../kernel/paging.js';
import { DRIVERS, findDriver, findDriverByIdOrName, type DriverDef } from './catalogue/index.js';
import { CsvImporter, exportCsv, type UploadStatus } from './upload.js';
import type {
  DeviceRow,
  DevicehubRepository,
  PatternOption,
  RegisterRow,
  RegisterWithDevice,
} from './repository.js';
import { topicsOf, type Topic } from './topics.js';
import { checkName, checkValueType, findRegister, resolveProperties } from './validation.js';

// ---------------------------------------------------------------------------------------------
// Wire shapes

export interface KeyValue {
  Key: string;
  Value: string;
}
export interface NameValue {
  Name: string;
  Value: string;
}
export interface Param {
  Name: string;
  Value: string;
  Description: string;
}

export interface Device {
  ID: string;
  Name: string;
  DriverID: string;
  DriverName: string;
  Description: string;
  Properties: KeyValue[];
  MetaData: Record<string, unknown>;
  DHParams: Param[];
  WorkerParams: Param[];
  AliasTopics: boolean;
  Debug: boolean;
  CreationTime: string;
  UpdateTime: string;
}

export interface Register {
  ID: string;
  DeviceID: string;
  DeviceName: string;
  Name: string;
  TagName: string;
  Description: string;
  ValueType: string;
  PublishCoV: boolean;
  TagFormula: string;
  IntervalMs: number;
  Properties: NameValue[];
  MetaData: Record<string, unknown>;
  Topics: Topic[];
  CreationTime: string;
}

export interface ParamInput {
  Name: string;
  Value?: string | null;
  Description?: string | null;
}

export interface CreateDeviceRequest {
  Name: string;
  DriverID: string;
  Description?: string | null;
  Properties?: Array<{ Key: string; Value?: string | null }> | null;
  MetaData?: unknown;
  DHParams?: ParamInput[] | null;
  WorkerParams?: ParamInput[] | null;
  AliasTopics?: boolean | null;
  Debug?: boolean | null;
}

export interface UpdateDeviceRequest extends Partial<CreateDeviceRequest> {
  ID: string;
}

export interface CreateRegisterRequest {
  DeviceID: string;
  Name: string;
  TagName: string;
  ValueType: string;
  Description?: string | null;
  PublishCoV?: boolean | null;
  TagFormula?: string | null;
  IntervalMs?: number | null;
  Properties?: Array<{ Name: string; Value?: string | null }> | null;
  MetaData?: unknown;
}

export interface UpdateRegisterRequest extends Partial<Omit<CreateRegisterRequest, 'DeviceID'>> {
  ID: string;
}

export interface ListRegistersRequest {
  DeviceID?: string | null;
  Limit?: number | null;
  SkipCount?: number | null;
  ContinueFrom?: string | null;
  TagPattern?: string | null;
  TagPatternSearchOption?: PatternOption | null;
}

export interface RegisterPage {
  TotalCount: number;
  Registers: Register[];
  /** ID of the last register of the page: send it back as `ContinueFrom` for the next page. */
  Last: string | null;
}

export type TagState = 'OK' | 'Failed' | 'Unknown';
export interface TagStatus {
  ID: string;
  DeviceID: string;
  TagName: string;
  State: TagState;
  Reason: string;
  UpdateTime: string | null;
}

export const DEFAULT_REGISTER_LIMIT = 100;
export const MAX_REGISTER_LIMIT = 1000;
export const DEFAULT_INTERVAL_MS = 1000;
export const MIN_INTERVAL_MS = 10;
export const MAX_INTERVAL_MS = 86_400_000;

const DEVICE_LIST: ListDefinition = {
  fields: {
    ID: 'dh_device.id',
    Name: 'dh_device.name',
    DriverID: 'dh_device.driver_id',
    Description: 'dh_device.description',
    AliasTopics: { column: 'dh_device.alias_topics', type: 'boolean' },
    Debug: { column: 'dh_device.debug', type: 'boolean' },
    CreationTime: { column: 'dh_device.created_at', type: 'integer', filterable: false },
  },
  tiebreak: 'dh_device.id',
  defaultSort: [{ field: 'Name', order: 'asc' }],
  defaultLimit: 50,
  maxLimit: 1000,
};

const DRIVER_LIST: ListDefinition = {
  fields: { Name: 'name', Protocol: 'protocol', Pollable: { column: 'pollable', type: 'boolean' } },
  tiebreak: 'id',
  defaultSort: [{ field: 'Name', order: 'asc' }],
  defaultLimit: 1000,
  maxLimit: 1000,
};

/**
 * Time-ordered UUID (RFC 9562 version 7, with a 12-bit counter in `rand_a` that keeps IDs made in
 * the same millisecond increasing): IDs sort in creation order, so keyset paging follows it.
 */
let lastMs = 0;
let counter = 0;
export function uuidv7(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    counter = randomBytes(2).readUInt16BE(0) & 0x3ff;
  } else if (++counter > 0xfff) {
    lastMs++;
    counter = 0;
  }
  const b = randomBytes(16);
  b.writeUIntBE(lastMs, 0, 6);
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const x = b.toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

const iso = (ms: number) => new Date(ms).toISOString();
const parseJson = (text: string): any => (text ? JSON.parse(text) : {});

export class DeviceHubService {
  readonly #tagState = new Map<string, { State: TagState; Reason: string; at: number }>();
  readonly #listeners = new Set<() => void>();

  constructor(readonly repo: DevicehubRepository) {}

  /**
   * Calls `listener` after every change of devices or tags made through this service (GraphQL,
   * CSV upload, browse selections), so that the acquisition engine follows without a restart.
   * Answers a function that removes the listener.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const l of this.#listeners) l();
  }

  // --- drivers

  listDrivers(input: ListInput | null | undefined): { Items: DriverDef[]; Total: number } {
    const spec = parseListInput(input, DRIVER_LIST);
    let items = [...DRIVERS];
    for (const c of spec.filter) {
      const get = (d: DriverDef): string | boolean =>
        c.field === 'Name' ? d.name : c.field === 'Protocol' ? d.protocol : d.pollable;
      items = items.filter((d) => {
        const v = get(d);
        const cv = c.value;
        switch (c.op) {
          case 'eq':
            return v === cv;
          case 'ne':
            return v !== cv;
          case 'contains':
            return String(v).toLowerCase().includes(String(cv).toLowerCase());
          case 'startswith':
            return String(v).toLowerCase().startsWith(String(cv).toLowerCase());
          case 'in':
            return (cv as unknown[]).includes(v);
          default:
            return true;
        }
      });
    }
    for (const key of [...spec.sort].reverse()) {
      const sign = key.order === 'desc' ? -1 : 1;
      items.sort((a, b) => {
        const va = key.field === 'Name' ? a.name : key.field === 'Protocol' ? a.protocol : String(a.pollable);
        const vb = key.field === 'Name' ? b.name : key.field === 'Protocol' ? b.protocol : String(b.pollable);
        return sign * va.localeCompare(vb);
      });
    }
    return { Items: items.slice(spec.offset, spec.offset + spec.limit), Total: items.length };
  }

  getDriver(idOrName: string): DriverDef {
    const d = findDriverByIdOrName(idOrName);
    if (!d) throw notFound(`driver ${JSON.stringify(idOrName)} not found`);
    return d;
  }

  // --- devices

  async createDevice(input: CreateDeviceRequest): Promise<Device> {
    const subject = `device ${JSON.stringify(input.Name ?? '')}`;
    const name = checkName(subject, 'Name', input.Name);
    const driver = this.#driverFor(subject, input.DriverID);
    const now = Date.now();
    const row: DeviceRow = {
      id: uuidv7(now),
      name,
      driver_id: driver.id,
      description: input.Description ?? '',
      properties: JSON.stringify(
        resolveProperties(
          subject,
          `driver "${driver.name}"`,
          driver.properties,
          devicePropertyInputs(input.Properties),
        ),
      ),
      metadata: JSON.stringify(metaData(subject, input.MetaData)),
      dh_params: JSON.stringify(params(subject, 'DHParams', input.DHParams)),
      worker_params: JSON.stringify(params(subject, 'WorkerParams', input.WorkerParams)),
      alias_topics: input.AliasTopics ? 1 : 0,
      debug: input.Debug ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.repo.insertDevice(row);
    } catch (err) {
      if (Database.isUniqueViolation(err))
        throw conflict(`${subject}: a device with this Name already exists`);
      throw err;
    }
    this.#changed();
    return deviceView(row);
  }

  async updateDevice(input: UpdateDeviceRequest): Promise<Device> {
    const existing = await this.repo.getDevice(input.ID);
    if (!existing) throw notFound(`device ${JSON.stringify(input.ID)} not found`);
    const subject = `device ${JSON.stringify(existing.name)}`;
    const row: DeviceRow = { ...existing, updated_at: Date.now() };
    if (input.Name !== undefined && input.Name !== null) row.name = checkName(subject, 'Name', input.Name);
    let driver = findDriver(existing.driver_id)!;
    let base = parseJson(existing.properties) as Record<string, string>;
    if (input.DriverID !== undefined && input.DriverID !== null) {
      const next = this.#driverFor(subject, input.DriverID);
      if (next.id !== driver.id) {
        const tags = await this.repo.countRegistersOfDevice(existing.id);
        if (tags > 0) {
          throw badRequest(
            `${subject}: DriverID cannot change from "${driver.name}" to "${next.name}" while the device has ${tags} tags; delete them first`,
          );
        }
        driver = next;
        base = {};
      }
    }
    row.driver_id = driver.id;
    row.properties = JSON.stringify(
      resolveProperties(
        subject,
        `driver "${driver.name}"`,
        driver.properties,
        devicePropertyInputs(input.Properties),
        base,
      ),
    );
    if (input.Description !== undefined && input.Description !== null) row.description = input.Description;
    if (input.MetaData !== undefined && input.MetaData !== null)
      row.metadata = JSON.stringify(metaData(subject, input.MetaData));
    if (input.DHParams) row.dh_params = JSON.stringify(params(subject, 'DHParams', input.DHParams));
    if (input.WorkerParams)
      row.worker_params = JSON.stringify(params(subject, 'WorkerParams', input.WorkerParams));
    if (input.AliasTopics !== undefined && input.AliasTopics !== null)
      row.alias_topics = input.AliasTopics ? 1 : 0;
    if (input.Debug !== undefined && input.Debug !== null) row.debug = input.Debug ? 1 : 0;
    try {
      await this.repo.updateDevice(row);
    } catch (err) {
      if (Database.isUniqueViolation(err))
        throw conflict(`${subject}: a device named ${JSON.stringify(row.name)} already exists`);
      throw err;
    }
    this.#changed();
    return deviceView(row);
  }

  async deleteDevices(ids: string[]): Promise<number> {
    if (ids.length > 1000) throw badRequest(`IDs takes at most 1000 values, got ${ids.length}`);
    const n = await this.repo.deleteDevices(ids);
    if (n > 0) this.#changed();
    return n;
  }

  async getDevice(id: string): Promise<Device | null> {
    const row = await this.repo.getDevice(id);
    return row ? deviceView(row) : null;
  }

  async listDevices(
    input: (ListInput & { IDs?: string[] | null }) | null | undefined,
  ): Promise<{ Items: Device[]; Total: number }> {
    const spec = parseListInput(input, DEVICE_LIST);
    const ids = input?.IDs ?? undefined;
    if (ids && ids.length > 1000) throw badRequest(`IDs takes at most 1000 values, got ${ids.length}`);
    const page = await runList(this.repo.database, this.repo.deviceListQuery(ids), DEVICE_LIST, spec);
    return { Items: page.items.map(deviceView), Total: page.total };
  }

  // --- registers

  async createRegister(input: CreateRegisterRequest): Promise<Register> {
    const [one] = await this.createRegisters([input]);
    return one!;
  }

  /** Creates all or none: the first refused input stops the call and nothing is stored. */
  async createRegisters(inputs: CreateRegisterRequest[]): Promise<Register[]> {
    if (inputs.length === 0) return [];
    if (inputs.length > 10000)
      throw badRequest(`CreateRegisters takes at most 10000 tags, got ${inputs.length}; use UploadCsv`);
    const devices = new Map<string, DeviceRow>();
    const seen = new Map<string, number>();
    const rows: RegisterRow[] = [];
    const now = Date.now();
    for (const [i, input] of inputs.entries()) {
      let device = devices.get(input.DeviceID);
      if (!device) {
        device = await this.repo.getDevice(input.DeviceID);
        if (!device)
          throw notFound(
            `tag ${JSON.stringify(input.TagName ?? '')}: device ${JSON.stringify(input.DeviceID)} not found`,
          );
        devices.set(device.id, device);
      }
      const row = buildRegisterRow(device, input, undefined, now);
      const key = `${device.id}\u0000${row.tag_name}`;
      const dup = seen.get(key);
      if (dup !== undefined) {
        throw conflict(
          `${tagSubject(row.tag_name, device.name)}: TagName is given twice (inputs ${dup + 1} and ${i + 1})`,
        );
      }
      seen.set(key, i);
      rows.push(row);
    }
    try {
      await this.repo.transaction((trx) => this.repo.insertRegisters(rows, trx));
    } catch (err) {
      if (Database.isUniqueViolation(err)) {
        const existing = await this.#firstExistingTag(rows);
        throw conflict(
          existing
            ? `${tagSubject(existing.tag_name, devices.get(existing.device_id)!.name)}: the device already has a tag with this TagName`
            : 'a tag with one of these TagNames already exists on its device',
        );
      }
      throw err;
    }
    this.#changed();
    return rows.map((r) =>
      registerView({
        ...r,
        device_name: devices.get(r.device_id)!.name,
        alias_topics: devices.get(r.device_id)!.alias_topics,
      }),
    );
  }

  async #firstExistingTag(rows: RegisterRow[]): Promise<RegisterRow | undefined> {
    const existing = await this.repo.registersOfDevices([...new Set(rows.map((r) => r.device_id))]);
    const names = new Set(existing.map((r) => `${r.device_id}\u0000${r.tag_name}`));
    return rows.find((r) => names.has(`${r.device_id}\u0000${r.tag_name}`));
  }

  async updateRegister(input: UpdateRegisterRequest): Promise<Register> {
    const existing = await this.repo.getRegister(input.ID);
    if (!existing) throw notFound(`tag ${JSON.stringify(input.ID)} not found`);
    const device = (await this.repo.getDevice(existing.device_id))!;
    const merged: CreateRegisterRequest = {
      DeviceID: existing.device_id,
      Name: input.Name ?? existing.name,
      TagName: input.TagName ?? existing.tag_name,
      ValueType: input.ValueType ?? existing.value_type,
      Description: input.Description ?? existing.description,
      PublishCoV: input.PublishCoV ?? existing.publish_cov === 1,
      TagFormula: input.TagFormula ?? existing.tag_formula,
      IntervalMs: input.IntervalMs ?? existing.interval_ms,
      Properties: input.Properties ?? [],
      MetaData: input.MetaData ?? parseJson(existing.metadata),
    };
    // Properties given are applied over the stored ones; a register change starts from defaults.
    const base =
      merged.Name === existing.name ? (parseJson(existing.properties) as Record<string, string>) : {};
    const row = buildRegisterRow(device, merged, base, Date.now());
    row.id = existing.id;
    row.created_at = existing.created_at;
    try {
      await this.repo.updateRegister(row);
    } catch (err) {
      if (Database.isUniqueViolation(err)) {
        throw conflict(
          `${tagSubject(row.tag_name, device.name)}: the device already has a tag with this TagName`,
        );
      }
      throw err;
    }
    this.#changed();
    return registerView({ ...row, device_name: device.name, alias_topics: device.alias_topics });
  }

  async deleteRegisters(ids: string[]): Promise<number> {
    if (ids.length > 100_000) throw badRequest(`IDs takes at most 100000 values, got ${ids.length}`);
    const n = await this.repo.deleteRegisters(ids);
    for (const id of ids) this.#tagState.delete(id);
    if (n > 0) this.#changed();
    return n;
  }

  async getRegister(id: string): Promise<Register | null> {
    const row = await this.repo.getRegister(id);
    return row ? registerView(row) : null;
  }

  async listRegisters(
    input: ListRegistersRequest | null | undefined,
    allDevices: boolean,
  ): Promise<RegisterPage> {
    const i = input ?? {};
    if (!allDevices) {
      if (!i.DeviceID)
        throw badRequest('ListRegisters needs DeviceID; use ListRegistersFromAllDevices for every device');
      if (!(await this.repo.getDevice(i.DeviceID)))
        throw notFound(`device ${JSON.stringify(i.DeviceID)} not found`);
    }
    let limit = i.Limit ?? DEFAULT_REGISTER_LIMIT;
    limit = Math.min(Math.max(Math.trunc(limit), 1), MAX_REGISTER_LIMIT);
    const skip = i.SkipCount ?? 0;
    if (!Number.isSafeInteger(skip) || skip < 0)
      throw badRequest(`SkipCount must be an integer of 0 or more, got ${skip}`);
    const pattern =
      i.TagPattern !== undefined && i.TagPattern !== null && i.TagPattern !== ''
        ? { text: i.TagPattern, option: i.TagPatternSearchOption ?? 'CONTAINS' }
        : undefined;
    const { rows, total } = await this.repo.listRegisters({
      ...(allDevices ? (i.DeviceID ? { deviceId: i.DeviceID } : {}) : { deviceId: i.DeviceID! }),
      ...(i.ContinueFrom ? { after: i.ContinueFrom } : {}),
      ...(pattern ? { pattern } : {}),
      skip,
      limit,
    });
    return {
      TotalCount: total,
      Registers: rows.map(registerView),
      Last: rows.length > 0 ? rows[rows.length - 1]!.id : null,
    };
  }

  // --- tag state (set by the acquisition engine; Unknown until a first read)

  setTagState(id: string, state: TagState, reason = ''): void {
    this.#tagState.set(id, { State: state, Reason: reason, at: Date.now() });
  }

  async tagStatus(ids: string[]): Promise<TagStatus[]> {
    if (ids.length > 1000) throw badRequest(`IDs takes at most 1000 values, got ${ids.length}`);
    const rows = await this.repo.getRegistersByIds(ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const out: TagStatus[] = [];
    for (const id of ids) {
      const r = byId.get(id);
      if (!r) throw notFound(`tag ${JSON.stringify(id)} not found`);
      const s = this.#tagState.get(id);
      out.push({
        ID: r.id,
        DeviceID: r.device_id,
        TagName: r.tag_name,
        State: s?.State ?? 'Unknown',
        Reason: s?.Reason ?? '',
        UpdateTime: s ? iso(s.at) : null,
      });
    }
    return out;
  }

  // --- CSV

  async uploadCsv(text: string): Promise<UploadStatus> {
    const status = await new CsvImporter(this.repo).run(text);
    this.#changed();
    return status;
  }

  async exportCsv(deviceIds?: string[] | null): Promise<string> {
    return exportCsv(await this.repo.allRegisters(deviceIds ?? undefined));
  }

  #driverFor(subject: string, driverId: string | null | undefined): DriverDef {
    if (!driverId) throw badRequest(`${subject}: DriverID is required`);
    const d = findDriverByIdOrName(driverId);
    if (!d) {
      throw badRequest(
        `${subject}: DriverID ${JSON.stringify(driverId)} is not a driver of the catalogue; ListDrivers gives the ${DRIVERS.length} drivers`,
      );
    }
    return d;
  }
}

// ---------------------------------------------------------------------------------------------
// Rows and views

export const tagSubject = (tagName: string, deviceName: string) =>
  `tag ${JSON.stringify(tagName)} of device ${JSON.stringify(deviceName)}`;

function devicePropertyInputs(list: CreateDeviceRequest['Properties']) {
  return (list ?? []).map((p) => ({ name: p.Key, value: p.Value }));
}

function metaData(subject: string, value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  let v = value;
  if (typeof v === 'string') {
    if (v.trim() === '') return {};
    try {
      v = JSON.parse(v);
    } catch {
      throw badRequest(
        `${subject}: MetaData ${JSON.stringify(value)} is not allowed; allowed values: a JSON object`,
      );
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw badRequest(
      `${subject}: MetaData ${JSON.stringify(value)} is not allowed; allowed values: a JSON object`,
    );
  }
  return v as Record<string, unknown>;
}

function params(subject: string, field: string, list: ParamInput[] | null | undefined): Param[] {
  const out: Param[] = [];
  const seen = new Set<string>();
  for (const p of list ?? []) {
    if (!p.Name) throw badRequest(`${subject}: every ${field} entry needs a Name`);
    if (seen.has(p.Name)) throw badRequest(`${subject}: ${field} "${p.Name}" is given more than once`);
    seen.add(p.Name);
    out.push({ Name: p.Name, Value: p.Value ?? '', Description: p.Description ?? '' });
  }
  return out;
}

/** Validates a tag against its device's driver; answers the row to store (a fresh ID). */
export function buildRegisterRow(
  device: DeviceRow,
  input: CreateRegisterRequest,
  base: Record<string, string> | undefined,
  now: number,
): RegisterRow {
  const tagName = checkName(`tag of device ${JSON.stringify(device.name)}`, 'TagName', input.TagName);
  const subject = tagSubject(tagName, device.name);
  const driver = findDriver(device.driver_id);
  if (!driver)
    throw new AppError(500, 'internal', `device "${device.name}" has an unknown driver ${device.driver_id}`);
  if (!input.Name)
    throw badRequest(
      `${subject}: Name (the register) is required; registers: ${driver.registers.map((r) => r.name).join(', ')}`,
    );
  const reg = findRegister(subject, driver, input.Name);
  if (!input.ValueType)
    throw badRequest(`${subject}: ValueType is required; allowed values: ${reg.valueTypes.join(', ')}`);
  checkValueType(subject, reg, input.ValueType);
  const interval = input.IntervalMs ?? DEFAULT_INTERVAL_MS;
  if (!Number.isSafeInteger(interval) || interval < MIN_INTERVAL_MS || interval > MAX_INTERVAL_MS) {
    throw badRequest(
      `${subject}: IntervalMs ${JSON.stringify(input.IntervalMs)} is not allowed; allowed values: integers from ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS}`,
    );
  }
  const properties = resolveProperties(
    subject,
    `register "${reg.name}" of driver "${driver.name}"`,
    reg.properties,
    (input.Properties ?? []).map((p) => ({ name: p.Name, value: p.Value })),
    base,
  );
  return {
    id: uuidv7(now),
    device_id: device.id,
    name: reg.name,
    tag_name: tagName,
    description: input.Description ?? '',
    value_type: input.ValueType,
    publish_cov: input.PublishCoV ? 1 : 0,
    tag_formula: input.TagFormula ?? '',
    interval_ms: interval,
    properties: JSON.stringify(properties),
    metadata: JSON.stringify(metaData(subject, input.MetaData)),
    created_at: now,
    updated_at: now,
  };
}

export function deviceView(row: DeviceRow): Device {
  const driver = findDriver(row.driver_id);
  const props = parseJson(row.properties) as Record<string, string>;
  return {
    ID: row.id,
    Name: row.name,
    DriverID: row.driver_id,
    DriverName: driver?.name ?? '',
    Description: row.description,
    Properties: Object.entries(props).map(([Key, Value]) => ({ Key, Value })),
    MetaData: parseJson(row.metadata),
    DHParams: parseJson(row.dh_params || '[]'),
    WorkerParams: parseJson(row.worker_params || '[]'),
    AliasTopics: row.alias_topics === 1,
    Debug: row.debug === 1,
    CreationTime: iso(Number(row.created_at)),
    UpdateTime: iso(Number(row.updated_at)),
  };
}

/**
 * A register in the wire shape. Properties, MetaData and Topics are worked out only when read
 * (GraphQL reads only the selected fields), which keeps a page of 1,000 cheap.
 */
class RegisterNode implements Register {
  readonly ID: string;
  readonly DeviceID: string;
  readonly DeviceName: string;
  readonly Name: string;
  readonly TagName: string;
  readonly Description: string;
  readonly ValueType: string;
  readonly PublishCoV: boolean;
  readonly TagFormula: string;
  readonly IntervalMs: number;
  readonly #row: RegisterWithDevice;

  constructor(row: RegisterWithDevice) {
    this.#row = row;
    this.ID = row.id;
    this.DeviceID = row.device_id;
    this.DeviceName = row.device_name;
    this.Name = row.name;
    this.TagName = row.tag_name;
    this.Description = row.description;
    this.ValueType = row.value_type;
    this.PublishCoV = row.publish_cov === 1;
    this.TagFormula = row.tag_formula;
    this.IntervalMs = row.interval_ms;
  }

  get Properties(): NameValue[] {
    const props = parseJson(this.#row.properties) as Record<string, string>;
    return Object.entries(props).map(([Name, Value]) => ({ Name, Value }));
  }

  get MetaData(): Record<string, unknown> {
    return parseJson(this.#row.metadata);
  }

  get Topics(): Topic[] {
    return topicsOf(this.#row.device_name, this.#row.tag_name, {
      aliasTopics: this.#row.alias_topics === 1,
      valueType: this.#row.value_type,
      intervalMs: this.#row.interval_ms,
    });
  }

  get CreationTime(): string {
    return iso(Number(this.#row.created_at));
  }

  toJSON(): Register {
    return {
      ID: this.ID,
      DeviceID: this.DeviceID,
      DeviceName: this.DeviceName,
      Name: this.Name,
      TagName: this.TagName,
      Description: this.Description,
      ValueType: this.ValueType,
      PublishCoV: this.PublishCoV,
      TagFormula: this.TagFormula,
      IntervalMs: this.IntervalMs,
      Properties: this.Properties,
      MetaData: this.MetaData,
      Topics: this.Topics,
      CreationTime: this.CreationTime,
    };
  }
}

export function registerView(row: RegisterWithDevice): Register {
  return new RegisterNode(row);
}
