/** GraphQL lists: `input: { Limit, Offset, Filter, Sort }` (types in `LIST_SDL`), `{ Items, Total }`. */
import { badRequest } from '../errors.js';
import {
  filterField,
  MAX_IN_VALUES,
  pushSort,
  resolve,
  sortField,
  type Field,
  type FieldType,
  type FilterOp,
  type FilterScalar,
  type ListDefinition,
  type ListSpec,
  type SortKey,
  type FilterCondition,
} from './definition.js';

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
