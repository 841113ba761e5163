/**
 * The REST list convention (`offset`, `limit`, `sort`, `filter`; `{ items, total, offset, limit }`)
 * over records that are not rows of a table (what a container engine answered, a bounded set
 * read whole): the same query parsing as every other list (`parseListQuery`), applied to an array
 * in memory with the same semantics (`contains` and `startswith` ignore case, `eq` does not, `ne`
 * matches null, nulls sort last). The definition's columns are the records' property names.
 */
import type { FilterCondition, ListDefinition, ListSpec } from './definition.js';
import { listResponse, parseListQuery } from './rest.js';

type Row = Record<string, unknown>;

/** `rows` paged, sorted and filtered by a REST list's query string. */
export function pageInMemory<T extends object>(
  rows: T[],
  query: Record<string, unknown> | undefined,
  def: ListDefinition,
): { items: T[]; total: number; offset: number; limit: number } {
  const spec: ListSpec = parseListQuery(query, def);
  const matching = rows.filter((r) => spec.filter.every((c) => matches((r as Row)[c.field], c)));
  const keys = [...spec.sort, { field: def.tiebreak, order: 'asc' as const }];
  matching.sort((a, b) => {
    for (const k of keys) {
      const x = (a as Row)[k.field];
      const y = (b as Row)[k.field];
      // Nulls last in either direction.
      const xn = x === null || x === undefined;
      const yn = y === null || y === undefined;
      if (xn || yn) {
        if (xn !== yn) return xn ? 1 : -1;
        continue;
      }
      const d = compare(x, y);
      if (d !== 0) return k.order === 'asc' ? d : -d;
    }
    return 0;
  });
  const page = matching.slice(spec.offset, spec.offset + spec.limit);
  return listResponse(spec, { items: page, total: matching.length });
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
}

function matches(value: unknown, c: FilterCondition): boolean {
  const v = c.value;
  const lower = (x: unknown) => String(x).toLowerCase();
  switch (c.op) {
    case 'eq':
      return value === v;
    case 'ne':
      return value === null || value === undefined || value !== v;
    case 'contains':
      return value !== null && value !== undefined && lower(value).includes(lower(v));
    case 'startswith':
      return value !== null && value !== undefined && lower(value).startsWith(lower(v));
    case 'gt':
      return typeof value === 'number' && value > Number(v);
    case 'gte':
      return typeof value === 'number' && value >= Number(v);
    case 'lt':
      return typeof value === 'number' && value < Number(v);
    case 'lte':
      return typeof value === 'number' && value <= Number(v);
    case 'in':
      return Array.isArray(v) && v.includes(value as string);
  }
}
