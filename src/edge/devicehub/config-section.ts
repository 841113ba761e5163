/**
 * The DeviceHub's section of a configuration template: devices with their tags.
 *
 *     { "devices": [ { "Name", "DriverID", "Description", "Properties": { key: value }, "MetaData",
 *                      "DHParams", "WorkerParams", "AliasTopics", "Debug", "ID"?,
 *                      "Tags": [ { "TagName", "Name" (the register), "ValueType", "Description",
 *                                  "PublishCoV", "TagFormula", "IntervalMs", "Properties",
 *                                  "MetaData", "ID"? } ] } ] }
 *
 * Devices are keyed by `Name`, tags by `<device Name>/<TagName>`. Every device and tag is checked
 * against the driver catalogue exactly as the GraphQL API checks it (`rows.ts`). Writes go through
 * the apply's transaction; the change event is sent after it commits, and the acquisition engine
 * follows it incrementally (only the devices and tags named).
 */
import { badRequest, conflict } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { applyKeyed, planKeyed } from '../../kernel/service/keyed-section.js';
import { canonical, checkObject, issueOf, join } from '../../kernel/service/section-shape.js';
import type { Kysely } from '../../kernel/db/index.js';
import { findDriverByIdOrName } from './catalogue/index.js';
import { deviceKey, diffDevices, diffStored, sameTag } from './config-diff.js';
import { exportBytes, exportDevice, exportText, readExport, type ExportRead } from './config-export.js';
import {
  registerRowOf,
  type DeviceRow,
  type DevicehubRepository,
  type DevicehubTables,
  type RegisterRow,
} from './repository.js';
import { buildRegisterRow, metaData, params } from './rows.js';
import type { DeviceHubService } from './service.js';
import type { DevicehubChange, Param } from './types.js';
import { checkName, resolveProperties } from './validation.js';

export interface TemplateTag {
  ID?: string;
  TagName: string;
  /** The driver's register. */
  Name: string;
  ValueType: string;
  Description?: string;
  PublishCoV?: boolean;
  TagFormula?: string;
  IntervalMs?: number;
  Properties?: Record<string, string>;
  MetaData?: Record<string, unknown>;
}

export interface TemplateDevice {
  ID?: string;
  Name: string;
  DriverID: string;
  Description?: string;
  Properties?: Record<string, string>;
  MetaData?: Record<string, unknown>;
  DHParams?: Param[];
  WorkerParams?: Param[];
  AliasTopics?: boolean;
  Debug?: boolean;
  Tags?: TemplateTag[];
}

export interface DevicehubSection {
  devices: TemplateDevice[];
}

const DEVICE_FIELDS = {
  'ID?': 'string',
  Name: 'string',
  DriverID: 'string',
  'Description?': 'string',
  'Properties?': 'object',
  'MetaData?': 'object',
  'DHParams?': 'array',
  'WorkerParams?': 'array',
  'AliasTopics?': 'boolean',
  'Debug?': 'boolean',
  'Tags?': 'array',
} as const;

const TAG_FIELDS = {
  'ID?': 'string',
  TagName: 'string',
  Name: 'string',
  ValueType: 'string',
  'Description?': 'string',
  'PublishCoV?': 'boolean',
  'TagFormula?': 'string',
  'IntervalMs?': 'integer',
  'Properties?': 'object',
  'MetaData?': 'object',
} as const;

/** A device and its tags as rows (ids, times not yet decided), checked against the catalogue. */
interface NormalDevice {
  path: string;
  given: TemplateDevice;
  row: DeviceRow;
  tags: Map<string, { path: string; given: TemplateTag; row: RegisterRow }>;
}

export class DevicehubConfigSection implements ConfigSection<DevicehubSection> {
  readonly name = 'devicehub';
  readonly #repo: DevicehubRepository;
  readonly #service: DeviceHubService;
  /** Normalised forms of documents already checked (validate, then diff or apply, reuse them). */
  readonly #normal = new WeakMap<object, NormalDevice[]>();
  /** The rows of exports not yet normalised. */
  readonly #exported = new WeakMap<object, ExportRead>();

