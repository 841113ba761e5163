/**
 * Direct answers (src/kernel/graphql/direct.ts): a plain query on a named root field is written
 * without the executor, and its bytes must be exactly those of the executor's answer; anything the
 * writer cannot answer exactly is left to mercurius (undefined).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSchema, execute, parse } from 'graphql';
import { directAnswers } from '../../src/kernel/graphql/direct.js';

const SDL = `
  scalar JSON
  enum Format { Raw Value }
  type Topic { Format: Format! Topic: String! IntervalMs: Int }
  type Item { ID: ID! Name: String! Flag: Boolean! N: Int! X: Float Meta: JSON Topics: [Topic!]! Upper: String! Maybe: String! }
  input PageInput { Limit: Int ContinueFrom: ID }
  type Page { TotalCount: Int! Last: ID Items: [Item!]! }
  type Query { Page(input: PageInput): Page! Other: Int }
`;
// A custom scalar of the SDL serialises as it is (JSON); Upper has its own resolver.
const schema = buildSchema(SDL);
(
  schema.getType('Item') as unknown as { getFields: () => Record<string, { resolve?: unknown }> }
).getFields().Upper!.resolve = (item: { Name: string }) => item.Name.toUpperCase();

const items = (n: number, odd = false) =>
  Array.from({ length: n }, (_, i) => ({
    ID: `id-${i}`,
    Name: i === 5 ? 'say "hi"' : i === 3 ? 'quote " back \\ new\nline \u0001 é 😀' : `name_${i}`,
    Flag: i % 2 === 0,
    N: i,
    X: i % 3 === 0 ? null : i / 7,
    Meta: i % 5 === 0 ? null : { a: [1, 'b', { c: null }], d: i },
    Topics: [
      { Format: 'Raw', Topic: `raw/${i}`, IntervalMs: 1000 },
      { Format: 'Value', Topic: `value/${i}`, IntervalMs: null },
    ],
    Maybe: odd && i === 200 ? null : 'x',
  }));

const resolvers = {
  Page: (_r: unknown, args: { input?: { Limit?: number } }) => {
    const list = items(args.input?.Limit ?? 300, (args.input?.Limit ?? 0) === 301);
    if (args.input?.Limit === 7) throw new Error('refused');
    return { TotalCount: 100000, Last: list.at(-1)?.ID ?? null, Items: list };
  },
};
const limits = { maxQueryBytes: 65536, maxAliases: 100, maxFields: 500 };
const direct = directAnswers(() => schema, resolvers, ['Page'], [], limits);

async function both(query: string, variables?: Record<string, unknown>) {
  const bytes = await direct({ query, variables }, async () => ({}));
  const expected = await execute({
    schema,
    document: parse(query),
    rootValue: { Page: (args: { input?: { Limit?: number } }) => resolvers.Page(undefined, args) },
    variableValues: variables ?? null,
  });
  return { text: bytes?.toString('utf8'), expected: JSON.stringify(expected) };
}

test('a page of 300 written directly is the executor answer byte for byte', async () => {
  const q = `query($in: PageInput) { Page(input: $in) { TotalCount Last Items { ID Name Flag N X Meta
    Topics { Format Topic IntervalMs __typename } } } }`;
  for (const variables of [{ in: { Limit: 300 } }, { in: { Limit: 5 } }, { in: { Limit: 0 } }, {}]) {
    const { text, expected } = await both(q, variables);
    assert.equal(text, expected);
  }
});

test('aliases and __typename are written as the executor writes them', async () => {
  const { text, expected } = await both(
    `{ p: Page(input: { Limit: 130 }) { __typename n: TotalCount Items { id: ID t: Topics { f: Format } } } }`,
  );
  assert.equal(text, expected);
});

test('what it cannot write exactly is left to the executor', async () => {
  const left = async (query: string, variables?: Record<string, unknown>) =>
    assert.equal(await direct({ query, variables }, async () => ({})), undefined, query);
  await left('{ Page { Items { Upper } } }'); // a field with its own resolver
  await left('{ Page { ...F } } fragment F on Page { TotalCount }');
  await left('{ Page { TotalCount @include(if: true) } }');
  await left('{ Page { TotalCount } Other }');
  await left('{ Other }');
  await left('{ Page { Nope } }'); // invalid: mercurius answers the error
  await left('mutation { Page }');
  await left('query($in: PageInput) { Page(input: $in) { TotalCount } }', { in: { Limit: 'x' } });
  await left('{ Page(input: { Limit: 7 }) { TotalCount } }'); // the resolver throws
  await left('{ Page(input: { Limit: 301 }) { Items { Maybe } } }'); // null on a non-null field
  const run = (query: string, operationName: string) => direct({ query, operationName }, async () => ({}));
  assert.equal(await run('{ Page { TotalCount } }', 'x'), undefined);
  assert.equal(await run('query P { Page { TotalCount } }', 'Q'), undefined);
  const named = await run('query P { Page { TotalCount } }', 'P');
  assert.equal(named?.toString('utf8'), '{"data":{"Page":{"TotalCount":100000}}}');
});
