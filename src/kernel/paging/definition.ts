/** What a list endpoint allows (`ListDefinition`), what a request asks (`ListSpec`), and the definition resolved for checking requests. */
import { badRequest } from '../errors.js';

export type FieldType = 'string' | 'integer' | 'boolean';

export interface ListField {
  /** Column of the base query, `table.column` or `column` (not a select alias: filters go in WHERE). */
  column: string;
  /** Decides the filter operators and how values are read; default `string`. Booleans are 0/1 columns. */
  type?: FieldType;
  /** Default true. */
  sortable?: boolean;
  /** Default true. */
  filterable?: boolean;
}

/** What one list endpoint allows. */
export interface ListDefinition {
  /** Field name on the wire → its column; a bare string is a sortable, filterable string column. */
  fields: Record<string, string | ListField>;
  /** A unique column ordered after the requested sort, so that paging is stable (e.g. `device.id`). */
  tiebreak: string;
  /** Sort used when the request gives none (the tiebreak alone when absent). */
  defaultSort?: SortKey[];
  /** Default 50. */
  defaultLimit?: number;
  /** Largest page; default 1000, which is also the most allowed. */
  maxLimit?: number;
}

export type SortOrder = 'asc' | 'desc';
export interface SortKey {
  field: string;
  order: SortOrder;
}

export type FilterOp = 'eq' | 'ne' | 'contains' | 'startswith' | 'gt' | 'gte' | 'lt' | 'lte' | 'in';
export type FilterScalar = string | number | boolean;
export interface FilterCondition {
  field: string;
  op: FilterOp;
  /** A list for `in`, else one value of the field's type. */
  value: FilterScalar | FilterScalar[];
}

/** A validated list request, whichever API it came from. Conditions are ANDed. */
export interface ListSpec {
  offset: number;
  limit: number;
  sort: SortKey[];
  filter: FilterCondition[];
}

export interface ListPage<T> {
  items: T[];
  /** Rows matching the filter, ignoring offset and limit. */
  total: number;
}

/** The most values a GraphQL `In` condition may list. */
export const MAX_IN_VALUES = 1000;

export interface Field {
  name: string;
  column: string;
  type: FieldType;
  sortable: boolean;
  filterable: boolean;
}

export interface Resolved {
  fields: Map<string, Field>;
  defaultSort: SortKey[];
  defaultLimit: number;
  maxLimit: number;
}

/** Normalises a definition; a mistake in it is a programming error (plain Error), not a 400. */
export function resolve(def: ListDefinition): Resolved {
  const fields = new Map<string, Field>();
  for (const [name, f] of Object.entries(def.fields)) {
    const spec = typeof f === 'string' ? { column: f } : f;
    fields.set(name, {
      name,
      column: spec.column,
      type: spec.type ?? 'string',
      sortable: spec.sortable ?? true,
      filterable: spec.filterable ?? true,
    });
  }
  const maxLimit = def.maxLimit ?? 1000;
  const defaultLimit = def.defaultLimit ?? Math.min(50, maxLimit);
  if (!Number.isInteger(maxLimit) || maxLimit < 1 || maxLimit > 1000) {
    throw new Error(`list maxLimit must be an integer from 1 to 1000, got ${maxLimit}`);
  }
  if (!Number.isInteger(defaultLimit) || defaultLimit < 1 || defaultLimit > maxLimit) {
    throw new Error(
      `list defaultLimit must be an integer from 1 to maxLimit ${maxLimit}, got ${defaultLimit}`,
    );
  }
  if (!def.tiebreak) throw new Error('list definition needs a tiebreak column');
  for (const key of def.defaultSort ?? []) {
    if (!fields.has(key.field))
      throw new Error(`list defaultSort field "${key.field}" is not among the fields`);
  }
  return { fields, defaultSort: def.defaultSort ?? [], defaultLimit, maxLimit };
}

export function fieldOf(d: Resolved, name: string): Field {
  const field = d.fields.get(name);
  if (!field) throw badRequest(`field "${name}" is not listable; fields: ${[...d.fields.keys()].join(', ')}`);
  return field;
}

export function sortField(d: Resolved, name: string, param: 'sort' | 'Sort'): Field {
  const field = d.fields.get(name);
  if (field?.sortable) return field;
  const names = [...d.fields.values()].filter((f) => f.sortable).map((f) => f.name);
  throw badRequest(
    `${param} field "${name}" is not sortable; sortable fields: ${names.join(', ') || 'none'}`,
  );
}

export function filterField(d: Resolved, name: string, param: 'filter' | 'Filter'): Field {
  const field = d.fields.get(name);
  if (field?.filterable) return field;
  const names = [...d.fields.values()].filter((f) => f.filterable).map((f) => f.name);
  throw badRequest(
    `${param} field "${name}" is not filterable; filterable fields: ${names.join(', ') || 'none'}`,
  );
}

export function pushSort(sort: SortKey[], field: string, order: SortOrder, param: 'sort' | 'Sort'): void {
  if (sort.some((k) => k.field === field))
    throw badRequest(`${param} field "${field}" is given more than once`);
  sort.push({ field, order });
}
