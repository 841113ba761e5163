/**
 * The JSON text of a subtree (`tree-json.ts`) is exactly `JSON.stringify` of the nested
 * `NodeView`s: the same fields in the same order, the same escapes (quotes, backslashes, control
 * characters, lone surrogates, U+2028), attributes spliced as stored, siblings by name then key.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nodeView, type NodeView } from '../../src/manager/hierarchy/nodes.js';
import { viewRow, type NodeRow } from '../../src/manager/hierarchy/repository.js';
import {
  SubtreeRows,
  nestRows,
  treeJson as treeBytes,
  treesJson as treesBytes,
} from '../../src/manager/hierarchy/tree-json.js';

/** The answers as text (they are written as UTF-8 bytes). */
const treeJson = (...a: Parameters<typeof treeBytes>) => treeBytes(...a).toString('utf8');
const treesJson = (...a: Parameters<typeof treesBytes>) => treesBytes(...a).toString('utf8');

let n = 0;
function row(parent: NodeRow | null, name: string, extra: Partial<NodeRow> = {}): NodeRow {
  n++;
  return {
    id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    company_id: 'c',
    key: `k${n}`,
    parent_id: parent?.id ?? null,
    path: '',
    depth: (parent?.depth ?? 0) + 1,
    name,
    level: null,
    description: '',
    device_id: null,
    attributes: '{}',
    created_at: 1_764_000_000_000,
    updated_at: 1_764_000_000_000,
    ...extra,
  };
}

/** What the routes answered before: each row's view, nested, siblings by name then key. */
function expected(rows: NodeRow[], top: NodeRow, withChildren = true): NodeView {
  const v = nodeView(top);
  if (!withChildren) return v;
  v.children = rows
    .filter((r) => r.parent_id === top.id)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((c) => expected(rows, c));
  return v;
}

const attributes = JSON.stringify({
  b: 'x',
  2: 'two',
  1: 'one',
  'é\u2028': '"quoted"\\',
  ['__proto__']: 'p',
});
const root = row(null, 'Acme "the" \\ company', {
  level: 'enterprise',
  description: 'line\nbreak\ttab\u0001\u001f\u2028\u2029 \ud800 lone, 😀 pair',
  attributes,
  device_id: 'dev-1',
  updated_at: 1_764_000_000_123,
});
const b = row(root, 'Beta', { key: 'z' });
const a2 = row(root, 'Alpha', { key: 'y', created_at: 0 });
const a1 = row(root, 'Alpha', { key: 'x', level: 'site' });
const e = row(root, 'éclair');
const upper = row(root, 'Zed');
const leaf = row(a1, 'Cell', { attributes: '{"takt":"30"}', updated_at: 8_640_000_000_000_000 });
const rows = [root, b, a2, a1, e, upper, leaf];

test('a subtree is JSON.stringify of its nested views, whatever the order of its rows', () => {
  const want = JSON.stringify(expected(rows, root));
  assert.equal(treeJson(nestRows(rows.map(viewRow)), root.id), want);
  assert.equal(treeJson(nestRows([...rows].reverse().map(viewRow)), root.id), want);
  assert.deepEqual(
    (JSON.parse(want) as NodeView).children!.map((c) => c.name),
    ['Alpha', 'Alpha', 'Beta', 'Zed', 'éclair'],
    'siblings by name then key, in code-unit order',
  );
});

test('a node alone (depth 0) has no children field; the last level read has empty children', () => {
  assert.equal(treeJson(nestRows([viewRow(root)], false), root.id), JSON.stringify(nodeView(root)));
  const twoLevels = [root, b, a1].map(viewRow);
  const got = JSON.parse(treeJson(nestRows(twoLevels), root.id)) as NodeView;
  assert.deepEqual(
    got.children!.map((c) => [c.name, c.children]),
    [
      ['Alpha', []],
      ['Beta', []],
    ],
  );
});

test('a list of trees: the rows whose parent is not among them are the tops, sorted', () => {
  const other = row(null, 'Another root');
  const all = [...rows, other];
  assert.equal(
    treesJson([nestRows(all.map(viewRow))]),
    JSON.stringify([expected(all, root), expected(all, other)]),
  );
  assert.equal(
    treesJson([nestRows([a1, leaf, b].map(viewRow))]),
    JSON.stringify([expected(rows, a1), expected(rows, b)]),
    'a branch without its parent',
  );
  assert.equal(treesJson([]), '[]');
});

test('the bytes are the UTF-8 of that text, past the size first guessed and in an envelope', () => {
  // Names longer once escaped or encoded than the guess (their length): the buffer grows.
  const top = row(null, '\u0001'.repeat(3000), { attributes: JSON.stringify({ k: 'x😀é'.repeat(2000) }) });
  const many = [top];
  for (let i = 0; i < 50; i++) many.push(row(top, `${'n'.repeat(i)}é€😀\\"${i}`, { key: `k\u0000${i}` }));
  const want = JSON.stringify(expected(many, top));
  const got = treeBytes(nestRows(many.map(viewRow)), top.id);
  assert.ok(got.equals(Buffer.from(want, 'utf8')));
  assert.equal(
    treesBytes([nestRows(many.map(viewRow))], '{"items":', '}').toString('utf8'),
    JSON.stringify({ items: [expected(many, top)] }),
  );
});

test('a row is written when added: it is not kept (a caller may drop it at once)', () => {
  const want = JSON.stringify(expected(rows, root));
  const subtree = new SubtreeRows();
  for (const r of [...rows].reverse()) {
    const v = viewRow(r);
    subtree.add(v);
    v.fill(null); // the row's array let go, or reused by its reader
  }
  assert.equal(subtree.size, rows.length);
  assert.equal(treeJson(subtree, root.id), want);
});

test('several subtrees in one list: the tops of each, sorted, the subtrees in their order', () => {
  const other = row(null, 'Aardvark root');
  const got = treesJson([nestRows([b, a1, leaf].map(viewRow)), nestRows([viewRow(other)])]);
  assert.equal(got, JSON.stringify([expected(rows, a1), expected(rows, b), expected([other], other)]));
});
