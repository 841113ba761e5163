/**
 * The one validator of device and tag properties against the driver catalogue. Every refusal
 * names the device or tag, the property, the bad value and the values allowed, e.g.
 *
 *     device "line-3": property "parity" does not allow "3"; allowed values: 0 (None), 1 (Odd), 2 (Even)
 */
import { badRequest } from '../../kernel/errors.js';
import type { DriverDef, ListValue, PropertyDef, RegisterDef, TableColumn } from './catalogue/index.js';

/** A name/value pair as it arrives (device `{Key, Value}`, register `{Name, Value}`). */
export interface PropertyInput {
  name: string;
  value: string | null | undefined;
}

const listText = (values: ListValue[]) => values.map((v) => `${v.value} (${v.label})`).join(', ');

/** What the property allows, in words, for messages. */
export function allowedText(def: PropertyDef): string {
  if (def.listValues) return `allowed values: ${listText(def.listValues)}`;
  switch (def.type) {
    case 'SignedInteger':
    case 'UnsignedInteger':
      return `allowed values: integers from ${def.min ?? (def.type === 'UnsignedInteger' ? 0 : '-9007199254740991')} to ${def.max ?? 9007199254740991}`;
    case 'Float':
      return def.min !== undefined || def.max !== undefined
        ? `allowed values: numbers from ${def.min ?? '-∞'} to ${def.max ?? '∞'}`
        : 'allowed values: any number';
    case 'Boolean':
      return 'allowed values: true, false';
    case 'Table':
    case 'RowFixedTable':
      return `allowed values: a JSON array of rows with columns ${(def.columns ?? []).map((c) => c.name).join(', ')}`;
    default:
      return 'allowed values: any text';
  }
}

/** Checks and normalises one value; answers the stored text or a reason (without the subject). */
export function checkValue(def: PropertyDef, raw: string): { value: string } | { reason: string } {
  const bad = () => ({
    reason: `property "${def.name}" does not allow ${JSON.stringify(raw)}; ${allowedText(def)}`,
  });
  let value = raw;
  switch (def.type) {
    case 'SignedInteger':
    case 'UnsignedInteger': {
      const text = raw.trim();
      if (!(def.type === 'UnsignedInteger' ? /^\+?\d+$/ : /^[-+]?\d+$/).test(text)) return bad();
      const n = Number(text);
      if (!Number.isSafeInteger(n)) return bad();
      if ((def.min !== undefined && n < def.min) || (def.max !== undefined && n > def.max)) return bad();
      value = String(n);
      break;
    }
    case 'Float': {
      const text = raw.trim();
      const n = Number(text);
      if (text === '' || !Number.isFinite(n)) return bad();
      if ((def.min !== undefined && n < def.min) || (def.max !== undefined && n > def.max)) return bad();
      value = String(n);
      break;
    }
    case 'Boolean': {
      const text = raw.trim().toLowerCase();
      if (text === 'true' || text === '1') value = 'true';
      else if (text === 'false' || text === '0') value = 'false';
      else return bad();
      break;
    }
    case 'Table':
    case 'RowFixedTable': {
      const reason = checkTable(def, raw);
      if (reason)
        return {
          reason: `property "${def.name}" does not allow ${JSON.stringify(raw)}: ${reason}; ${allowedText(def)}`,
        };
      value = JSON.stringify(JSON.parse(raw));
      break;
    }
    default:
      break;
  }
  if (def.listValues && !def.listValues.some((v) => v.value === value)) return bad();
  return { value };
}

function checkTable(def: PropertyDef, raw: string): string | undefined {
  let rows: unknown;
  try {
    rows = JSON.parse(raw);
  } catch {
    return 'not JSON';
  }
  if (!Array.isArray(rows)) return 'not an array of rows';
  const columns = def.columns ?? [];
  const fixed =
    def.type === 'RowFixedTable' ? (JSON.parse(def.default ?? '[]') as Record<string, string>[]) : undefined;
  if (fixed && rows.length !== fixed.length)
    return `the table has ${fixed.length} fixed rows, got ${rows.length}`;
  for (const [i, row] of rows.entries()) {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) return `row ${i + 1} is not an object`;
    for (const key of Object.keys(row)) {
      if (!columns.some((c) => c.name === key)) return `row ${i + 1} has unknown column "${key}"`;
    }
    for (const c of columns) {
      const cell = (row as Record<string, unknown>)[c.name];
      const text = cell === undefined || cell === null ? '' : String(cell);
      if (fixed && c.readOnly && text !== (fixed[i]?.[c.name] ?? '')) {
        return `row ${i + 1} column "${c.name}" is read-only and must stay ${JSON.stringify(fixed[i]?.[c.name] ?? '')}`;
      }
      if (text === '') {
        if (!c.allowEmpty) return `row ${i + 1} column "${c.name}" may not be empty`;
        continue;
      }
      const cellCheck = checkValue(columnDef(c), text);
      if ('reason' in cellCheck) return `row ${i + 1} column "${c.name}": ${cellCheck.reason}`;
    }
  }
  return undefined;
}

