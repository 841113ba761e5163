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
export {
  MAX_IN_VALUES,
  type FieldType,
  type FilterCondition,
  type FilterOp,
  type FilterScalar,
  type ListDefinition,
  type ListField,
  type ListPage,
  type ListSpec,
  type SortKey,
  type SortOrder,
} from './definition.js';
export * from './rest.js';
export * from './graphql.js';
export * from './query.js';
export * from './memory.js';
