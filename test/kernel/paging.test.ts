import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { buildSchema, graphql } from 'graphql';
import { AppError, ERRORS } from '../../src/kernel/errors.js';
import {
  LIST_SDL,
  ListQuerySchema,
  ListResponseSchema,
  listResponse,
  parseListInput,
  parseListQuery,
  runList,
  type ListDefinition,
  type ListInput,
  type ListSpec,
} from '../../src/kernel/paging.js';
import { Type } from '@sinclair/typebox';
import { forEachDialect } from '../helpers/postgres.js';

const rest: ListDefinition = {
  fields: {
    name: 'device.name',
    kind: 'device.kind',
    note: 'device.note',
    rank: { column: 'device.rank', type: 'integer' },
    createdAt: { column: 'device.created_at', type: 'integer' },
    enabled: { column: 'device.enabled', type: 'boolean' },
    secret: { column: 'device.secret', sortable: false, filterable: false },
    label: { column: 'device.label', sortable: false },
    code: { column: 'device.code', filterable: false },
  },
  tiebreak: 'device.id',
  defaultSort: [{ field: 'name', order: 'asc' }],
  maxLimit: 200,
};

/** Asserts that `fn` throws an AppError 400 with exactly `message`. */
function bad(fn: () => unknown, message: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError, `expected AppError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, ERRORS.badRequest.code);
    assert.equal(err.message, message);
    return true;
  });
}

const q = (query: Record<string, unknown>) => parseListQuery(query, rest);

describe('REST list query', () => {
  test('defaults: offset 0, limit 50, the default sort, no filter; unknown parameters ignored', () => {
    const expected: ListSpec = { offset: 0, limit: 50, sort: [{ field: 'name', order: 'asc' }], filter: [] };
    assert.deepEqual(q({}), expected);
    assert.deepEqual(parseListQuery(undefined, rest), expected);
    assert.deepEqual(q({ page: '3', foo: ['a', 'b'], limt: 'x' }), expected);
    assert.deepEqual(q({ offset: '', limit: '', sort: '', filter: '' }), expected);
    assert.deepEqual(parseListQuery({}, { fields: { a: 'a' }, tiebreak: 'id' }).sort, []);
    assert.equal(parseListQuery({}, { fields: {}, tiebreak: 'id', maxLimit: 20 }).limit, 20);
    assert.equal(parseListQuery({}, { fields: {}, tiebreak: 'id', defaultLimit: 10 }).limit, 10);
  });

  test('offset and limit', () => {
    assert.equal(q({ offset: '0' }).offset, 0);
    assert.equal(q({ offset: '12345' }).offset, 12345);
    assert.equal(q({ limit: '1' }).limit, 1);
    assert.equal(q({ limit: '200' }).limit, 200);
    assert.equal(q({ limit: '007' }).limit, 7);
    assert.equal(q({ offset: ['5'] }).offset, 5);
    for (const v of ['-1', 'abc', '1.5', ' 1', '1e3', '+1', '0x10', '99999999999999999999']) {
      bad(() => q({ offset: v }), `offset must be an integer of 0 or more, got "${v}"`);
    }
    for (const v of ['0', '201', '5000', '-1', 'ten', '2.0']) {
      bad(() => q({ limit: v }), `limit must be an integer from 1 to 200, got "${v}"`);
    }
    bad(() => q({ limit: ['10', '20'] }), 'limit must be given once, got 2 values');
    bad(() => q({ offset: 3 }), 'offset must be text, got 3');
  });

  test('sort: field:asc|desc, comma-separated or repeated, bare field ascending', () => {
    assert.deepEqual(q({ sort: 'createdAt:desc' }).sort, [{ field: 'createdAt', order: 'desc' }]);
    assert.deepEqual(q({ sort: 'kind' }).sort, [{ field: 'kind', order: 'asc' }]);
    assert.deepEqual(q({ sort: 'kind:ASC, rank:Desc,' }).sort, [
      { field: 'kind', order: 'asc' },
      { field: 'rank', order: 'desc' },
    ]);
    assert.deepEqual(q({ sort: ['kind:desc', 'name:asc,code:desc'] }).sort, [
      { field: 'kind', order: 'desc' },
      { field: 'name', order: 'asc' },
      { field: 'code', order: 'desc' },
    ]);
  });

  test('sort errors name the value and what is allowed', () => {
    const sortable = 'sortable fields: name, kind, note, rank, createdAt, enabled, code';
    bad(() => q({ sort: 'foo:asc' }), `sort field "foo" is not sortable; ${sortable}`);
    bad(() => q({ sort: 'secret' }), `sort field "secret" is not sortable; ${sortable}`);
    bad(() => q({ sort: 'label:desc' }), `sort field "label" is not sortable; ${sortable}`);
    bad(() => q({ sort: 'Name:asc' }), `sort field "Name" is not sortable; ${sortable}`);
    for (const v of ['name:up', 'name:', 'name:asc:x', ':asc', 'name desc']) {
      const message =
        v === 'name desc'
          ? `sort field "name desc" is not sortable; ${sortable}`
          : `sort must be field:asc or field:desc, got "${v}"`;
      bad(() => q({ sort: v }), message);
    }
    bad(() => q({ sort: 'name:asc,name:desc' }), 'sort field "name" is given more than once');
    bad(() => q({ sort: ['name', 'kind', 'name'] }), 'sort field "name" is given more than once');
  });

  test('filter: field:op:value, repeatable, value kept whole (colons and commas included)', () => {
    assert.deepEqual(q({ filter: 'name:contains:pump' }).filter, [
      { field: 'name', op: 'contains', value: 'pump' },
    ]);
    assert.deepEqual(q({ filter: 'note:eq:a:b:c' }).filter, [{ field: 'note', op: 'eq', value: 'a:b:c' }]);
    assert.deepEqual(q({ filter: 'note:eq:a,b' }).filter, [{ field: 'note', op: 'eq', value: 'a,b' }]);
    assert.deepEqual(q({ filter: 'note:ne:' }).filter, [{ field: 'note', op: 'ne', value: '' }]);
    assert.deepEqual(q({ filter: 'label:StartsWith:X' }).filter, [
      { field: 'label', op: 'startswith', value: 'X' },
    ]);
    assert.deepEqual(
      q({ filter: ['createdAt:gte:1700000000000', 'createdAt:lt:-5', 'enabled:eq:TRUE'] }).filter,
      [
        { field: 'createdAt', op: 'gte', value: 1_700_000_000_000 },
        { field: 'createdAt', op: 'lt', value: -5 },
        { field: 'enabled', op: 'eq', value: true },
      ],
    );
    assert.deepEqual(q({ filter: 'enabled:ne:false' }).filter, [
      { field: 'enabled', op: 'ne', value: false },
    ]);
    for (const op of ['eq', 'ne', 'gt', 'gte', 'lt', 'lte']) {
      assert.deepEqual(q({ filter: `rank:${op}:3` }).filter, [{ field: 'rank', op, value: 3 }]);
    }
  });

  test('filter errors name the value and what is allowed', () => {
    const filterable = 'filterable fields: name, kind, note, rank, createdAt, enabled, label';
    for (const v of ['name', 'name:eq', 'nameeqx']) {
      bad(() => q({ filter: v }), `filter must be field:op:value, got "${v}"`);
    }
    bad(() => q({ filter: 'foo:eq:x' }), `filter field "foo" is not filterable; ${filterable}`);
    bad(() => q({ filter: 'secret:eq:x' }), `filter field "secret" is not filterable; ${filterable}`);
    bad(() => q({ filter: 'code:eq:x' }), `filter field "code" is not filterable; ${filterable}`);
    bad(() => q({ filter: ':eq:x' }), `filter field "" is not filterable; ${filterable}`);
    bad(
      () => q({ filter: 'name:gt:m' }),
      'filter operator "gt" cannot be used on name; operators for name: eq, ne, contains, startswith',
    );
    bad(
      () => q({ filter: 'name:like:%a%' }),
      'filter operator "like" cannot be used on name; operators for name: eq, ne, contains, startswith',
    );
    bad(
      () => q({ filter: 'name::x' }),
      'filter operator "" cannot be used on name; operators for name: eq, ne, contains, startswith',
    );
    bad(
      () => q({ filter: 'rank:contains:1' }),
      'filter operator "contains" cannot be used on rank; operators for rank: eq, ne, gt, gte, lt, lte',
    );
    bad(
      () => q({ filter: 'enabled:gt:0' }),
      'filter operator "gt" cannot be used on enabled; operators for enabled: eq, ne',
    );
    bad(
      () => q({ filter: 'name:in:a' }),
      'filter operator "in" cannot be used on name; operators for name: eq, ne, contains, startswith',
    );
    for (const v of ['abc', '1.5', '', '1e3', '99999999999999999999']) {
      bad(
        () => q({ filter: `createdAt:gt:${v}` }),
        `filter value for createdAt must be an integer, got "${v}"`,
      );
    }
    for (const v of ['yes', '1', '']) {
      bad(
        () => q({ filter: `enabled:eq:${v}` }),
        `filter value for enabled must be true or false, got "${v}"`,
      );
    }
    bad(() => q({ filter: ['name:eq:x', { a: 1 }] }), 'filter must be text, got {"a":1}');
  });

  test('a mistaken definition is a programming error, not a 400', () => {
    const mistakes: Array<[Partial<ListDefinition>, RegExp]> = [
      [{ maxLimit: 5000 }, /maxLimit must be an integer from 1 to 1000, got 5000/],
      [{ maxLimit: 0 }, /maxLimit/],
      [
        { maxLimit: 100, defaultLimit: 101 },
        /defaultLimit must be an integer from 1 to maxLimit 100, got 101/,
      ],
      [{ defaultSort: [{ field: 'nope', order: 'asc' }] }, /defaultSort field "nope"/],
      [{ tiebreak: '' }, /tiebreak/],
    ];
    for (const [change, message] of mistakes) {
      assert.throws(
        () => parseListQuery({}, { ...rest, ...change }),
        (err: Error) => !(err instanceof AppError) && message.test(err.message),
      );
    }
  });

  test('ListQuerySchema keeps the query lenient in a Fastify route; ListResponseSchema shapes the reply', async () => {
    const app = Fastify();
    const Item = Type.Object({ id: Type.String() });
    app.get(
      '/things',
      { schema: { querystring: ListQuerySchema, response: { 200: ListResponseSchema(Item) } } },
      async (request) => {
        const spec = parseListQuery(request.query as Record<string, unknown>, rest);
        return { ...listResponse(spec, { items: [{ id: 'a', extra: 1 }], total: 7 }), spec };
      },
    );
    try {
      const reply = await app.inject({
        url: '/things?limit=5&offset=10&sort=kind:desc&filter=name:eq:a:b&filter=rank:gt:2&other=1&other=2',
      });
      assert.equal(reply.statusCode, 200, reply.body);
      assert.deepEqual(reply.json(), { items: [{ id: 'a' }], total: 7, offset: 10, limit: 5 });
      const single = await app.inject({ url: '/things?filter=name:eq:x' });
      assert.equal(single.statusCode, 200, single.body);
    } finally {
      await app.close();
    }
    // The spec reaching the handler, checked apart from the serialised reply.
    assert.deepEqual(
      q({
        limit: '5',
        offset: '10',
        sort: 'kind:desc',
        filter: ['name:eq:a:b', 'rank:gt:2'],
        other: ['1', '2'],
      }),
      {
        offset: 10,
        limit: 5,
        sort: [{ field: 'kind', order: 'desc' }],
        filter: [
          { field: 'name', op: 'eq', value: 'a:b' },
          { field: 'rank', op: 'gt', value: 2 },
        ],
      },
    );
  });
});

const gqlDef: ListDefinition = {
  fields: {
    Name: 'device.name',
    Kind: 'device.kind',
    Note: 'device.note',
    Rank: { column: 'device.rank', type: 'integer' },
    Enabled: { column: 'device.enabled', type: 'boolean' },
    Secret: { column: 'device.secret', sortable: false, filterable: false },
  },
  tiebreak: 'device.id',
  maxLimit: 10,
};
const g = (input: ListInput | null | undefined, clampLimit = false) =>
  parseListInput(input, gqlDef, { clampLimit });

describe('GraphQL list input', () => {
  test('defaults, and keys other than Limit Offset Filter Sort ignored', () => {
    const expected: ListSpec = { offset: 0, limit: 10, sort: [], filter: [] };
    assert.deepEqual(g(undefined), expected);
    assert.deepEqual(g(null), expected);
    assert.deepEqual(g({ IDs: ['x'] } as ListInput), expected);
    assert.deepEqual(g({ Limit: null, Offset: null, Filter: null, Sort: null }), expected);
  });

  test('Limit is refused out of range, or clamped when asked; Offset must be 0 or more', () => {
    assert.equal(g({ Limit: 1 }).limit, 1);
    assert.equal(g({ Limit: 10 }).limit, 10);
    assert.equal(g({ Offset: 30 }).offset, 30);
    for (const v of [0, 11, 5000, -1])
      bad(() => g({ Limit: v }), `Limit must be an integer from 1 to 10, got ${v}`);
    assert.equal(g({ Limit: 5000 }, true).limit, 10);
    assert.equal(g({ Limit: 0 }, true).limit, 1);
    assert.equal(g({ Limit: -3 }, true).limit, 1);
    assert.equal(g({ Limit: 7 }, true).limit, 7);
    bad(() => g({ Limit: 1.5 }, true), 'Limit must be an integer, got 1.5');
    bad(() => g({ Limit: '5' as unknown as number }), 'Limit must be an integer, got "5"');
    bad(() => g({ Offset: -1 }), 'Offset must be an integer of 0 or more, got -1');
    bad(() => g({ Offset: 0.5 }), 'Offset must be an integer of 0 or more, got 0.5');
  });

  test('Sort: list or single key, Order ASC by default', () => {
    assert.deepEqual(
      g({ Sort: [{ Field: 'Kind' }, { Field: 'Rank', Order: 'DESC' }, { Field: 'Name', Order: null }] }).sort,
      [
        { field: 'Kind', order: 'asc' },
        { field: 'Rank', order: 'desc' },
        { field: 'Name', order: 'asc' },
      ],
    );
    assert.deepEqual(g({ Sort: { Field: 'Rank', Order: 'DESC' } }).sort, [{ field: 'Rank', order: 'desc' }]);
    const sortable = 'sortable fields: Name, Kind, Note, Rank, Enabled';
    bad(() => g({ Sort: [{ Field: 'Foo' }] }), `Sort field "Foo" is not sortable; ${sortable}`);
    bad(() => g({ Sort: [{ Field: 'Secret' }] }), `Sort field "Secret" is not sortable; ${sortable}`);
    bad(
      () => g({ Sort: [{ Field: 'Name', Order: 'asc' }] }),
      'Sort order of Name must be ASC or DESC, got "asc"',
    );
    bad(
      () => g({ Sort: [{ Field: 'Name' }, { Field: 'Name', Order: 'DESC' }] }),
      'Sort field "Name" is given more than once',
    );
    bad(() => g({ Sort: [null] } as unknown as ListInput), 'Sort must be a list of { Field, Order }');
  });

  test('Filter: per-field conditions by type, ANDed; nulls skipped', () => {
    assert.deepEqual(
      g({
        Filter: {
          Name: { Contains: 'pump', StartsWith: 'F', Eq: null },
          Kind: { In: ['pump', 'valve'], Ne: 'x' },
          Rank: { Gt: 1, Gte: 2, Lt: 9, Lte: 8, Eq: 3, Ne: 4, In: [1, 2] },
          Enabled: { Eq: false },
          Note: null,
        },
      }).filter,
      [
        { field: 'Name', op: 'contains', value: 'pump' },
        { field: 'Name', op: 'startswith', value: 'F' },
        { field: 'Kind', op: 'in', value: ['pump', 'valve'] },
        { field: 'Kind', op: 'ne', value: 'x' },
        { field: 'Rank', op: 'gt', value: 1 },
        { field: 'Rank', op: 'gte', value: 2 },
        { field: 'Rank', op: 'lt', value: 9 },
        { field: 'Rank', op: 'lte', value: 8 },
        { field: 'Rank', op: 'eq', value: 3 },
        { field: 'Rank', op: 'ne', value: 4 },
        { field: 'Rank', op: 'in', value: [1, 2] },
        { field: 'Enabled', op: 'eq', value: false },
      ],
    );
  });

  test('Filter errors name the field, the condition and what is allowed', () => {
    const filterable = 'filterable fields: Name, Kind, Note, Rank, Enabled';
    bad(() => g({ Filter: { Foo: { Eq: 'x' } } }), `Filter field "Foo" is not filterable; ${filterable}`);
    bad(
      () => g({ Filter: { Secret: { Eq: 'x' } } }),
      `Filter field "Secret" is not filterable; ${filterable}`,
    );
    bad(() => g({ Filter: { name: { Eq: 'x' } } }), `Filter field "name" is not filterable; ${filterable}`);
    bad(
      () => g({ Filter: { Name: { Gt: 'x' } } }),
      'Filter.Name.Gt is not supported; Name takes Eq, Ne, Contains, StartsWith, In',
    );
    bad(
      () => g({ Filter: { Rank: { Contains: '1' } } }),
      'Filter.Rank.Contains is not supported; Rank takes Eq, Ne, Gt, Gte, Lt, Lte, In',
    );
    bad(
      () => g({ Filter: { Enabled: { Ne: true } } }),
      'Filter.Enabled.Ne is not supported; Enabled takes Eq',
    );
    bad(
      () => g({ Filter: { Name: { toString: 'x' } } }),
      'Filter.Name.toString is not supported; Name takes Eq, Ne, Contains, StartsWith, In',
    );
    bad(() => g({ Filter: { Name: { Eq: 3 } } }), 'Filter.Name.Eq must be a string, got 3');
    bad(() => g({ Filter: { Rank: { Eq: '3' } } }), 'Filter.Rank.Eq must be an integer, got "3"');
    bad(() => g({ Filter: { Rank: { In: [1, 2.5] } } }), 'Filter.Rank.In must be an integer, got 2.5');
    bad(() => g({ Filter: { Enabled: { Eq: 1 } } }), 'Filter.Enabled.Eq must be a boolean, got 1');
    bad(() => g({ Filter: { Kind: { In: 'pump' } } }), 'Filter.Kind.In must be a list, got "pump"');
    const many = Array.from({ length: 1001 }, (_, i) => `k${i}`);
    bad(() => g({ Filter: { Kind: { In: many } } }), 'Filter.Kind.In takes at most 1000 values, got 1001');
    bad(
      () => g({ Filter: { Kind: 'pump' } } as unknown as ListInput),
      'Filter.Kind must be an object of conditions',
    );
    bad(() => g({ Filter: 'x' } as unknown as ListInput), 'Filter must be an object of field conditions');
  });

  test('LIST_SDL is valid GraphQL', () => {
    const schema = buildSchema(
      `${LIST_SDL}\ntype Query { ok(sort: [SortInput!], s: StringFilter, i: IntFilter, b: BooleanFilter): Boolean }`,
    );
    assert.deepEqual(
      Object.keys(schema.getTypeMap())
        .filter((n) => /Sort|Filter/.test(n))
        .sort(),
      ['BooleanFilter', 'IntFilter', 'SortInput', 'SortOrder', 'StringFilter'],
    );
  });
});

// --- the runner, on both dialects ------------------------------------------------------------

interface Row {
  id: string;
  name: string;
  kind: string;
  note: string | null;
  rank: number;
  created_at: number;
  enabled: number;
}

const T0 = 1_700_000_000_000;
// prettier-ignore
const seed: Row[] = [
  { id: 'd01', name: 'Pump 1',      kind: 'pump',   note: 'north', rank: 1,  created_at: T0 + 1000, enabled: 1 },
  { id: 'd02', name: 'pump 2',      kind: 'pump',   note: null,    rank: 2,  created_at: T0 + 2000, enabled: 0 },
  { id: 'd03', name: 'Feed PUMP',   kind: 'pump',   note: 'south', rank: 3,  created_at: T0 + 3000, enabled: 1 },
  { id: 'd04', name: 'Valve A',     kind: 'valve',  note: 'north', rank: 4,  created_at: T0 + 3000, enabled: 1 },
  { id: 'd05', name: 'Valve B',     kind: 'valve',  note: null,    rank: 5,  created_at: T0 + 3000, enabled: 0 },
  { id: 'd06', name: 'Sensor 100%', kind: 'sensor', note: 'east',  rank: 6,  created_at: T0 + 6000, enabled: 1 },
  { id: 'd07', name: 'Sensor_x',    kind: 'sensor', note: 'west',  rank: 7,  created_at: T0 + 7000, enabled: 1 },
  { id: 'd08', name: 'Sensor1x',    kind: 'sensor', note: 'a!b',   rank: 8,  created_at: T0 + 8000, enabled: 0 },
  { id: 'd09', name: 'Mixer',       kind: 'motor',  note: null,    rank: 9,  created_at: T0 + 9000, enabled: 1 },
  { id: 'd10', name: 'Motor',       kind: 'motor',  note: 'x:y',   rank: 10, created_at: T0 + 10000, enabled: 1 },
  { id: 'd11', name: 'Tank',        kind: 'tank',   note: 'south', rank: 11, created_at: T0 + 11000, enabled: 0 },
  { id: 'd12', name: 'Hidden pump', kind: 'hidden', note: null,    rank: 12, created_at: T0 + 12000, enabled: 1 },
];
const visible = seed.filter((r) => r.kind !== 'hidden');

forEachDialect('runList', (ctx) => {
  before(async () => {
    await ctx.database.migrate([
      {
        module: 'test.paging',
        migrations: [
          {
            name: '0001-create-device',
            up: (db) =>
              db.schema
                .createTable('device')
                .addColumn('id', 'text', (c) => c.primaryKey())
                .addColumn('name', 'text', (c) => c.notNull())
                .addColumn('kind', 'text', (c) => c.notNull())
                .addColumn('note', 'text')
                .addColumn('rank', 'integer', (c) => c.notNull())
                .addColumn('created_at', 'bigint', (c) => c.notNull())
                .addColumn('enabled', 'integer', (c) => c.notNull())
                .execute(),
          },
        ],
      },
    ]);
    await ctx.database.typed<any>().insertInto('device').values(seed).execute();
  });

  /** The base query of the endpoint: hidden devices are never listed. */
  const base = () =>
    ctx.database
      .typed<any>()
      .selectFrom('device')
      .selectAll('device')
      .where('device.kind', '<>', 'hidden')
      .$castTo<Row>();
  const list = (spec: Partial<ListSpec>) =>
    runList(ctx.database, base(), rest, { offset: 0, limit: 200, sort: [], filter: [], ...spec });
  const ids = (rows: Row[]) => rows.map((r) => r.id);
  const restIds = async (query: Record<string, unknown>) => {
    const page = await runList(
      ctx.database,
      base(),
      rest,
      parseListQuery({ limit: '200', sort: 'rank', ...query }, rest),
    );
    return ids(page.items);
  };

  test('no sort: tiebreak order; total counts the base query', async () => {
    const page = await list({});
    assert.equal(page.total, 11);
    assert.deepEqual(ids(page.items), ids(visible));
    assert.deepEqual(page.items[0], seed[0]);
  });

  test('sort ascending and descending, ties broken by the unique column', async () => {
    assert.deepEqual(await restIds({ sort: 'createdAt:asc' }), ids(visible));
    assert.deepEqual(await restIds({ sort: 'createdAt:desc' }), [
      'd11',
      'd10',
      'd09',
      'd08',
      'd07',
      'd06',
      'd03',
      'd04',
      'd05',
      'd02',
      'd01',
    ]);
    assert.deepEqual(await restIds({ sort: 'rank:desc' }), ids(visible).reverse());
    assert.deepEqual(await restIds({ sort: 'enabled:asc' }), [
      'd02',
      'd05',
      'd08',
      'd11',
      'd01',
      'd03',
      'd04',
      'd06',
      'd07',
      'd09',
      'd10',
    ]);
  });

  test('sort by several fields', async () => {
    assert.deepEqual(await restIds({ sort: 'kind:asc,createdAt:desc' }), [
      'd10',
      'd09',
      'd03',
      'd02',
      'd01',
      'd08',
      'd07',
      'd06',
      'd11',
      'd04',
      'd05',
    ]);
    assert.deepEqual(await restIds({ sort: ['kind:desc', 'enabled:asc', 'rank:desc'] }), [
      'd05',
      'd04',
      'd11',
      'd08',
      'd07',
      'd06',
      'd02',
      'd03',
      'd01',
      'd10',
      'd09',
    ]);
  });

  test('NULLs sort last in both directions', async () => {
    const asc = await restIds({ sort: 'note:asc', filter: 'kind:ne:sensor' });
    assert.deepEqual(asc, ['d01', 'd04', 'd03', 'd11', 'd10', 'd02', 'd05', 'd09']);
    const desc = await restIds({ sort: 'note:desc', filter: 'kind:ne:sensor' });
    assert.deepEqual(desc, ['d10', 'd03', 'd11', 'd01', 'd04', 'd02', 'd05', 'd09']);
  });

  test('eq is exact, ne also matches NULL', async () => {
    assert.deepEqual(await restIds({ filter: 'name:eq:pump 2' }), ['d02']);
    assert.deepEqual(await restIds({ filter: 'name:eq:Pump 2' }), []);
    assert.deepEqual(await restIds({ filter: 'note:eq:x:y' }), ['d10']);
    assert.deepEqual(await restIds({ filter: 'note:ne:north' }), [
      'd02',
      'd03',
      'd05',
      'd06',
      'd07',
      'd08',
      'd09',
      'd10',
      'd11',
    ]);
    assert.deepEqual(await restIds({ filter: ['kind:ne:sensor', 'kind:ne:pump', 'kind:ne:valve'] }), [
      'd09',
      'd10',
      'd11',
    ]);
  });

  test('contains and startswith ignore case and take % _ ! literally', async () => {
    assert.deepEqual(await restIds({ filter: 'name:contains:PUMP' }), ['d01', 'd02', 'd03']);
    assert.deepEqual(await restIds({ filter: 'name:contains:pUmP' }), ['d01', 'd02', 'd03']);
    assert.deepEqual(await restIds({ filter: 'name:startswith:pump' }), ['d01', 'd02']);
    assert.deepEqual(await restIds({ filter: 'name:startswith:VALVE' }), ['d04', 'd05']);
    assert.deepEqual(await restIds({ filter: 'name:contains:100%' }), ['d06']);
    assert.deepEqual(await restIds({ filter: 'name:contains:%' }), ['d06']);
    assert.deepEqual(await restIds({ filter: 'name:contains:_' }), ['d07']);
    assert.deepEqual(await restIds({ filter: 'name:startswith:sensor_' }), ['d07']);
    assert.deepEqual(await restIds({ filter: 'note:contains:!' }), ['d08']);
    assert.deepEqual(await restIds({ filter: 'note:contains::' }), ['d10']);
    assert.deepEqual((await restIds({ filter: 'name:contains:' })).length, 11);
  });

  test('integer comparisons and booleans', async () => {
    assert.deepEqual(await restIds({ filter: 'rank:gt:9' }), ['d10', 'd11']);
    assert.deepEqual(await restIds({ filter: 'rank:gte:9' }), ['d09', 'd10', 'd11']);
    assert.deepEqual(await restIds({ filter: 'rank:lt:3' }), ['d01', 'd02']);
    assert.deepEqual(await restIds({ filter: 'rank:lte:3' }), ['d01', 'd02', 'd03']);
    assert.deepEqual(await restIds({ filter: `createdAt:eq:${T0 + 3000}` }), ['d03', 'd04', 'd05']);
    assert.deepEqual(await restIds({ filter: [`createdAt:gt:${T0 + 2000}`, `createdAt:lt:${T0 + 7000}`] }), [
      'd03',
      'd04',
      'd05',
      'd06',
    ]);
    assert.deepEqual(await restIds({ filter: 'enabled:eq:false' }), ['d02', 'd05', 'd08', 'd11']);
    assert.deepEqual(await restIds({ filter: 'enabled:ne:true' }), ['d02', 'd05', 'd08', 'd11']);
    assert.deepEqual((await restIds({ filter: 'enabled:eq:true' })).length, 7);
  });

  test('offset and limit edges; total ignores paging', async () => {
    const all = ids(visible);
    const filter = [{ field: 'kind', op: 'ne' as const, value: 'motor' }];
    for (const [offset, limit, expected] of [
      [0, 1, all.slice(0, 1)],
      [0, 200, all],
      [10, 5, ['d11']],
      [11, 5, []],
      [500, 5, []],
      [3, 3, ['d04', 'd05', 'd06']],
    ] as Array<[number, number, string[]]>) {
      const page = await list({ offset, limit });
      assert.deepEqual(ids(page.items), expected, `offset ${offset} limit ${limit}`);
      assert.equal(page.total, 11);
      const filtered = await list({ offset, limit, filter });
      assert.equal(filtered.total, 9);
    }
  });

  test('walking the pages of a sort with many ties visits every row once', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 11; offset += 2) {
      const page = await list({ offset, limit: 2, sort: [{ field: 'kind', order: 'desc' }] });
      seen.push(...ids(page.items));
    }
    assert.deepEqual([...seen].sort(), ids(visible));
  });

  test('a spec with a field outside the definition is refused', async () => {
    await assert.rejects(list({ sort: [{ field: 'id', order: 'asc' }] }), (err: unknown) => {
      assert.ok(err instanceof AppError && err.status === 400, String(err));
      assert.match(err.message, /field "id" is not listable/);
      return true;
    });
  });

  test('GraphQL input: Items and Total through a real schema, clamp versus refuse', async () => {
    const schema = buildSchema(`
      ${LIST_SDL}
      type Device { ID: String! Name: String! Kind: String! Rank: Int! Enabled: Boolean! }
      input DeviceFilter { Name: StringFilter Kind: StringFilter Note: StringFilter Rank: IntFilter Enabled: BooleanFilter }
      input ListDevicesRequest { Limit: Int Offset: Int Filter: DeviceFilter Sort: [SortInput!] IDs: [String!] }
      type DeviceList { Items: [Device!]! Total: Int! }
      type Query { ListDevices(input: ListDevicesRequest): DeviceList! ListAll(input: ListDevicesRequest): DeviceList! }
    `);
    const resolve = (clampLimit: boolean) => async (args: { input?: ListInput }) => {
      const spec = parseListInput(args.input, gqlDef, { clampLimit });
      const page = await runList(ctx.database, base(), gqlDef, spec);
      return {
        Total: page.total,
        Items: page.items.map((r) => ({
          ID: r.id,
          Name: r.name,
          Kind: r.kind,
          Rank: r.rank,
          Enabled: r.enabled === 1,
        })),
      };
    };
    const rootValue = { ListDevices: resolve(false), ListAll: resolve(true) };
    // graphql-js answers with null-prototype objects; compare plain ones.
    const run = async (source: string) => {
      const result = await graphql({ schema, source, rootValue });
      return { data: JSON.parse(JSON.stringify(result.data ?? null)) as unknown, errors: result.errors };
    };

    const found = await run(`{ ListDevices(input: {
      Filter: { Name: { Contains: "pump" }, Enabled: { Eq: true } }, Sort: [{ Field: "Rank", Order: DESC }]
    }) { Total Items { ID Name Enabled } } }`);
    assert.equal(found.errors, undefined);
    assert.deepEqual(found.data, {
      ListDevices: {
        Total: 2,
        Items: [
          { ID: 'd03', Name: 'Feed PUMP', Enabled: true },
          { ID: 'd01', Name: 'Pump 1', Enabled: true },
        ],
      },
    });

    const paged = await run(`{ ListDevices(input: {
      Limit: 2, Offset: 1, Filter: { Kind: { In: ["valve", "sensor"] }, Rank: { Gte: 4, Lte: 7 } },
      Sort: { Field: "Kind" }, IDs: ["ignored"]
    }) { Total Items { ID } } }`);
    assert.equal(paged.errors, undefined);
    assert.deepEqual(paged.data, { ListDevices: { Total: 4, Items: [{ ID: 'd07' }, { ID: 'd04' }] } });

    const empty = await run(
      `{ ListDevices(input: { Filter: { Kind: { In: [] } } }) { Total Items { ID } } }`,
    );
    assert.deepEqual(empty.data, { ListDevices: { Total: 0, Items: [] } });

    const refused = await run(`{ ListDevices(input: { Limit: 5000 }) { Total } }`);
    assert.equal(refused.errors?.[0]?.message, 'Limit must be an integer from 1 to 10, got 5000');
    const clamped = await run(`{ ListAll(input: { Limit: 5000 }) { Total Items { ID } } }`);
    assert.equal(clamped.errors, undefined);
    const data = clamped.data as { ListAll: { Total: number; Items: unknown[] } };
    assert.equal(data.ListAll.Total, 11);
    assert.equal(data.ListAll.Items.length, 10);

    const unknown = await run(`{ ListDevices(input: { Sort: [{ Field: "Secret" }] }) { Total } }`);
    assert.match(
      unknown.errors?.[0]?.message ?? '',
      /^Sort field "Secret" is not sortable; sortable fields: Name, Kind/,
    );
  });
});
