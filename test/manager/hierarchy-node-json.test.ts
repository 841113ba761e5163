/**
 * Each node stores the JSON text of its fields that do not depend on its place (`json_head`,
 * `json_tail`), and a subtree read splices it: on SQLite and PostgreSQL, the read stays exactly
 * `JSON.stringify` of the nested views of the rows as they read back, after the migration fills
 * the nodes already there, after an insert, an update of every field, and a move.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../helpers/postgres.js';
import { typed, type Database } from '../../src/kernel/db/index.js';
import { hierarchyMigrations } from '../../src/manager/hierarchy/migrations/index.js';
import { nodeView, type NodeView } from '../../src/manager/hierarchy/nodes.js';
import {
  HierarchyRepository,
  type HierarchyTables,
  type NodeRow,
} from '../../src/manager/hierarchy/repository.js';
import { SubtreeRows, nodeJson, treeJson } from '../../src/manager/hierarchy/tree-json.js';

const seg = (n: number) => n.toString(16).padStart(32, '0');

function node(n: number, parent: NodeRow | null, extra: Partial<NodeRow> = {}): NodeRow {
  return {
    id: `00000000-0000-7000-8000-${String(n).padStart(12, '0')}`,
    company_id: 'c1',
    key: `k${n}`,
    parent_id: parent?.id ?? null,
    path: (parent?.path ?? '') + seg(n),
    depth: (parent?.depth ?? 0) + 1,
    name: `node ${n}`,
    level: null,
    description: '',
    device_id: null,
    attributes: '{}',
    created_at: 1_764_000_000_000 + n,
    updated_at: 1_764_000_000_000 + n,
    ...extra,
  };
}

/** Values to escape: quotes, backslashes, control characters, U+2028, beyond ASCII. */
const awkward = (n: number, parent: NodeRow | null) =>
  node(n, parent, {
    key: `k"${n}\\`,
    name: `Näme "${n}"\t\u2028 ✓ 😀`,
    level: 'site',
    description: 'line one\nline two\r\u0001',
    device_id: `dev-${n}`,
    attributes: JSON.stringify({ 'é\u2028': '"quoted"\\', b: 'x', 2: 'two' }),
  });

/** The subtree under `id` as a read answers it (stored text spliced). */
async function read(repo: HierarchyRepository, id: string): Promise<string> {
  const top = (await repo.node('c1', id))!;
  const rows = new SubtreeRows();
  await repo.eachSubtreeView('c1', top.path, undefined, (r) => rows.add(r));
  return treeJson(rows, id).toString('utf8');
}

/** The same subtree as `JSON.stringify` of the nested views of its rows as they read back. */
async function expected(repo: HierarchyRepository, id: string): Promise<string> {
  const top = (await repo.node('c1', id))!;
  const rows = await repo.subtree('c1', top.path);
  const nest = (r: NodeRow): NodeView => ({
    ...nodeView(r),
    children: rows
      .filter((c) => c.parent_id === r.id)
      .sort((a, b) =>
        a.name < b.name ? -1 : a.name > b.name ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
      )
      .map(nest),
  });
  return JSON.stringify(nest(top));
}

forEachDialect('a node stores its JSON text', (ctx) => {
  let database: Database;
  let repo: HierarchyRepository;
  const n: Record<number, NodeRow> = {};

  before(async () => {
    database = await ctx.fresh();
    // The nodes of a store before the JSON text: written with the columns of that time.
    const [first, second] = hierarchyMigrations.migrations;
    await database.migrate([{ module: hierarchyMigrations.module, migrations: [first!, second!] }]);
    n[1] = awkward(1, null);
    n[2] = node(2, n[1]);
    n[3] = awkward(3, n[1]);
    n[4] = node(4, n[3], { name: 'Alpha' });
    n[5] = node(5, n[3], { name: 'Alpha', attributes: '{"takt":"30"}' });
    const old = typed<{ mgr_asset_node: NodeRow }>(database.db);
    await old.insertInto('mgr_asset_node').values(Object.values(n)).execute();
    await database.migrate([hierarchyMigrations]);
    repo = new HierarchyRepository(database);
  });

  test('the migration writes the text of the nodes already there', async () => {
    const stored = await typed<HierarchyTables>(database.db)
      .selectFrom('mgr_asset_node')
      .selectAll()
      .orderBy('id')
      .execute();
    assert.equal(stored.length, 5);
    for (const r of stored) assert.deepEqual([r.json_head, r.json_tail], nodeJson(r), r.id);
    assert.equal(
      stored[1]!.json_head,
      `{"id":"${n[2]!.id}","key":"k2","name":"node 2","level":null,"description":""`,
    );
    assert.equal(
      stored[1]!.json_tail,
      ',"deviceId":null,"attributes":{},"createdAt":"2025-11-24T16:00:00.002Z"',
    );
    assert.equal(await read(repo, n[1]!.id), await expected(repo, n[1]!.id));
  });

  test('an insert, an update of every field and a move keep the text right', async () => {
    n[6] = awkward(6, n[2]!);
    n[7] = node(7, n[6]);
    await repo.transaction((r) => r.insertNodes([n[6]!, n[7]!]));
    assert.equal(await read(repo, n[1]!.id), await expected(repo, n[1]!.id));

    const before6 = await read(repo, n[6]!.id);
    await repo.updateNode({
      ...n[6]!,
      key: 'k6 new',
      name: 'Zed "new"',
      level: null,
      description: 'now\\plain',
      device_id: null,
      attributes: '{"a":"b"}',
      updated_at: 1_800_000_000_000,
    });
    const after6 = await read(repo, n[6]!.id);
    assert.notEqual(after6, before6);
    assert.equal(after6, await expected(repo, n[6]!.id));
    assert.match(after6, /"name":"Zed \\"new\\"","level":null,"description":"now\\\\plain"/);

    // n3 (with n4, n5) moves under n7 (depth 4): its depths, its parent and every updatedAt change.
    const to = (await repo.node('c1', n[7]!.id))!.path + seg(3);
    await repo.transaction(async (r) => {
      await r.movePaths('c1', n[3]!.path, to, 1_900_000_000_000);
      await r.setParent(n[3]!.id, n[7]!.id);
    });
    const moved = await read(repo, n[3]!.id);
    assert.match(moved, /"depth":5,"deviceId":"dev-3"/);
    assert.equal(moved, await expected(repo, n[3]!.id));
    assert.equal(await read(repo, n[1]!.id), await expected(repo, n[1]!.id));
  });

  test('a lone surrogate is stored as U+FFFD, in the columns and the text alike', async () => {
    n[8] = node(8, n[2]!, { name: 'half \ud800 pair', description: '\udc00' });
    await repo.transaction((r) => r.insertNodes([n[8]!]));
    const back = (await repo.node('c1', n[8]!.id))!;
    assert.equal(back.name, 'half \ufffd pair');
    assert.equal(back.description, '\ufffd');
    assert.equal(await read(repo, n[8]!.id), await expected(repo, n[8]!.id));
  });
});