  constructor(repo: DevicehubRepository, service: DeviceHubService) {
    this.#repo = repo;
    this.#service = service;
  }

  async export(): Promise<DevicehubSection> {
    const read = await readExport(this.#repo);
    const out: DevicehubSection = { devices: read.devices.map((d, i) => exportDevice(d, read.tags[i]!)) };
    // The stored rows are the normal form of the export: diff needs no second check of them
    // (made when a diff asks, not by every export).
    this.#exported.set(out, read);
    return out;
  }

  /** The export as JSON text (`{{` escaped), written from the rows without its objects. */
  async exportJson(): Promise<string> {
    return exportText(this.#repo);
  }

  /** `exportJson` as UTF-8 bytes in pieces, a device at a time (each handed to `each` at once). */
  async exportJsonBytes(each?: (piece: Buffer) => void): Promise<Buffer[]> {
    return exportBytes(this.#repo, each);
  }

  /** The normal form of an export (`read`, its rows; `out`, the export made of them). */
  #exportNormal(out: DevicehubSection, read: ExportRead): NormalDevice[] {
    const normal: NormalDevice[] = [];
    for (const [i, d] of read.devices.entries()) {
      const given = out.devices[i]!;
      const tags = new Map<string, { path: string; given: TemplateTag; row: RegisterRow }>();
      for (const [j, r] of read.tags[i]!.entries())
        tags.set(r[3], { path: `devices[${i}].Tags[${j}]`, given: given.Tags![j]!, row: registerRowOf(r) });
      normal.push({ path: `devices[${i}]`, given, row: d, tags });
    }
    this.#normal.set(out, normal);
    this.#exported.delete(out);
    return normal;
  }

  validate(doc: unknown): SectionIssue[] {
    const issues: SectionIssue[] = [];
    this.#normalise(doc, issues);
    return issues;
  }

  /** Checks `doc` and answers its rows; issues go to `issues` (rows of bad items are left out). */
  #normalise(doc: unknown, issues: SectionIssue[]): NormalDevice[] {
    if (doc && typeof doc === 'object') {
      const hit = this.#normal.get(doc);
      if (hit) return hit;
      const read = this.#exported.get(doc);
      if (read) return this.#exportNormal(doc as DevicehubSection, read);
    }
    const out: NormalDevice[] = [];
    if (!checkObject(issues, '', doc, { devices: 'array' })) return out;
    const names = new Map<string, number>();
    const now = Date.now();
    for (const [i, d] of (doc as DevicehubSection).devices.entries()) {
      const path = join('devices', i);
      if (!checkObject(issues, path, d, DEVICE_FIELDS)) continue;
      let row: DeviceRow | undefined;
      issueOf(issues, path, () => {
        row = buildDeviceRow(d, now);
      });
      if (!row) continue;
      const dup = names.get(row.name);
      if (dup !== undefined) {
        issues.push({
          path: join(path, 'Name'),
          message: `device "${row.name}" is given twice (devices[${dup}])`,
        });
        continue;
      }
      names.set(row.name, i);
      const tags = new Map<string, { path: string; given: TemplateTag; row: RegisterRow }>();
      for (const [j, t] of (d.Tags ?? []).entries()) {
        const tpath = join(join(path, 'Tags'), j);
        if (!checkObject(issues, tpath, t, TAG_FIELDS)) continue;
        issueOf(issues, tpath, () => {
          const r = buildRegisterRow(
            row!,
            {
              DeviceID: row!.id,
              Name: t.Name,
              TagName: t.TagName,
              ValueType: t.ValueType,
              Description: t.Description ?? null,
              PublishCoV: t.PublishCoV ?? null,
              TagFormula: t.TagFormula ?? null,
              IntervalMs: t.IntervalMs ?? null,
              Properties: Object.entries(t.Properties ?? {}).map(([Name, Value]) => ({ Name, Value })),
              MetaData: t.MetaData ?? null,
            },
            undefined,
            now,
          );
          if (tags.has(r.tag_name))
            throw badRequest(`tag "${r.tag_name}" of device "${row!.name}" is given twice`);
          tags.set(r.tag_name, { path: tpath, given: t, row: r });
        });
      }
      out.push({ path, given: d, row, tags });
    }
    if (issues.length === 0 && doc && typeof doc === 'object') this.#normal.set(doc, out);
    return out;
  }

  #rows(doc: DevicehubSection): NormalDevice[] {
    const issues: SectionIssue[] = [];
    const rows = this.#normalise(doc, issues);
    if (issues.length > 0) throw badRequest(`section devicehub: ${issues[0]!.path}: ${issues[0]!.message}`);
    return rows;
  }

