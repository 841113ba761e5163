/** REST lists: `offset`, `limit`, `sort`, `filter` in the query string; `{ items, total, offset, limit }`. */
import { Type, type TSchema } from '@sinclair/typebox';
import { badRequest } from '../errors.js';
import {
  filterField,
  pushSort,
  resolve,
  sortField,
  type Field,
  type FieldType,
  type FilterOp,
  type FilterScalar,
  type ListDefinition,
  type ListPage,
  type ListSpec,
  type SortKey,
  type SortOrder,
  type FilterCondition,
} from './definition.js';

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
  for (const { name, order } of restSort(q)) pushSort(sort, sortField(d, name, 'sort').name, order, 'sort');

  const filter: FilterCondition[] = [];
  for (const { name, op, opText, value } of restFilter(q)) {
    const field = filterField(d, name, 'filter');
    const allowed = restOps[field.type];
    if (!allowed.includes(op)) {
      throw badRequest(
        `filter operator "${opText}" cannot be used on ${field.name}; ` +
          `operators for ${field.name}: ${allowed.join(', ')}`,
      );
    }
    filter.push({ field: field.name, op, value: restValue(field, value) });
  }

  return { offset, limit, sort: sort.length > 0 ? sort : [...d.defaultSort], filter };
}

/** The paging parameters a route can declare in its query string schema; each is strict where declared. */
export const PAGING_PARAMETERS = ['limit', 'offset', 'sort', 'filter', 'cursor'] as const;
export type PagingParameter = (typeof PAGING_PARAMETERS)[number];
/** `sort` and `filter` may be repeated (their values add up); these may not. */
const ONCE = new Set<PagingParameter>(['limit', 'offset', 'cursor']);

/** What the kernel checks of one route's paging parameters before its handler runs. */
export interface PagingCheck {
  /** The paging parameters the route's query string schema declares. */
  params: PagingParameter[];
  /** Smallest and largest `limit`, from the schema's `minimum` and `maximum` when it gives them. */
  minLimit: number;
  maxLimit: number;
}

/**
 * The paging check of a route from its query string schema (JSON Schema, as TypeBox writes it):
 * undefined when it declares none of `limit`, `offset`, `sort`, `filter`, `cursor`. Parameters
 * the schema does not declare are not paging parameters of that route and stay ignored.
 */
export function pagingCheckOf(querySchema: unknown): PagingCheck | undefined {
  const properties = (querySchema as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (!properties || typeof properties !== 'object') return undefined;
  const params = PAGING_PARAMETERS.filter((p) => Object.hasOwn(properties, p));
  if (params.length === 0) return undefined;
  const limit = properties.limit as { minimum?: unknown; maximum?: unknown } | undefined;
  const num = (v: unknown, dflt: number) => (typeof v === 'number' && Number.isSafeInteger(v) ? v : dflt);
  return {
    params,
    minLimit: Math.max(1, num(limit?.minimum, 1)),
    maxLimit: num(limit?.maximum, Number.MAX_SAFE_INTEGER),
  };
}

/**
 * Checks the paging parameters of a REST query string against what every list route accepts,
 * before the route's handler runs (installed by the kernel's HTTP app on every route whose query
 * schema declares one): `limit`, `offset` and `cursor` given at most once (`sort` and `filter` add
 * up when repeated); `limit` an integer from the route's minimum
 * (1) to its maximum; `offset` an integer of 0 or more; `sort` `field:asc|desc[,...]`; `filter`
 * `field:op:value` with a known op. Fields are the route's to check (`parseListQuery`). An empty
 * value is the same as none and is removed, so that every route reads it as its default.
 */
export function checkPagingQuery(query: Record<string, unknown>, check: PagingCheck): void {
  for (const name of check.params) {
    const values = restValues(query, name);
    if (values.length > 1 && ONCE.has(name)) {
      throw badRequest(`${name} must be given once, got ${values.length} values`);
    }
    if (values.length === 1 && values[0] === '') delete query[name];
  }
  if (check.params.includes('limit')) restInteger(query, 'limit', check.minLimit, check.maxLimit);
  if (check.params.includes('offset')) restInteger(query, 'offset', 0, Number.MAX_SAFE_INTEGER);
  if (check.params.includes('sort')) restSort(query);
  if (!check.params.includes('filter')) return;
  for (const { opText, op } of restFilter(query)) {
    if (!ALL_OPS.includes(op)) {
      throw badRequest(
        `filter operator "${opText}" is not one of ${ALL_OPS.join(', ')} (filter=field:op:value)`,
      );
    }
  }
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

/** `sort=field[:asc|desc][,...]`, repeatable: the keys in order; a malformed one is a 400. */
function restSort(q: Record<string, unknown>): { name: string; order: SortOrder }[] {
  const keys: { name: string; order: SortOrder }[] = [];
  for (const part of restValues(q, 'sort').flatMap((s) => s.split(','))) {
    if (part.trim() === '') continue;
    const [name = '', order = 'asc', ...rest] = part.split(':').map((s) => s.trim());
    const dir = order.toLowerCase();
    if (rest.length > 0 || name === '' || (dir !== 'asc' && dir !== 'desc')) {
      throw badRequest(`sort must be field:asc or field:desc, got "${part}"`);
    }
    keys.push({ name, order: dir });
  }
  return keys;
}

const ALL_OPS = [...new Set(Object.values(restOps).flat())];

/** `filter=field:op:value`, repeatable: the conditions (ops unchecked); a malformed one is a 400. */
function restFilter(q: Record<string, unknown>) {
  const conditions: { name: string; op: FilterOp; opText: string; value: string }[] = [];
  for (const text of restValues(q, 'filter')) {
    if (text === '') continue;
    const first = text.indexOf(':');
    const second = first < 0 ? -1 : text.indexOf(':', first + 1);
    if (second < 0) throw badRequest(`filter must be field:op:value, got "${text}"`);
    const opText = text.slice(first + 1, second);
    const op = opText.toLowerCase() as FilterOp;
    conditions.push({ name: text.slice(0, first), op, opText, value: text.slice(second + 1) });
  }
  return conditions;
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
