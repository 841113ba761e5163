/** The kernel's check of paging parameters on every list route (issue 33), and lists in memory. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { AppError, ERRORS } from '../../src/kernel/errors.js';
import {
  checkPagingQuery,
  listInMemory,
  ListQuerySchema,
  pagingCheckOf,
  parseListQuery,
  type ListDefinition,
  type PagingCheck,
} from '../../src/kernel/paging.js';

function bad(fn: () => unknown, message: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AppError, String(err));
    assert.equal(err.code, ERRORS.badRequest.code);
    assert.equal(err.message, message);
    return true;
  });
}

describe('pagingCheckOf: what a route declares', () => {
  test('the list schema declares all four; other schemas their own; none is no check', () => {
    assert.deepEqual(pagingCheckOf(ListQuerySchema), {
      params: ['limit', 'offset', 'sort', 'filter'],
      minLimit: 1,
      maxLimit: Number.MAX_SAFE_INTEGER,
    });
    const logs = Type.Object({
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
      cursor: Type.Optional(Type.String()),
    });
    assert.deepEqual(pagingCheckOf(logs), { params: ['limit', 'cursor'], minLimit: 1, maxLimit: 1000 });
    assert.equal(pagingCheckOf(Type.Object({ id: Type.String() })), undefined);
    assert.equal(pagingCheckOf(undefined), undefined);
  });
});

describe('checkPagingQuery: the same rules on every list route', () => {
  const all = pagingCheckOf(ListQuerySchema)!;
  const capped: PagingCheck = { params: ['limit', 'offset', 'cursor'], minLimit: 1, maxLimit: 100 };
  const check = (q: Record<string, unknown>, c = all) => checkPagingQuery(q, { ...c, params: [...c.params] });

  test('good values pass; unknown parameters are not looked at', () => {
    check({ limit: '10', offset: '0', sort: 'a:desc,b', filter: ['a:eq:x', 'b:gte:3'], other: ['x', 'y'] });
    check({ limit: '100', offset: '9007199254740991', cursor: 'anything' }, capped);
  });

  test('bad limit and offset name the parameter and the range', () => {
    for (const v of ['-1', '1e309', 'abc', '0', '1.5', '99999999999999999999']) {
      bad(() => check({ limit: v }), `limit must be an integer of 1 or more, got "${v}"`);
    }
    bad(() => check({ limit: '101' }, capped), 'limit must be an integer from 1 to 100, got "101"');
    for (const v of ['-5', '1e20', 'x', '9007199254740992']) {
      bad(() => check({ offset: v }), `offset must be an integer of 0 or more, got "${v}"`);
    }
  });

  test('limit, offset and cursor once; sort and filter add up', () => {
    bad(() => check({ limit: ['1', '2'] }), 'limit must be given once, got 2 values');
    bad(() => check({ offset: ['1', '1'] }), 'offset must be given once, got 2 values');
    bad(() => check({ cursor: ['a', 'b'] }, capped), 'cursor must be given once, got 2 values');
    check({ sort: ['a', 'b:desc'], filter: ['a:eq:1', 'a:ne:2'] });
  });

  test('junk sort and filter', () => {
    bad(() => check({ sort: 'name:sideways' }), 'sort must be field:asc or field:desc, got "name:sideways"');
    bad(() => check({ sort: ':asc' }), 'sort must be field:asc or field:desc, got ":asc"');
    bad(() => check({ filter: 'junk' }), 'filter must be field:op:value, got "junk"');
    bad(
      () => check({ filter: 'name:like:x' }),
      'filter operator "like" is not one of eq, ne, contains, startswith, gt, gte, lt, lte (filter=field:op:value)',
    );
    bad(() => check({ limit: 5 }), 'limit must be text, got 5');
  });

  test('an empty value is the default: removed, so that every route reads its default', () => {
    const q: Record<string, unknown> = { limit: '', offset: '', keep: '' };
    check(q);
    assert.deepEqual(q, { keep: '' });
  });
});

describe('listInMemory: runList semantics on an array', () => {
  const def: ListDefinition = {
    fields: { name: 'name', n: { column: 'n', type: 'integer' }, on: { column: 'on', type: 'boolean' } },
    tiebreak: 'id',
    defaultSort: [{ field: 'name', order: 'asc' }],
  };
  const rows = [
    { id: 'c', name: 'Pump 2', n: 3, on: true },
    { id: 'a', name: 'pump 1', n: 1, on: false },
    { id: 'b', name: 'Valve', n: 2, on: true },
    { id: 'd', name: null as unknown as string, n: 2, on: false },
  ];
  const run = (q: Record<string, unknown>) => listInMemory(rows, def, parseListQuery(q, def));

  test('filter, sort with missing values last, tiebreak, page and total', () => {
    assert.deepEqual(
      run({ filter: 'name:contains:PUMP' }).items.map((r) => r.id),
      ['c', 'a'],
    );
    // Code-point order, as SQLite's BINARY collation sorts runList's text columns: 'pump 1' > 'Valve' > 'Pump 2'.
    assert.deepEqual(
      run({ sort: 'name:desc' }).items.map((r) => r.id),
      ['a', 'b', 'c', 'd'],
    );
    assert.deepEqual(
      run({ sort: 'n:asc' }).items.map((r) => r.id),
      ['a', 'b', 'd', 'c'],
    );
    assert.deepEqual(
      run({ filter: 'name:ne:Valve', sort: 'n' }).items.map((r) => r.id),
      ['a', 'd', 'c'],
    );
    assert.deepEqual(
      run({ filter: ['on:eq:true', 'n:gte:3'] }).items.map((r) => r.id),
      ['c'],
    );
    const page = run({ limit: '2', offset: '1', sort: 'n:desc' });
    assert.deepEqual(
      page.items.map((r) => r.id),
      ['b', 'd'],
    );
    assert.equal(page.total, 4);
  });
});