  diff(current: DevicehubSection, next: DevicehubSection, mode: ApplyMode): SectionDiff {
    const target = mode === 'merge-apply' ? this.merge(current, next).merged : next;
    return diffDevices(this.#rows(current), this.#rows(target), mode);
  }

  /** `diff` over the stored rows, without making the export's objects (a preview, an apply). */
  async diffCurrent(next: DevicehubSection, mode: ApplyMode): Promise<SectionDiff> {
    if (mode === 'merge-apply') return this.diff(await this.export(), next, mode);
    return diffStored(this.#repo, this.#rows(next), mode);
  }

  merge(
    current: DevicehubSection,
    template: DevicehubSection,
  ): { merged: DevicehubSection; overwrites: string[] } {
    const overwrites: string[] = [];
    const tplByName = new Map(template.devices.map((d) => [d.Name, d]));
    const devices: TemplateDevice[] = [];
    for (const c of current.devices) {
      const t = tplByName.get(c.Name);
      if (!t) {
        devices.push(c);
        continue;
      }
      tplByName.delete(c.Name);
      const merged = mergeDevice(c, t);
      const { Tags: ct, ...cd } = c;
      const { Tags: mt, ...md } = merged;
      if (canonical(stripIds(cd)) !== canonical(stripIds(md))) overwrites.push(c.Name);
      const curTags = new Map((ct ?? []).map((x) => [x.TagName, x]));
      for (const tag of mt ?? []) {
        const before = curTags.get(tag.TagName);
        if (before && canonical(stripIds(before)) !== canonical(stripIds(tag)))
          overwrites.push(`${c.Name}/${tag.TagName}`);
      }
      devices.push(merged);
    }
    for (const t of tplByName.values()) devices.push(t);
    return { merged: { devices }, overwrites };
  }

  async apply(next: DevicehubSection, ctx: SectionApplyContext): Promise<void> {
    const repo = this.#repo.inTransaction(ctx.trx);
    const target = ctx.mode === 'merge-apply' ? this.merge(await this.#exportWith(repo), next).merged : next;
    const wanted = this.#rows(target);
    const existing = await repo.getDevices();
    const tagsOf = groupBy(await repo.registersOfDevices(existing.map((d) => d.id)), (r) => r.device_id);
    const run: DeviceApply = {
      trx: ctx.trx as unknown as Kysely<DevicehubTables>,
      use: ctx.mode === 'use',
      now: Date.now(),
      ids: new Set(existing.map((d) => d.id)),
      change: { devices: [], tags: [] },
      created: new Set(),
      inserts: [],
    };
    const total = wanted.reduce((n, d) => n + 1 + d.tags.size, 0);
    let done = 0;
    // The template is already merged: a merge-apply is a legacy apply of the union.
    const mode = run.use ? 'use' : 'legacy';
    const out = await applyKeyed(
      existing,
      wanted,
      { ...ctx, mode },
      {
        section: 'devicehub',
        path: 'devices',
        key: (d) => d.row.name,
        rowKey: (r) => r.name,
        // Tags decide too: every device of the template that exists is looked at.
        same: () => false,
        create: (d) => this.#createDevice(d, run),
        update: (d, cur) => this.#updateDevice(d, cur, tagsOf.get(cur.id) ?? [], run),
        remove: (rows) =>
          this.#repo.deleteDevicesIn(
            rows.map((r) => r.id),
            run.trx,
          ),
        step: (d) => ctx.progress((done += 1 + d.tags.size), total),
      },
    );
    run.change.devices.push(...out.removed.map((r) => r.id));
    await this.#insertTags(run);
    ctx.afterCommit(() => this.#service.committed(run.change));
  }

  /** A device of the template that the edge does not have, and its tags. */
  async #createDevice(d: NormalDevice, run: DeviceApply): Promise<void> {
    const row: DeviceRow = { ...d.row, created_at: run.now, updated_at: run.now };
    row.id = d.given.ID && !run.ids.has(d.given.ID) ? d.given.ID : uuidv7(run.now);
    run.ids.add(row.id);
    run.created.add(row.id);
    await this.#repo.insertDevice(row, run.trx);
    run.change.devices.push(row.id);
    for (const t of d.tags.values()) {
      const id = t.given.ID ?? uuidv7(run.now);
      run.inserts.push({ ...t.row, id, device_id: row.id, created_at: run.now, updated_at: run.now });
    }
  }

  /** A device of the template that the edge has (`cur`, with its tags `curTags`). */
  async #updateDevice(d: NormalDevice, cur: DeviceRow, curTags: RegisterRow[], run: DeviceApply) {
    const row: DeviceRow = { ...d.row, id: cur.id, created_at: cur.created_at, updated_at: run.now };
    if (row.driver_id !== cur.driver_id && !run.use) {
      // A new driver: every tag of the device must be the template's.
      const orphans = curTags.filter((t) => !d.tags.has(t.tag_name));
      if (orphans.length > 0)
        throw conflict(
          `device "${row.name}": DriverID cannot change while the device has ${orphans.length} tags that are not in the template; apply with mode "use" or delete them first`,
        );
    }
    if (deviceKey(cur) !== deviceKey(row)) {
      await this.#repo.updateDevice(row, run.trx);
      run.change.devices.push(row.id);
    }
    const tagIds = new Set(curTags.map((t) => t.id));
    const tags = planKeyed(curTags, [...d.tags.values()], run.use ? 'use' : 'legacy', {
      key: (t) => t.row.tag_name,
      rowKey: (r) => r.tag_name,
      same: (r, t) => sameTag(r, t.row),
    });
    for (const { item, row: ct } of tags.update) {
      const tr = {
        ...item.row,
        id: ct.id,
        device_id: row.id,
        created_at: ct.created_at,
        updated_at: run.now,
      };
      await this.#repo.updateRegister(tr, run.trx);
      run.change.tags.push({ id: tr.id, deviceId: row.id });
    }
    for (const { item } of tags.create) {
      const id = item.given.ID && !tagIds.has(item.given.ID) ? item.given.ID : uuidv7(run.now);
      run.inserts.push({ ...item.row, id, device_id: row.id, updated_at: run.now });
    }
    if (tags.remove.length > 0) {
      await this.#repo.deleteRegistersIn(
        tags.remove.map((t) => t.id),
        run.trx,
      );
      for (const t of tags.remove) run.change.tags.push({ id: t.id, deviceId: cur.id });
    }
  }

