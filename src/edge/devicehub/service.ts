/**
 * The DeviceHub's domain: drivers, devices and tags (registers), their validation against the
 * catalogue, paging, tag status, and the CSV upload and export. No HTTP, no GraphQL: the
 * resolvers translate. Objects returned are in the wire shape (PascalCase), as the contract names
 * them; other modules read the domain shape through `readModel`.
 */
import { noteBulkChange } from '../../kernel/memory.js';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { Database } from '../../kernel/db/index.js';
import { uuidv7 } from '../../kernel/ids.js';
import { parseListInput, runList, type ListDefinition, type ListInput } from '../../kernel/paging.js';
import { DRIVERS, findDriver, findDriverByIdOrName, type DriverDef } from './catalogue/index.js';
import { DevicehubReader } from './read-model.js';
import type { DeviceRow, DevicehubRepository, RegisterRow } from './repository.js';
import { buildRegisterRow, devicePropertyInputs, metaData, params, parseJson, tagSubject } from './rows.js';
import {
  DEFAULT_REGISTER_LIMIT,
  MAX_REGISTER_LIMIT,
  type CreateDeviceRequest,
  type CreateRegisterRequest,
  type Device,
  type DevicehubChange,
  type DevicehubReadModel,
  type ListRegistersRequest,
  type Register,
  type RegisterPage,
  type TagStatus,
  type UpdateDeviceRequest,
  type UpdateRegisterRequest,
} from './types.js';
import { CsvImporter, exportCsv, type UploadStatus } from './upload.js';
import { deviceView, iso, registerView, registerViewOf } from './views.js';
import { checkName, resolveProperties } from './validation.js';

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

export class DeviceHubService {
  readonly #repo: DevicehubRepository;
  readonly #reader: DevicehubReader;

  /** Built by `createDevicehub`: the repository is the module's own. */
  constructor(repo: DevicehubRepository) {
    this.#repo = repo;
    this.#reader = new DevicehubReader(repo);
  }

  /**
   * The read model: devices and tags in the domain shape, and a change event after every change
   * made through this service (GraphQL, CSV upload, browse selections), so that the acquisition
   * engine follows without a restart.
   */
  get readModel(): DevicehubReadModel {
    return this.#reader;
  }

  /**
   * Tells the read model's listeners about a change committed outside this service's own calls
   * (a configuration template applied in one transaction, `config-section.ts`).
   */
  committed(change: DevicehubChange): void {
    this.#changed(change);
  }

