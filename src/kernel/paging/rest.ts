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
