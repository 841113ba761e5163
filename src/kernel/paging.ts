/**
 * Paged, sorted and filtered lists, for the contract's two list conventions (part 2.2):
 *
 * - REST: query `offset` (default 0), `limit` (default 50), `sort=field:asc|desc[,field:desc...]`
 *   and `filter=field:op:value` (repeatable; ops eq ne contains startswith gt gte lt lte), answered
 *   with `{ items, total, offset, limit }`.
 * - GraphQL: `input: { Limit, Offset, Filter: { Name: { Contains: "pump" } }, Sort: [{ Field, Order }] }`,
 *   answered with `{ Items, Total }`; the input types are in `LIST_SDL`.
 *
 * Both parse into one `ListSpec`, checked against the endpoint's `ListDefinition` (the only fields
 * that may be sorted or filtered, with their columns), and `runList` applies it to a Kysely query on
 * either dialect. Bad input is an `AppError` 400 naming the parameter, the bad value and what is
 * allowed; parameters other than these four are left to the route.
 *
 *     const deviceList: ListDefinition = {
 *       fields: { name: 'device.name', createdAt: { column: 'device.created_at', type: 'integer' } },
 *       tiebreak: 'device.id',
 *       defaultSort: [{ field: 'name', order: 'asc' }],
 *       maxLimit: 200,
 *     };
 *     // schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(DeviceSchema) } }
 *     const spec = parseListQuery(request.query, deviceList);
 *     const page = await runList(database, database.db.selectFrom('device').selectAll(), deviceList, spec);
 *     return listResponse(spec, page);
 *
 * Semantics, the same on both dialects: `contains` and `startswith` ignore case (ASCII letters
 * only on SQLite), `eq` does not; `ne` also matches NULL; NULLs sort last in either direction; the
 * tiebreak column is ordered last so that pages neither overlap nor skip rows.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import type { SelectQueryBuilder, SqlBool } from 'kysely';
import { sql, type Database } from './db/index.js';
import { badRequest } from './errors.js';

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

// ---------------------------------------------------------------------------------------------
// REST

/** Query string of a REST list route: lenient (strings, other parameters allowed). */
export const ListQuerySchema = Type.Object(
  {
    offset: Type.Optional(Type.String({ description: 'rows to skip; default 0' })),
    limit: Type.Optional(Type.String({ description: 'page size; default 50, maximum per endpoint' })),
    sort: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: 'field:asc or field:desc; several separated by commas',
      }),
    ),
    filter: Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: 'field:op:value, op one of eq ne contains startswith gt gte lt lte; repeat for several',
      }),
    ),
  },
  { additionalProperties: true },
);

/** Reply of a REST list route: `{ items, total, offset, limit }`. */
export const ListResponseSchema = <T extends TSchema>(item: T) =>
  Type.Object({
    items: Type.Array(item),
    total: Type.Integer({ minimum: 0 }),
    offset: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1 }),
  });

const restOps: Record<FieldType, FilterOp[]> = {
  string: ['eq', 'ne', 'contains', 'startswith'],
  integer: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'],
  boolean: ['eq', 'ne'],
};

/** Reads `offset`, `limit`, `sort` and `filter` of a REST query string; ignores anything else. */
export function parseListQuery(query: Record<string, unknown> | undefined, def: ListDefinition): ListSpec {
  const d = resolve(def);
  const q = query ?? {};
  const offset = restInteger(q, 'offset', 0, Number.MAX_SAFE_INTEGER) ?? 0;
  const limit = restInteger(q, 'limit', 1, d.maxLimit) ?? d.defaultLimit;

  const sort: SortKey[] = [];
  for (const part of restValues(q, 'sort').flatMap((s) => s.split(','))) {
    if (part.trim() === '') continue;
    const [name = '', order = 'asc', ...rest] = part.split(':').map((s) => s.trim());
    const dir = order.toLowerCase();
    if (rest.length > 0 || name === '' || (dir !== 'asc' && dir !== 'desc')) {
      throw badRequest(`sort must be field:asc or field:desc, got "${part}"`);
    }
    pushSort(sort, sortField(d, name, 'sort').name, dir, 'sort');
  }

  const filter: FilterCondition[] = [];
  for (const text of restValues(q, 'filter')) {
    if (text === '') continue;
    const first = text.indexOf(':');
    const second = first < 0 ? -1 : text.indexOf(':', first + 1);
    if (second < 0) throw badRequest(`filter must be field:op:value, got "${text}"`);
    const field = filterField(d, text.slice(0, first), 'filter');
    const op = text.slice(first + 1, second).toLowerCase() as FilterOp;
    const allowed = restOps[field.type];
    if (!allowed.includes(op)) {
      throw badRequest(
        `filter operator "${text.slice(first + 1, second)}" cannot be used on ${field.name}; ` +
          `operators for ${field.name}: ${allowed.join(', ')}`,
      );
    }
    filter.push({ field: field.name, op, value: restValue(field, text.slice(second + 1)) });
  }

  return { offset, limit, sort: sort.length > 0 ? sort : [...d.defaultSort], filter };
}