  #changed(change: Partial<DevicehubChange>): void {
    const devices = change.devices ?? [];
    const tags = change.tags ?? [];
    this.#reader.emit({ devices, tags });
    noteBulkChange(devices.length + tags.length);
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
      await this.#repo.insertDevice(row);
    } catch (err) {
      if (Database.isUniqueViolation(err))
        throw conflict(`${subject}: a device with this Name already exists`);
      throw err;
    }
    this.#changed({ devices: [row.id] });
    return deviceView(row);
  }

  async updateDevice(input: UpdateDeviceRequest): Promise<Device> {
    const existing = await this.#repo.getDevice(input.ID);
    if (!existing) throw notFound(`device ${JSON.stringify(input.ID)} not found`);
    const subject = `device ${JSON.stringify(existing.name)}`;
    const row: DeviceRow = { ...existing, updated_at: Date.now() };
    if (input.Name !== undefined && input.Name !== null) row.name = checkName(subject, 'Name', input.Name);
    let driver = findDriver(existing.driver_id)!;
    let base = parseJson(existing.properties) as Record<string, string>;
    if (input.DriverID !== undefined && input.DriverID !== null) {
      const next = this.#driverFor(subject, input.DriverID);
      if (next.id !== driver.id) {
        const tags = await this.#repo.countRegistersOfDevice(existing.id);
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
      await this.#repo.updateDevice(row);
    } catch (err) {
      if (Database.isUniqueViolation(err))
        throw conflict(`${subject}: a device named ${JSON.stringify(row.name)} already exists`);
      throw err;
    }
    this.#changed({ devices: [row.id] });
    return deviceView(row);
  }

  async deleteDevices(ids: string[]): Promise<number> {
    if (ids.length > 1000) throw badRequest(`IDs takes at most 1000 values, got ${ids.length}`);
    const deleted = await this.#repo.deleteDevices(ids);
    this.#changed({ devices: deleted });
    return deleted.length;
  }

  async getDevice(id: string): Promise<Device | null> {
    const row = await this.#repo.getDevice(id);
    return row ? deviceView(row) : null;
  }

  async listDevices(
    input: (ListInput & { IDs?: string[] | null }) | null | undefined,
  ): Promise<{ Items: Device[]; Total: number }> {
    const spec = parseListInput(input, DEVICE_LIST);
    const ids = input?.IDs ?? undefined;
    if (ids && ids.length > 1000) throw badRequest(`IDs takes at most 1000 values, got ${ids.length}`);
    const page = await runList(this.#repo.database, this.#repo.deviceListQuery(ids), DEVICE_LIST, spec);
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
        device = await this.#repo.getDeviceByIdOrName(input.DeviceID);
        if (!device)
          throw notFound(
            `tag ${JSON.stringify(input.TagName ?? '')}: device ${JSON.stringify(input.DeviceID)} not found`,
          );
        devices.set(device.id, device);
        devices.set(input.DeviceID, device);
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
      await this.#repo.transaction((trx) => this.#repo.insertRegisters(rows, trx));
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
    this.#changed({ tags: rows.map((r) => ({ id: r.id, deviceId: r.device_id })) });
    return rows.map((r) =>
      registerView({
        ...r,
        device_name: devices.get(r.device_id)!.name,
        alias_topics: devices.get(r.device_id)!.alias_topics,
      }),
    );
  }

  async #firstExistingTag(rows: RegisterRow[]): Promise<RegisterRow | undefined> {
    const existing = await this.#repo.registersOfDevices([...new Set(rows.map((r) => r.device_id))]);
    const names = new Set(existing.map((r) => `${r.device_id}\u0000${r.tag_name}`));
    return rows.find((r) => names.has(`${r.device_id}\u0000${r.tag_name}`));
  }

  async updateRegister(input: UpdateRegisterRequest): Promise<Register> {
    const existing = await this.#repo.getRegister(input.ID);
    if (!existing) throw notFound(`tag ${JSON.stringify(input.ID)} not found`);
    const device = (await this.#repo.getDevice(existing.device_id))!;
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
      await this.#repo.updateRegister(row);
    } catch (err) {
      if (Database.isUniqueViolation(err)) {
        throw conflict(
          `${tagSubject(row.tag_name, device.name)}: the device already has a tag with this TagName`,
        );
      }
      throw err;
    }
    this.#changed({ tags: [{ id: row.id, deviceId: row.device_id }] });
    return registerView({ ...row, device_name: device.name, alias_topics: device.alias_topics });
  }

  async deleteRegisters(ids: string[]): Promise<number> {
    if (ids.length > 100_000) throw badRequest(`IDs takes at most 100000 values, got ${ids.length}`);
    const deleted = await this.#repo.deleteRegisters(ids);
    this.#changed({ tags: deleted.map((r) => ({ id: r.id, deviceId: r.device_id })) });
    return deleted.length;
  }

  async getRegister(id: string): Promise<Register | null> {
    const row = await this.#repo.getRegister(id);
    return row ? registerView(row) : null;
  }

  async listRegisters(
    input: ListRegistersRequest | null | undefined,
    allDevices: boolean,
  ): Promise<RegisterPage> {
    let i = input ?? {};
    if (!allDevices) {
      if (!i.DeviceID)
        throw badRequest('ListRegisters needs DeviceID; use ListRegistersFromAllDevices for every device');
      const device = await this.#repo.getDeviceByIdOrName(i.DeviceID);
      if (!device) throw notFound(`device ${JSON.stringify(i.DeviceID)} not found`);
      i = { ...i, DeviceID: device.id };
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
    const { rows, total } = await this.#repo.listRegisters({
      ...(allDevices ? (i.DeviceID ? { deviceId: i.DeviceID } : {}) : { deviceId: i.DeviceID! }),
      ...(i.ContinueFrom ? { after: i.ContinueFrom } : {}),
      ...(pattern ? { pattern } : {}),
      skip,
      limit,
    });
    return {
      TotalCount: total,
      Registers: rows.map(registerViewOf),
      Last: rows.length > 0 ? rows[rows.length - 1]![0] : null,
    };
  }

  /** Whether this build acquires devices of `driver` (the acquisition engine says; false without one). */
  acquires(driver: DriverDef): boolean {
    return this.#reader.tagStatusSource?.acquires?.(driver.key) ?? false;
  }

  // --- tag state (kept by the acquisition engine, read through the TagStatusSource it sets;
  // Unknown until a first read)

  async tagStatus(ids: string[]): Promise<TagStatus[]> {
    if (ids.length > 1000) throw badRequest(`IDs takes at most 1000 values, got ${ids.length}`);
    const rows = await this.#repo.getRegistersByIds(ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    const source = this.#reader.tagStatusSource;
    const out: TagStatus[] = [];
    for (const id of ids) {
      const r = byId.get(id);
      if (!r) throw notFound(`tag ${JSON.stringify(id)} not found`);
      const s = source?.tagState(r.id, r.device_id);
      out.push({
        ID: r.id,
        DeviceID: r.device_id,
        TagName: r.tag_name,
        State: s?.state ?? 'Unknown',
        Reason: s?.reason ?? '',
        UpdateTime: s ? iso(s.at) : null,
        Value: s?.hasValue ? (s.value ?? null) : null,
        Timestamp: s?.hasValue ? iso(s.at) : null,
      });
    }
    return out;
  }

  // --- CSV

  async uploadCsv(text: string): Promise<UploadStatus> {
    const importer = new CsvImporter(this.#repo);
    const status = await importer.run(text);
    this.#changed({ tags: importer.stored });
    return status;
  }

  async exportCsv(deviceIds?: string[] | null): Promise<string> {
    return exportCsv(await this.#repo.allRegisters(deviceIds ?? undefined));
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