  /** The new tags of the apply; tag IDs from the template that are taken get fresh ones. */
  async #insertTags(run: DeviceApply): Promise<void> {
    if (run.inserts.length === 0) return;
    const taken = await this.#repo.registerIdsTaken(
      run.inserts.map((r) => r.id),
      run.trx,
    );
    const seen = new Set<string>();
    for (const r of run.inserts) {
      if (taken.has(r.id) || seen.has(r.id)) r.id = uuidv7(run.now);
      seen.add(r.id);
    }
    await this.#repo.insertRegisters(run.inserts, run.trx);
    // The tags of a new device come with it; those of a device that exists are named (a device
    // whose connection did not change keeps its runner, which takes new tags one by one).
    for (const r of run.inserts)
      if (!run.created.has(r.device_id)) run.change.tags.push({ id: r.id, deviceId: r.device_id });
  }

  /** The export, read through `repo` (the live one, or one over the apply's transaction). */
  async #exportWith(repo: DevicehubRepository): Promise<DevicehubSection> {
    const read = await readExport(repo);
    return { devices: read.devices.map((d, i) => exportDevice(d, read.tags[i]!)) };
  }
}

/** What the apply of one section gathers while it goes through the devices. */
interface DeviceApply {
  trx: Kysely<DevicehubTables>;
  use: boolean;
  now: number;
  /** Device IDs taken (a device ID of the template that is taken is not used). */
  ids: Set<string>;
  change: DevicehubChange;
  /** Devices the apply creates. */
  created: Set<string>;
  /** Tags to insert at the end, in one go. */
  inserts: RegisterRow[];
}