/** The REST reply of a list: the page with the paging it answers. */
export function listResponse<T>(spec: ListSpec, page: ListPage<T>) {
  return { items: page.items, total: page.total, offset: spec.offset, limit: spec.limit };
}

/** One query parameter's values: absent → [], repeated → all of them. */
function restValues(q: Record<string, unknown>, name: string): string[] {
  const v = q[name];
  if (v === undefined || v === null) return [];
  const values = Array.isArray(v) ? v : [v];
  for (const x of values) {
    if (typeof x !== 'string') throw badRequest(`${name} must be text, got ${JSON.stringify(x)}`);
  }
  return values as string[];
}

function restInteger(q: Record<string, unknown>, name: string, min: number, max: number): number | undefined {
  const values = restValues(q, name);
  if (values.length > 1) throw badRequest(`${name} must be given once, got ${values.length} values`);
  const raw = values[0];
  if (raw === undefined || raw === '') return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max)) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of ${min} or more` : `from ${min} to ${max}`;
    throw badRequest(`${name} must be an integer ${range}, got "${raw}"`);
  }
  return n;
}

function restValue(field: Field, raw: string): FilterScalar {
  if (field.type === 'integer') {
    const n = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(n))
      throw badRequest(`filter value for ${field.name} must be an integer, got "${raw}"`);
    return n;
  }
  if (field.type === 'boolean') {
    const v = raw.toLowerCase();
    if (v !== 'true' && v !== 'false') {
      throw badRequest(`filter value for ${field.name} must be true or false, got "${raw}"`);
    }
    return v === 'true';
  }
  return raw;
}

// ---------------------------------------------------------------------------------------------
// GraphQL

/**
 * Input types of GraphQL list operations, to include once in a schema. A list input is then, for
 * example, `input ListDevicesInput { Limit: Int, Offset: Int, Filter: DeviceFilter, Sort: [SortInput!] }`
 * with `input DeviceFilter { Name: StringFilter, Debug: BooleanFilter }`. GraphQL `Int` is 32-bit,
 * so epoch-millisecond fields cannot use `IntFilter`.
 */
export const LIST_SDL = `
"Direction of one sort key."
enum SortOrder {
  ASC
  DESC
}

"One sort key: a field name of the listed type; ascending unless Order says otherwise."
input SortInput {
  Field: String!
  Order: SortOrder
}

"Conditions on a text field, all of which must hold. Contains and StartsWith ignore case."
input StringFilter {
  Eq: String
  Ne: String
  Contains: String
  StartsWith: String
  In: [String!]
}

"Conditions on an integer field, all of which must hold."
input IntFilter {
  Eq: Int
  Ne: Int
  Gt: Int
  Gte: Int
  Lt: Int
  Lte: Int
  In: [Int!]
}

