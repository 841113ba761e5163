/**
 * What a template changes in the DeviceHub: `diffDevices` over two sets of rows (devices by Name,
 * tags by TagName), and `diffStored`, the same answer over the stored rows, read a batch of
 * devices at a time (a preview or apply of 100,000 tags: no row object per stored tag).
 */
import type { ApplyMode, SectionDiff } from '../../kernel/service/index.js';
import { canonical } from '../../kernel/service/section-shape.js';
import { eachExportBatch } from './config-export.js';
import type { DeviceRow, DevicehubRepository, ExportArray, RegisterRow } from './repository.js';
import { parseJson } from './rows.js';

/** The fields of a row that are configuration (not ids, owners or times), canonical. */
export const deviceKey = (r: DeviceRow) =>
  canonical({
    n: r.name,
    d: r.driver_id,
    s: r.description,
    p: parseJson(r.properties),
    m: parseJson(r.metadata),
    h: parseJson(r.dh_params || '[]'),
    w: parseJson(r.worker_params || '[]'),
    a: r.alias_topics,
    g: r.debug,
  });
/** Whether two rows are the same tag configuration (JSON columns compared canonically). */
export const sameTag = (a: RegisterRow, b: RegisterRow): boolean =>
  a.name === b.name &&
  a.tag_name === b.tag_name &&
  a.description === b.description &&
  a.value_type === b.value_type &&
  sameValue(a.publish_cov, b.publish_cov) &&
  a.tag_formula === b.tag_formula &&
  sameValue(a.interval_ms, b.interval_ms) &&
  sameJson(a.properties, b.properties) &&
  sameJson(a.metadata, b.metadata);
/** A number as stored or as read (a driver may read an integer column as text). */
const sameValue = (a: unknown, b: unknown) => a === b || String(a) === String(b);
const sameJson = (a: string, b: string) => a === b || canonical(parseJson(a)) === canonical(parseJson(b));

/** A device as a diff reads it: its row, its tags' rows by TagName. */
export interface DiffDevice {
  row: DeviceRow;
  tags: Map<string, { row: RegisterRow }>;
}

/** What `nxt` changes over `cur` (devices by Name, tags by TagName). */
export function diffDevices(cur: DiffDevice[], nxt: DiffDevice[], mode: ApplyMode): SectionDiff {
  const curByName = new Map(cur.map((d) => [d.row.name, d]));
  const out: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
  const restartDevices = new Set<string>();
  for (const d of nxt) {
    const c = curByName.get(d.row.name);
    if (!c) {
      out.added.push(d.row.name);
      for (const t of d.tags.keys()) out.added.push(`${d.row.name}/${t}`);
      continue;
    }
    if (deviceKey(c.row) !== deviceKey(d.row)) {
      out.changed.push(d.row.name);
      restartDevices.add(d.row.name);
    }
    for (const [name, t] of d.tags) {
      const ct = c.tags.get(name);
      if (!ct) out.added.push(`${d.row.name}/${name}`);
      else if (!sameTag(ct.row, t.row)) out.changed.push(`${d.row.name}/${name}`);
    }
    if (mode === 'use') {
      for (const name of c.tags.keys()) if (!d.tags.has(name)) out.removed.push(`${d.row.name}/${name}`);
    }
  }
  if (mode === 'use') {
    const names = new Set(nxt.map((d) => d.row.name));
    for (const c of cur) {
      if (names.has(c.row.name)) continue;
      out.removed.push(c.row.name);
      restartDevices.add(c.row.name);
    }
  }
  // A merge-apply restarts the whole acquisition engine, but only when it changes something.
  const changes = out.added.length + out.changed.length + out.removed.length;
  if (mode === 'merge-apply') {
    if (changes > 0) out.restarts.push('acquisition');
  } else for (const name of restartDevices) out.restarts.push(`acquisition: device "${name}"`);
  return out;
}

/** `sameTag` of a stored register read as an array (`ExportArray`) and a row. */
const sameTagArray = (a: ExportArray, b: RegisterRow): boolean =>
  a[2] === b.name &&
  a[3] === b.tag_name &&
  a[4] === b.description &&
  a[5] === b.value_type &&
  sameValue(a[6], b.publish_cov) &&
  a[7] === b.tag_formula &&
  sameValue(a[8], b.interval_ms) &&
  sameJson(a[9], b.properties) &&
  sameJson(a[10], b.metadata);

/** What `diffDevices` finds in one device that both sides have. */
interface DeviceDiff {
  changed: boolean;
  added: string[];
  changedTags: string[];
  removed: string[];
}

/**
 * `diffDevices(current, nxt, mode)` with `current` the stored rows (as `readExport` orders them:
 * devices by name, tags by ID), the same answer in the same order, read a batch of devices at a
 * time and compared as read: no row object or map entry per stored tag lives beyond its batch.
 */
export async function diffStored(
  repo: DevicehubRepository,
  nxt: DiffDevice[],
  mode: ApplyMode,
): Promise<SectionDiff> {
  const nxtByName = new Map(nxt.map((d) => [d.row.name, d]));
  const found = new Map<string, DeviceDiff>();
  const gone: string[] = [];
  await eachExportBatch(repo, (c: DeviceRow, tags: ExportArray[]) => {
    const d = nxtByName.get(c.name);
    if (!d) {
      gone.push(c.name);
      return;
    }
    const cur = new Map(tags.map((a) => [a[3], a]));
    const r: DeviceDiff = {
      changed: deviceKey(c) !== deviceKey(d.row),
      added: [],
      changedTags: [],
      removed: [],
    };
    for (const [name, t] of d.tags) {
      const ct = cur.get(name);
      if (!ct) r.added.push(`${d.row.name}/${name}`);
      else if (!sameTagArray(ct, t.row)) r.changedTags.push(`${d.row.name}/${name}`);
    }
    if (mode === 'use')
      for (const name of cur.keys()) if (!d.tags.has(name)) r.removed.push(`${d.row.name}/${name}`);
    found.set(c.name, r);
  });
  const out: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
  const restartDevices = new Set<string>();
  for (const d of nxt) {
    const r = found.get(d.row.name);
    if (!r) {
      out.added.push(d.row.name);
      for (const t of d.tags.keys()) out.added.push(`${d.row.name}/${t}`);
      continue;
    }
    if (r.changed) {
      out.changed.push(d.row.name);
      restartDevices.add(d.row.name);
    }
    for (const x of r.added) out.added.push(x);
    for (const x of r.changedTags) out.changed.push(x);
    for (const x of r.removed) out.removed.push(x);
  }
  if (mode === 'use') {
    for (const name of gone) {
      out.removed.push(name);
      restartDevices.add(name);
    }
  }
  const changes = out.added.length + out.changed.length + out.removed.length;
  if (mode === 'merge-apply') {
    if (changes > 0) out.restarts.push('acquisition');
  } else for (const name of restartDevices) out.restarts.push(`acquisition: device "${name}"`);
  return out;
}
