/**
 * Parameters of templates: `{{name}}` placeholders of a document's sections, the values by
 * scope merged per device, and their checks. Plain functions, no I/O.
 */
import { badRequest } from '../../kernel/errors.js';

export type ScopeType = 'GLOBAL' | 'COMPANY' | 'PROJECT' | 'DEVICE';
/** The order scopes' values are merged in (a later one wins). */
export const SCOPE_ORDER: readonly ScopeType[] = ['GLOBAL', 'COMPANY', 'PROJECT', 'DEVICE'];
export type Parameters = Record<string, Record<string, string | number | boolean>>;

const PLACEHOLDER = /(^|[^\\])\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/** Placeholders of a section: names, and where each is used. */
export function placeholders(content: unknown, path: string, out: Map<string, Set<string>>): void {
  if (typeof content === 'string') {
    for (const m of content.matchAll(PLACEHOLDER)) {
      const set = out.get(m[2]!) ?? new Set<string>();
      if (set.size < 20) set.add(path);
      out.set(m[2]!, set);
    }
  } else if (Array.isArray(content)) content.forEach((v, i) => placeholders(v, `${path}[${i}]`, out));
  else if (content && typeof content === 'object')
    for (const [k, v] of Object.entries(content)) placeholders(v, path ? `${path}.${k}` : k, out);
}

/** The sets merged section by section, a later value winning. */
export function mergeParameters(...sets: (Parameters | undefined)[]): Parameters {
  const out: Parameters = {};
  for (const s of sets) {
    if (!s) continue;
    for (const [section, values] of Object.entries(s)) out[section] = { ...out[section], ...values };
  }
  return out;
}

/** `value` as parameters (an object of sections of scalar values), or a 400 naming `field`. */
export function checkParams(value: unknown, field: string): Parameters {
  if (value === undefined) return {};
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw badRequest(`${field} must be an object keyed by section (not an array)`);
  for (const [section, values] of Object.entries(value)) {
    if (!values || typeof values !== 'object' || Array.isArray(values))
      throw badRequest(`${field}.${section} must be an object of parameter values`);
    for (const [k, v] of Object.entries(values)) {
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
        throw badRequest(`${field}.${section}.${k} must be a string, number or boolean`);
    }
  }
  return value as Parameters;
}