input BooleanFilter {
  Eq: Boolean
}
`;

/** A GraphQL list input as resolvers receive it (other keys, such as `IDs`, are ignored). */
export interface ListInput {
  Limit?: number | null;
  Offset?: number | null;
  /** Field → condition, e.g. `{ Name: { Contains: "pump" } }`. */
  Filter?: Record<string, Record<string, unknown> | null> | null;
  Sort?:
    ReadonlyArray<{ Field: string; Order?: string | null }> | { Field: string; Order?: string | null } | null;
}

export interface ListInputOptions {
  /** Bring an out-of-range `Limit` into 1..maxLimit instead of refusing it; default false. */
  clampLimit?: boolean;
}

const graphqlOps: Record<FieldType, Record<string, FilterOp>> = {
  string: { Eq: 'eq', Ne: 'ne', Contains: 'contains', StartsWith: 'startswith', In: 'in' },
  integer: { Eq: 'eq', Ne: 'ne', Gt: 'gt', Gte: 'gte', Lt: 'lt', Lte: 'lte', In: 'in' },
  boolean: { Eq: 'eq' },
};

/** Reads a GraphQL list input `{ Limit, Offset, Filter, Sort }`. */
export function parseListInput(
  input: ListInput | null | undefined,
  def: ListDefinition,
  options: ListInputOptions = {},
): ListSpec {
  const d = resolve(def);
  const i = input ?? {};

  let limit = d.defaultLimit;
  if (i.Limit !== undefined && i.Limit !== null) {
    if (!Number.isSafeInteger(i.Limit))
      throw badRequest(`Limit must be an integer, got ${JSON.stringify(i.Limit)}`);
    limit = i.Limit;
    if (options.clampLimit) limit = Math.min(Math.max(limit, 1), d.maxLimit);
    else if (limit < 1 || limit > d.maxLimit) {
      throw badRequest(`Limit must be an integer from 1 to ${d.maxLimit}, got ${limit}`);
    }
  }
  const offset = i.Offset ?? 0;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw badRequest(`Offset must be an integer of 0 or more, got ${JSON.stringify(offset)}`);
  }

  const sort: SortKey[] = [];
  const keys = i.Sort === undefined || i.Sort === null ? [] : Array.isArray(i.Sort) ? i.Sort : [i.Sort];
  for (const key of keys as Array<{ Field?: unknown; Order?: unknown } | null>) {
    if (typeof key?.Field !== 'string') throw badRequest(`Sort must be a list of { Field, Order }`);
    const order = key.Order ?? 'ASC';
    if (order !== 'ASC' && order !== 'DESC') {
      throw badRequest(`Sort order of ${key.Field} must be ASC or DESC, got ${JSON.stringify(order)}`);
    }
    pushSort(sort, sortField(d, key.Field, 'Sort').name, order === 'ASC' ? 'asc' : 'desc', 'Sort');
  }

  const filter: FilterCondition[] = [];
  if (i.Filter !== undefined && i.Filter !== null) {
    if (typeof i.Filter !== 'object') throw badRequest('Filter must be an object of field conditions');
    for (const [name, condition] of Object.entries(i.Filter)) {
      if (condition === undefined || condition === null) continue;
      const field = filterField(d, name, 'Filter');
      if (typeof condition !== 'object') throw badRequest(`Filter.${name} must be an object of conditions`);
      const ops = graphqlOps[field.type];
      for (const [key, value] of Object.entries(condition)) {
        if (value === undefined || value === null) continue;
        const op = Object.hasOwn(ops, key) ? ops[key] : undefined;
        if (!op) {
          throw badRequest(
            `Filter.${name}.${key} is not supported; ${name} takes ${Object.keys(ops).join(', ')}`,
          );
        }
        filter.push({
          field: field.name,
          op,
          value: graphqlValue(field, `Filter.${name}.${key}`, op, value),
        });
      }
    }
  }

  return { offset, limit, sort: sort.length > 0 ? sort : [...d.defaultSort], filter };
}

function graphqlValue(
  field: Field,
  path: string,
  op: FilterOp,
  value: unknown,
): FilterScalar | FilterScalar[] {
  const check = (v: unknown): FilterScalar => {
    const ok =
      field.type === 'string'
        ? typeof v === 'string'
        : field.type === 'integer'
          ? Number.isSafeInteger(v)
          : typeof v === 'boolean';
    if (!ok) throw badRequest(`${path} must be ${article(field.type)}, got ${JSON.stringify(v)}`);
    return v as FilterScalar;
  };
  if (op !== 'in') return check(value);
  if (!Array.isArray(value)) throw badRequest(`${path} must be a list, got ${JSON.stringify(value)}`);
  if (value.length > MAX_IN_VALUES) {
    throw badRequest(`${path} takes at most ${MAX_IN_VALUES} values, got ${value.length}`);
  }
  return value.map(check);
}

const article = (type: FieldType) => (type === 'integer' ? 'an integer' : `a ${type}`);

// ---------------------------------------------------------------------------------------------
// Running a list

/**
 * Runs `spec` on `query`, the endpoint's base query (joined and restricted by the caller, built on
 * `database.db`, without order or paging: its ORDER BY is replaced). `total` counts the filtered
 * rows; `items` is the requested page, ordered by the sort and then by the tiebreak column.
 */
export async function runList<O>(
  database: Database,
  query: SelectQueryBuilder<any, any, O>,
  def: ListDefinition,
  spec: ListSpec,
): Promise<ListPage<O>> {
  const d = resolve(def);
  let filtered = query.clearOrderBy();
  for (const c of spec.filter) filtered = filtered.where(condition(database, fieldOf(d, c.field), c));

  const counted = await database.db
    .selectFrom(filtered.as('mw_list'))
    .select((eb) => eb.fn.countAll().as('total'))
    .executeTakeFirstOrThrow();

  let paged = filtered;
  for (const key of spec.sort) {
    paged = paged.orderBy(sql.ref(fieldOf(d, key.field).column), (ob) =>
      (key.order === 'desc' ? ob.desc() : ob.asc()).nullsLast(),
    );
  }
  const items = await paged.orderBy(sql.ref(def.tiebreak)).limit(spec.limit).offset(spec.offset).execute();
  return { items: items as O[], total: Number(counted.total) };
}

function condition(database: Database, field: Field, c: FilterCondition) {
  const col = sql.ref(field.column);
  const db = (v: FilterScalar) => (typeof v === 'boolean' ? (v ? 1 : 0) : v);
  const like = (pattern: string) => sql<SqlBool>`${col} ${sql.raw(database.ilike)} ${pattern} escape '!'`;
  if (c.op === 'in') {
    const values = (Array.isArray(c.value) ? c.value : [c.value]).map(db);
    return values.length === 0 ? sql<SqlBool>`1 = 0` : sql<SqlBool>`${col} in (${sql.join(values)})`;
  }
  const v = db(Array.isArray(c.value) ? (c.value[0] ?? '') : c.value);
  switch (c.op) {
    case 'eq':
      return sql<SqlBool>`${col} = ${v}`;
    case 'ne':
      return sql<SqlBool>`(${col} <> ${v} or ${col} is null)`;
    case 'gt':
      return sql<SqlBool>`${col} > ${v}`;
    case 'gte':
      return sql<SqlBool>`${col} >= ${v}`;
    case 'lt':
      return sql<SqlBool>`${col} < ${v}`;
    case 'lte':
      return sql<SqlBool>`${col} <= ${v}`;
    case 'contains':
      return like(`%${escapeLike(String(v))}%`);
    case 'startswith':
      return like(`${escapeLike(String(v))}%`);
  }
}

/** Makes `%`, `_` and the escape character `!` match themselves in a LIKE pattern. */
const escapeLike = (text: string) => text.replace(/[!%_]/g, '!$&');

// ---------------------------------------------------------------------------------------------
// The definition, resolved

interface Field {
  name: string;
  column: string;
  type: FieldType;
  sortable: boolean;
  filterable: boolean;
}

interface Resolved {
  fields: Map<string, Field>;
  defaultSort: SortKey[];
  defaultLimit: number;
  maxLimit: number;
}

/** Normalises a definition; a mistake in it is a programming error (plain Error), not a 400. */
function resolve(def: ListDefinition): Resolved {
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

function fieldOf(d: Resolved, name: string): Field {
  const field = d.fields.get(name);
  if (!field) throw badRequest(`field "${name}" is not listable; fields: ${[...d.fields.keys()].join(', ')}`);
  return field;
}

function sortField(d: Resolved, name: string, param: 'sort' | 'Sort'): Field {
  const field = d.fields.get(name);
  if (field?.sortable) return field;
  const names = [...d.fields.values()].filter((f) => f.sortable).map((f) => f.name);
  throw badRequest(
    `${param} field "${name}" is not sortable; sortable fields: ${names.join(', ') || 'none'}`,
  );
}

function filterField(d: Resolved, name: string, param: 'filter' | 'Filter'): Field {
  const field = d.fields.get(name);
  if (field?.filterable) return field;
  const names = [...d.fields.values()].filter((f) => f.filterable).map((f) => f.name);
  throw badRequest(
    `${param} field "${name}" is not filterable; filterable fields: ${names.join(', ') || 'none'}`,
  );
}

function pushSort(sort: SortKey[], field: string, order: SortOrder, param: 'sort' | 'Sort'): void {
  if (sort.some((k) => k.field === field))
    throw badRequest(`${param} field "${field}" is given more than once`);
  sort.push({ field, order });
}