function groupBy<T>(items: Iterable<T>, key: (x: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of items) {
    const k = key(x);
    const list = out.get(k);
    if (list) list.push(x);
    else out.set(k, [x]);
  }
  return out;
}

/** A device row from a template device, checked as `CreateDevice` checks it. */
function buildDeviceRow(d: TemplateDevice, now: number): DeviceRow {
  const subject = `device ${JSON.stringify(d.Name ?? '')}`;
  const name = checkName(subject, 'Name', d.Name);
  const driver = findDriverByIdOrName(d.DriverID);
  if (!driver)
    throw badRequest(`${subject}: DriverID ${JSON.stringify(d.DriverID)} is not a driver of the catalogue`);
  return {
    id: '',
    name,
    driver_id: driver.id,
    description: d.Description ?? '',
    properties: JSON.stringify(
      resolveProperties(
        subject,
        `driver "${driver.name}"`,
        driver.properties,
        Object.entries(d.Properties ?? {}).map(([name, value]) => ({ name, value })),
      ),
    ),
    metadata: JSON.stringify(metaData(subject, d.MetaData ?? null)),
    dh_params: JSON.stringify(params(subject, 'DHParams', d.DHParams)),
    worker_params: JSON.stringify(params(subject, 'WorkerParams', d.WorkerParams)),
    alias_topics: d.AliasTopics ? 1 : 0,
    debug: d.Debug ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
}

const stripIds = <T extends { ID?: string }>(v: T): Omit<T, 'ID'> => {
  const { ID: _id, ...rest } = v;
  return rest;
};

/** Template values over current ones; Properties and MetaData key by key; tags by TagName. */
function mergeDevice(cur: TemplateDevice, tpl: TemplateDevice): TemplateDevice {
  const out: TemplateDevice = { ...cur, ...tpl, ID: cur.ID ?? tpl.ID } as TemplateDevice;
  if (cur.ID === undefined) delete out.ID;
  const driverChanged =
    (findDriverByIdOrName(cur.DriverID)?.id ?? cur.DriverID) !==
    (findDriverByIdOrName(tpl.DriverID)?.id ?? tpl.DriverID);
  if (!driverChanged) out.Properties = { ...cur.Properties, ...tpl.Properties };
  out.MetaData = { ...cur.MetaData, ...tpl.MetaData };
  const tags = new Map((cur.Tags ?? []).map((t) => [t.TagName, t]));
  for (const t of tpl.Tags ?? []) {
    const c = tags.get(t.TagName);
    if (!c) {
      tags.set(t.TagName, t);
      continue;
    }
    const m: TemplateTag = { ...c, ...t, ID: c.ID ?? t.ID } as TemplateTag;
    if (c.ID === undefined) delete m.ID;
    if (c.Name === t.Name) m.Properties = { ...c.Properties, ...t.Properties };
    m.MetaData = { ...c.MetaData, ...t.MetaData };
    tags.set(t.TagName, m);
  }
  out.Tags = [...tags.values()];
  return out;
}
