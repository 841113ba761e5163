/**
 * CSV import and export of a company's hierarchy. One line per node, parents before children
 * (by depth, then key), with the columns of `CSV_COLUMNS`; `parentKey` is empty for a root and
 * `attributes` is a JSON object. An export imported into another company and exported again
 * gives the same file. An import is checked whole first: any bad line and nothing is stored, and
 * the answer lists the errors by line (at most `MAX_LINE_ERRORS` of them).
 */
import { badRequest } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import { requireCompany, type CompanyAccess } from './access.js';
import { segment, validateAttributes, validateKey } from './nodes.js';
import type { NodeRow } from './repository.js';
import { validateLabel, type HierarchyService } from './service.js';

export const CSV_COLUMNS = [
  'key',
  'parentKey',
  'name',
  'level',
  'description',
  'deviceId',
  'attributes',
] as const;
/** Line errors an import answers at most. */
export const MAX_LINE_ERRORS = 1000;

export interface LineError {
  line: number;
  message: string;
}

function cell(v: string): string {
  return /[",\r\n]/.test(v) || v !== v.trim() ? `"${v.replace(/"/g, '""')}"` : v;
}

export function csvLine(values: string[]): string {
  return values.map(cell).join(',') + '\n';
}

/** RFC 4180 records with the line each starts on; throws a 400 for an unterminated quote. */
export function parseCsv(text: string): { line: number; values: string[] }[] {
  const out: { line: number; values: string[] }[] = [];
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < text.length) {
    const start = line;
    const values: string[] = [];
    for (;;) {
      let v = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          const q = text.indexOf('"', i);
          if (q < 0) throw badRequest(`line ${start}: a quoted value does not end`);
          v += text.slice(i, q);
          for (const ch of text.slice(i, q)) if (ch === '\n') line++;
          i = q + 1;
          if (text[i] === '"') {
            v += '"';
            i++;
          } else break;
        }
      } else {
        const m = /[,\r\n]/g;
        m.lastIndex = i;
        const hit = m.exec(text);
        const end = hit ? hit.index : text.length;
        v = text.slice(i, end);
        i = end;
      }
      values.push(v);
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '\r') i++;
      if (text[i] === '\n') i++;
      line++;
      break;
    }
    if (!(values.length === 1 && values[0] === '')) out.push({ line: start, values });
  }
  return out;
}

/** The company's hierarchy as CSV (the caller needs a role on the company). */
export async function exportCsv(h: HierarchyService, a: CompanyAccess): Promise<string> {
  requireCompany(a, 'read', 'exporting the hierarchy');
  const rows = await h.repo.allNodes(a.companyId);
  const keyOf = new Map<string, string>();
  for (const r of rows) keyOf.set(r.id, r.key);
  const parts: string[] = [csvLine([...CSV_COLUMNS])];
  for (const r of rows) {
    parts.push(
      csvLine([
        r.key,
        r.parent_id ? keyOf.get(r.parent_id)! : '',
        r.name,
        r.level ?? '',
        r.description,
        r.device_id ?? '',
        r.attributes,
      ]),
    );
  }
  return parts.join('');
}

/** Parses, checks and (unless `dryRun`, and when no line is bad) stores the nodes of `text`. */
export async function importCsv(h: HierarchyService, a: CompanyAccess, text: string, dryRun: boolean) {
  requireCompany(a, 'edit', 'importing a hierarchy');
  const records = parseCsv(text);
  const header = records.shift();
  if (!header) throw badRequest('the CSV is empty: the first line names the columns');
  const col = columns(header.values);
  const errors: LineError[] = [];
  const fail = (line: number, message: string) => {
    if (errors.length < MAX_LINE_ERRORS) errors.push({ line, message });
  };
  const existing = new Map<string, NodeRow>();
  const keys = [
    ...new Set(records.flatMap((r) => [r.values[col.key] ?? '', r.values[col.parentKey] ?? ''])),
  ].filter((k) => k !== '');
  for (let i = 0; i < keys.length; i += 500) {
    for (const n of await h.repo.nodesByKey(a.companyId, keys.slice(i, i + 500))) existing.set(n.key, n);
  }
  const active = await h.activeTemplate(a);
  const levels = active ? new Set(active.levels.map((l) => l.name)) : null;
  const devices = new Map<string, string | null>();
  const fresh = new Map<string, NodeRow>();
  const now = Date.now();
  for (const r of records) {
    try {
      const row = await toRow(r.values, col, { h, a, existing, fresh, levels, devices, now });
      fresh.set(row.key, row);
    } catch (err) {
      fail(r.line, (err as Error).message);
    }
  }
  const count = await h.repo.countNodes(a.companyId);
  if (count + fresh.size > h.limits.maxNodes) {
    fail(
      0,
      `the import would make ${count + fresh.size} nodes, more than ${h.limits.maxNodes} (--hierarchy-max-nodes)`,
    );
  }
  if (errors.length > 0)
    throw badRequest(`${errors.length} line(s) of the CSV are bad; nothing was imported`, { errors });
  if (!dryRun) await h.repo.transaction((repo) => repo.insertNodes([...fresh.values()]));
  h.log.info({ company: a.companyName, nodes: fresh.size, dryRun }, 'hierarchy imported');
  return { imported: dryRun ? 0 : fresh.size, checked: fresh.size, dryRun, errors: [] as LineError[] };
}

type Columns = Record<(typeof CSV_COLUMNS)[number], number>;

function columns(header: string[]): Columns {
  const col = {} as Columns;
  for (const name of CSV_COLUMNS) {
    const at = header.indexOf(name);
    if (at < 0 && (name === 'key' || name === 'name'))
      throw badRequest(`line 1: the CSV has no "${name}" column`);
    col[name] = at;
  }
  const unknown = header.filter((h) => !(CSV_COLUMNS as readonly string[]).includes(h));
  if (unknown.length)
    throw badRequest(
      `line 1: unknown column(s) ${unknown.map((u) => `"${u}"`).join(', ')}; the columns are ${CSV_COLUMNS.join(', ')}`,
    );
  return col;
}

interface ImportState {
  h: HierarchyService;
  a: CompanyAccess;
  existing: Map<string, NodeRow>;
  fresh: Map<string, NodeRow>;
  levels: Set<string> | null;
  /** Device ID to the key of the line that placed it (null: checked, placed by nobody yet). */
  devices: Map<string, string | null>;
  now: number;
}

async function toRow(values: string[], col: Columns, s: ImportState): Promise<NodeRow> {
  const get = (name: keyof Columns) => (col[name] >= 0 ? (values[col[name]] ?? '') : '');
  if (values.length !== Object.values(col).filter((c) => c >= 0).length) {
    throw badRequest(
      `the line has ${values.length} values, the header ${Object.values(col).filter((c) => c >= 0).length}`,
    );
  }
  const key = validateKey(get('key'));
  if (s.fresh.has(key)) throw badRequest(`key "${key}" appears on an earlier line`);
  if (s.existing.has(key)) throw badRequest(`key "${key}" exists in company "${s.a.companyName}"`);
  const parentKey = get('parentKey');
  const parent = parentKey === '' ? null : (s.fresh.get(parentKey) ?? s.existing.get(parentKey));
  if (parent === undefined)
    throw badRequest(`parentKey "${parentKey}" is neither on an earlier line nor in the hierarchy`);
  const depth = (parent?.depth ?? 0) + 1;
  if (depth > s.h.limits.maxDepth)
    throw badRequest(`the node would be at level ${depth}, deeper than ${s.h.limits.maxDepth}`);
  const level = get('level');
  if (level !== '' && s.levels && !s.levels.has(level))
    throw badRequest(`level "${level}" is not a level of the active template`);
  const deviceId = get('deviceId');
  if (deviceId !== '') await checkDevice(s, deviceId, key);
  let attributes: unknown;
  try {
    attributes = JSON.parse(get('attributes') || '{}');
  } catch {
    throw badRequest('attributes is not a JSON object');
  }
  const id = uuidv7(s.now);
  return {
    id,
    company_id: s.a.companyId,
    key,
    parent_id: parent?.id ?? null,
    path: (parent?.path ?? '') + segment(id),
    depth,
    name: validateLabel(get('name'), 'name'),
    level: level === '' ? null : level,
    description: get('description'),
    device_id: deviceId === '' ? null : deviceId,
    attributes: JSON.stringify(validateAttributes(attributes)),
    created_at: s.now,
    updated_at: s.now,
  };
}

async function checkDevice(s: ImportState, deviceId: string, key: string): Promise<void> {
  if (!s.devices.has(deviceId)) {
    const d = await s.h.fleet.device(s.a.principal, deviceId).catch(() => null);
    if (!d || d.companyId !== s.a.companyId)
      throw badRequest(`device "${deviceId}" is not in company "${s.a.companyName}"`);
    if (await s.h.repo.nodeByDevice(s.a.companyId, deviceId))
      throw badRequest(`device "${deviceId}" is placed already`);
    s.devices.set(deviceId, null);
  }
  const by = s.devices.get(deviceId);
  if (by) throw badRequest(`device "${deviceId}" is placed on an earlier line (key "${by}")`);
  s.devices.set(deviceId, key);
}