const columnDef = (c: TableColumn): PropertyDef => ({
  name: c.name,
  label: c.label,
  description: '',
  type: c.valueType,
  required: !c.allowEmpty,
  ...(c.listValues ? { listValues: c.listValues } : {}),
});

/** The catalogue's property lists by name, made once per list (a tag is checked against one). */
const byNameOf = new WeakMap<PropertyDef[], Map<string, PropertyDef>>();
function defsByName(defs: PropertyDef[]): Map<string, PropertyDef> {
  let m = byNameOf.get(defs);
  if (!m) byNameOf.set(defs, (m = new Map(defs.map((d) => [d.name, d]))));
  return m;
}

/**
 * The full, normalised property set: `given` over `base` (the stored values on update), defaults
 * for the rest. Throws a 400 naming `subject` on the first problem.
 */
export function resolveProperties(
  subject: string,
  owner: string,
  defs: PropertyDef[],
  given: PropertyInput[],
  base: Record<string, string> = {},
): Record<string, string> {
  const byName = defsByName(defs);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (byName.has(k)) out[k] = v;
  const seen = new Set<string>();
  for (const p of given) {
    const def = byName.get(p.name);
    if (!def) {
      throw badRequest(
        `${subject}: ${owner} has no property ${JSON.stringify(p.name)}; properties: ${defs.map((d) => d.name).join(', ') || 'none'}`,
      );
    }
    if (seen.has(p.name)) throw badRequest(`${subject}: property "${p.name}" is given more than once`);
    seen.add(p.name);
    if (
      p.value === null ||
      p.value === undefined ||
      (p.value === '' && def.type !== 'String' && def.type !== 'Password')
    ) {
      // Empty: back to the default.
      delete out[p.name];
      continue;
    }
    const checked = checkValue(def, p.value);
    if ('reason' in checked) throw badRequest(`${subject}: ${checked.reason}`);
    out[p.name] = checked.value;
  }
  for (const def of defs) {
    if (out[def.name] !== undefined) continue;
    if (def.default !== undefined) out[def.name] = def.default;
    else if (def.required)
      throw badRequest(`${subject}: property "${def.name}" is required; ${allowedText(def)}`);
  }
  for (const def of defs) {
    if (def.required && out[def.name] === '') {
      throw badRequest(
        `${subject}: property "${def.name}" is required and may not be empty; ${allowedText(def)}`,
      );
    }
  }
  // Keep the catalogue's order, so that reads and exports are stable.
  const ordered: Record<string, string> = {};
  for (const def of defs) if (out[def.name] !== undefined) ordered[def.name] = out[def.name]!;
  return ordered;
}

export function findRegister(subject: string, driver: DriverDef, name: string): RegisterDef {
  const reg = driver.registers.find((r) => r.name === name);
  if (!reg) {
    const names = driver.registers.map((r) => r.name);
    throw badRequest(
      `${subject}: register ${JSON.stringify(name)} is not a register of driver "${driver.name}"; registers: ${names.join(', ')}`,
    );
  }
  return reg;
}

export function checkValueType(subject: string, reg: RegisterDef, valueType: string): void {
  if (!reg.valueTypes.includes(valueType)) {
    throw badRequest(
      `${subject}: value type ${JSON.stringify(valueType)} is not allowed on register "${reg.name}"; allowed values: ${reg.valueTypes.join(', ')}`,
    );
  }
}

/** Device and tag names: used in DataHub subjects, so no dots, spaces or wildcards. */
const NAME = /^[A-Za-z0-9_\-:]+$/;
const NAME_TEXT = 'letters, digits, _ - and : (it becomes part of DataHub subjects)';
export function checkName(subject: string, field: string, name: string | null | undefined): string {
  if (typeof name !== 'string' || name.trim() === '') {
    throw badRequest(`${subject}: ${field} is required; allowed values: ${NAME_TEXT}`);
  }
  if (name.length > 200) throw badRequest(`${subject}: ${field} is longer than 200 characters`);
  if (!NAME.test(name)) {
    throw badRequest(
      `${subject}: ${field} ${JSON.stringify(name)} is not allowed; allowed values: ${NAME_TEXT}`,
    );
  }
  return name;
}
