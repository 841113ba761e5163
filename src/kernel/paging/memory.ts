/** Running a list held in memory (live connections, a bounded set of rows): the semantics of `runList`. */
import {
  fieldOf,
  resolve,
  type FilterCondition,
  type FilterScalar,
  type ListDefinition,
  type ListPage,
  type ListSpec,
} from './definition.js';
import { listResponse, parseListQuery } from './rest.js';

type Cell = FilterScalar | null | undefined;

/**
 * Applies `spec` to `items` as `runList` does to a query: conditions ANDed, `contains` and
 * `startswith` ignoring case, `ne` matching a missing value, missing values sorted last, then the
 * tiebreak. A field's `column` (and the definition's `tiebreak`) names the item's property.
 */
export function listInMemory<T extends object>(
  items: readonly T[],
  def: ListDefinition,
  spec: ListSpec,
): ListPage<T> {
  const d = resolve(def);
  const cell = (item: T, column: string): Cell => {
    const v = (item as Record<string, unknown>)[column];
    return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : null;
  };
  const filtered = items.filter((item) =>
    spec.filter.every((c) => matches(cell(item, fieldOf(d, c.field).column), c)),
  );
  const keys = [
    ...spec.sort.map((k) => ({ column: fieldOf(d, k.field).column, sign: k.order === 'desc' ? -1 : 1 })),
    { column: def.tiebreak, sign: 1 },
  ];
  const sorted = [...filtered].sort((a, b) => {
    for (const { column, sign } of keys) {
      const order = compare(cell(a, column), cell(b, column), sign);
      if (order !== 0) return order;
    }
    return 0;
  });
  return { items: sorted.slice(spec.offset, spec.offset + spec.limit), total: filtered.length };
}

/** Missing values last whatever the direction, as `runList`'s NULLS LAST. */
function compare(a: Cell, b: Cell, sign: number): number {
  const aNull = a === null || a === undefined;
  const bNull = b === null || b === undefined;
  if (aNull || bNull) return aNull === bNull ? 0 : aNull ? 1 : -1;
  if (a === b) return 0;
  return (a < b ? -1 : 1) * sign;
}

function matches(v: Cell, c: FilterCondition): boolean {
  const values = Array.isArray(c.value) ? c.value : [c.value];
  const x = values[0];
  if (c.op === 'ne') return v === null || v === undefined || v !== x;
  if (v === null || v === undefined) return false;
  switch (c.op) {
    case 'in':
      return values.includes(v);
    case 'eq':
      return v === x;
    case 'gt':
      return x !== undefined && v > x;
    case 'gte':
      return x !== undefined && v >= x;
    case 'lt':
      return x !== undefined && v < x;
    case 'lte':
      return x !== undefined && v <= x;
    case 'contains':
      return String(v).toLowerCase().includes(String(x).toLowerCase());
    case 'startswith':
      return String(v).toLowerCase().startsWith(String(x).toLowerCase());
  }
}

/**
 * A REST list's query string (`offset`, `limit`, `sort`, `filter`) applied to records held in
 * memory (what a container engine answered, a bounded set read whole), answered in the REST list
 * shape `{ items, total, offset, limit }`.
 */
export function pageInMemory<T extends object>(
  rows: readonly T[],
  query: Record<string, unknown> | undefined,
  def: ListDefinition,
): { items: T[]; total: number; offset: number; limit: number } {
  const spec = parseListQuery(query, def);
  return listResponse(spec, listInMemory(rows, def, spec));
}
