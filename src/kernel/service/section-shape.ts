/**
 * Small shape checks for configuration sections: each answers the problems it finds as
 * `SectionIssue`s naming the item (`devices[3].Tags[0].TagName`), so that a malformed template is
 * refused with the section and the item named.
 */
import type { ApplyMode, SectionDiff, SectionIssue } from './config-section.js';

export type FieldKind = 'string' | 'boolean' | 'integer' | 'object' | 'array' | 'string[]' | 'secret' | 'any';

export interface ShapeResult {
  ok: boolean;
}

const kindOk = (kind: FieldKind, v: unknown): boolean => {
  switch (kind) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'array':
      return Array.isArray(v);
    case 'string[]':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
    case 'secret':
      return (
        typeof v === 'object' &&
        v !== null &&
        !Array.isArray(v) &&
        Object.keys(v).length === 1 &&
        (typeof (v as Record<string, unknown>).$secret === 'string' ||
          typeof (v as Record<string, unknown>).$encrypted === 'string')
      );
    default:
      return true;
  }
};

const kindText: Record<FieldKind, string> = {
  string: 'a string',
  boolean: 'a boolean',
  integer: 'an integer',
  object: 'an object',
  array: 'an array',
  'string[]': 'an array of strings',
  secret: 'a secret ({"$secret": ...} or {"$encrypted": ...})',
  any: 'a value',
};

/**
 * Checks that `value` at `path` is an object with only the `fields` given (a field ending in `?`
 * is optional; `null` is accepted for optional fields with `nullable`). Answers whether it was.
 */
export function checkObject(
  issues: SectionIssue[],
  path: string,
  value: unknown,
  fields: Record<string, FieldKind>,
  options: { nullable?: readonly string[] } = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the checked object, which the config sections (others' files, issue 24) cast to their section type; Record<string, unknown> breaks those casts
): value is Record<string, any> {
  if (!kindOk('object', value)) {
    issues.push({ path, message: 'must be an object' });
    return false;
  }
  const obj = value as Record<string, unknown>;
  const before = issues.length;
  const known = compiled(fields);
  for (const key in obj) {
    if (!Object.hasOwn(obj, key)) continue;
    if (!known.has(key)) issues.push({ path: join(path, key), message: `unknown field "${key}"` });
  }
  for (const [key, { kind, optional }] of known) {
    const v = obj[key];
    if (v === undefined) {
      if (!optional) issues.push({ path: join(path, key), message: `${key} is required` });
      continue;
    }
    if (v === null && options.nullable?.includes(key)) continue;
    if (!kindOk(kind, v)) issues.push({ path: join(path, key), message: `must be ${kindText[kind]}` });
  }
  return issues.length === before;
}

type Compiled = Map<string, { kind: FieldKind; optional: boolean }>;
/** The field lists already read, by identity: a section checks 100,000 tags against one list. */
const shapes = new WeakMap<Record<string, FieldKind>, Compiled>();

function compiled(fields: Record<string, FieldKind>): Compiled {
  let known = shapes.get(fields);
  if (known) return known;
  known = new Map();
  for (const [k, kind] of Object.entries(fields)) {
    const optional = k.endsWith('?');
    known.set(optional ? k.slice(0, -1) : k, { kind, optional });
  }
  // Kept by identity: a field list is a module constant or a literal of one call (never changed).
  shapes.set(fields, known);
  return known;
}

export const join = (path: string, key: string | number): string =>
  typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key;

/** Runs `fn`; an error it throws becomes an issue at `path` (its message). */
export function issueOf(issues: SectionIssue[], path: string, fn: () => void): boolean {
  try {
    fn();
    return true;
  } catch (err) {
    issues.push({ path, message: err instanceof Error ? err.message : String(err) });
    return false;
  }
}

/** JSON text of `v` with object keys sorted: equal values give equal texts. */
export function canonical(v: unknown): string {
  return JSON.stringify(sortKeys(v));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

/**
 * What applying `target` over `current` changes, for a section that is a list of items keyed by
 * an id (`same` compares two versions of an item). With `use`, items not in the target are
 * removed; otherwise they stay.
 */
export function diffByKey<T>(
  current: readonly T[],
  target: readonly T[],
  key: (item: T) => string,
  same: (was: T, now: T) => boolean,
  mode: ApplyMode,
): SectionDiff {
  const cur = new Map(current.map((c) => [key(c), c]));
  const out: SectionDiff = { added: [], changed: [], removed: [], restarts: [] };
  for (const item of target) {
    const id = key(item);
    const was = cur.get(id);
    if (!was) out.added.push(id);
    else if (!same(was, item)) out.changed.push(id);
    cur.delete(id);
  }
  if (mode === 'use') out.removed.push(...cur.keys());
  return out;
}

/**
 * The union of `current` and `template` by key, the template's version of an item winning; a
 * secret field (if the items have one) the template leaves out (exported without a key) keeps the
 * current value. Answers
 * the ids of existing items the union would change (a merge asks for confirmation of those).
 */
export function mergeByKey<T extends object>(
  current: readonly T[],
  template: readonly T[],
  key: (item: T) => string,
  secretField?: keyof T,
): { merged: T[]; overwrites: string[] } {
  const byId = new Map(current.map((c) => [key(c), c]));
  const overwrites: string[] = [];
  for (const t of template) {
    const id = key(t);
    const c = byId.get(id);
    const keepSecret = secretField !== undefined && !t[secretField] && c?.[secretField];
    const m = { ...c, ...t, ...(keepSecret ? { [secretField]: c[secretField] } : {}) } as T;
    if (c && canonical(c) !== canonical(m)) overwrites.push(id);
    byId.set(id, m);
  }
  return { merged: [...byId.values()], overwrites };
}
