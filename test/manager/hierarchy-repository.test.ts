/**
 * The hierarchy tables on SQLite and PostgreSQL: a subtree is the index range of its path (and
 * nothing of a sibling whose ID shares a prefix), its view down to a depth is the rows of those
 * depths (as arrays of values), a move rewrites the subtree's paths and depths in one statement,
 * a subtree delete takes its grants with it, grants cover their branch.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachDialect } from '../helpers/postgres.js';
import { hierarchyMigrations } from '../../src/manager/hierarchy/migrations/index.js';
import {
  HierarchyRepository,
  viewRow,
  type NodeRow,
  type ViewRow,
} from '../../src/manager/hierarchy/repository.js';

const seg = (n: number) => n.toString(16).padStart(32, '0');

function node(n: number, parent: NodeRow | null, company = 'c1'): NodeRow {
  return {
    id: `n${n}`,
    company_id: company,
    key: `k${n}`,
    parent_id: parent?.id ?? null,
    path: (parent?.path ?? '') + seg(n),
    depth: (parent?.depth ?? 0) + 1,
    name: `node ${n}`,
    level: null,
    description: '',
    device_id: null,
    attributes: '{}',
    created_at: 1,
    updated_at: 1,
  };
}

forEachDialect('hierarchy repository', (ctx) => {
  let repo: HierarchyRepository;
  const n: Record<number, NodeRow> = {};
  before(async () => {
    await ctx.database.migrate([hierarchyMigrations]);
    repo = new HierarchyRepository(ctx.database);
    n[1] = node(1, null);
    n[2] = node(2, n[1]);
    n[3] = node(3, n[1]);
    n[4] = node(4, n[2]);
    n[5] = node(5, n[4]);
    // Another root, and a root of another company: in neither subtree.
    n[16] = node(16, null);
    const foreign = node(17, null, 'c2');
    await repo.transaction((r) => r.insertNodes([n[1]!, n[2]!, n[3]!, n[4]!, n[5]!, n[16]!, foreign]));
  });

  test('a subtree, a depth-bounded subtree, the roots, the whole company', async () => {
    assert.deepEqual(
      (await repo.subtree('c1', n[1]!.path)).map((r) => r.id),
      ['n1', 'n2', 'n4', 'n5', 'n3'],
    );
    assert.deepEqual(
      (await repo.subtree('c1', n[2]!.path)).map((r) => r.id),
      ['n2', 'n4', 'n5'],
    );
    assert.deepEqual(
      (await repo.subtree('c1', n[1]!.path, 2)).map((r) => r.id),
      ['n1', 'n2', 'n3'],
    );
    assert.deepEqual(
      (await repo.roots('c1')).map((r) => r.id),
      ['n1', 'n16'],
    );
    assert.equal((await repo.subtree('c1', '')).length, 6);
    assert.equal(await repo.maxDepthUnder('c1', n[1]!.path), 4);
  });

  test('the view of a subtree: every node, or the depths asked, each row an array of values', async () => {
    const ids = (rows: ViewRow[]) => rows.map((r) => r[0]).sort();
    const whole = await repo.subtreeView('c1', n[1]!.path);
    assert.deepEqual(ids(whole), ['n1', 'n2', 'n3', 'n4', 'n5']);
    assert.deepEqual(
      whole.find((r) => r[0] === 'n4'),
      viewRow(n[4]!),
    );
    assert.deepEqual(viewRow(n[4]!), [
      'n4',
      'k4',
      'node 4',
      'n2',
      3,
      1,
      '{"id":"n4","key":"k4","name":"node 4","level":null,"description":""',
      ',"deviceId":null,"attributes":{},"createdAt":"1970-01-01T00:00:00.001Z"',
    ]);
    assert.deepEqual(ids(await repo.subtreeView('c1', n[1]!.path, [1, 2])), ['n1', 'n2', 'n3']);
    assert.deepEqual(ids(await repo.subtreeView('c1', n[2]!.path, [3])), ['n4']);
    assert.deepEqual(ids(await repo.subtreeView('c1', n[3]!.path, [3, 4])), [], 'n3 has no children');
    assert.deepEqual(ids(await repo.subtreeView('c1', '')), ['n1', 'n16', 'n2', 'n3', 'n4', 'n5']);
  });

  test('the same rows handed one by one (each let go once handed), on both stores', async () => {
    const handed: ViewRow[] = [];
    await repo.eachSubtreeView('c1', n[1]!.path, [1, 2, 3], (row) => handed.push([...row]));
    const byId = (rows: ViewRow[]) => [...rows].sort((x, y) => (x[0] < y[0] ? -1 : 1));
    assert.deepEqual(byId(handed), byId(await repo.subtreeView('c1', n[1]!.path, [1, 2, 3])));
    assert.deepEqual(handed.map((r) => r[0]).sort(), ['n1', 'n2', 'n3', 'n4']);
    let whole = 0;
    await repo.eachSubtreeView('c1', '', undefined, () => whole++);
    assert.equal(whole, 6);
  });

  test('a move rewrites the paths and depths of the subtree only', async () => {
    const to = n[3]!.path + seg(2);
    await repo.transaction(async (r) => {
      await r.movePaths('c1', n[2]!.path, to, 2);
      await r.setParent('n2', 'n3');
    });
    const moved = await repo.subtree('c1', n[3]!.path);
    assert.deepEqual(
      moved.map((r) => [r.id, r.depth]),
      [
        ['n3', 2],
        ['n2', 3],
        ['n4', 4],
        ['n5', 5],
      ],
    );
    assert.equal((await repo.node('c1', 'n5'))!.path, n[3]!.path + seg(2) + seg(4) + seg(5));
    assert.equal((await repo.node('c1', 'n2'))!.parent_id, 'n3');
    assert.equal((await repo.node('c1', 'n16'))!.depth, 1);
  });

  test('grants cover their branch; a subtree delete takes the grants on it', async () => {
    await repo.putGrant({
      id: 'g1',
      company_id: 'c1',
      node_id: 'n2',
      username: 'u',
      access: 'edit',
      created_by: 't',
      created_at: 1,
    });
    await repo.putGrant({
      id: 'g2',
      company_id: 'c1',
      node_id: 'n16',
      username: 'u',
      access: 'read',
      created_by: 't',
      created_at: 2,
    });
    await repo.putGrant({
      id: 'g3',
      company_id: 'c1',
      node_id: 'n2',
      username: 'u',
      access: 'read',
      created_by: 't',
      created_at: 3,
    });
    assert.deepEqual((await repo.grantsOf('c1', 'u')).map((g) => [g.id, g.access]).sort(), [
      ['g1', 'read'],
      ['g2', 'read'],
    ]);
    const n5 = (await repo.node('c1', 'n5'))!;
    assert.deepEqual(
      (await repo.grantsCovering('c1', n5.path)).map((g) => g.node_id),
      ['n2'],
    );
    assert.equal(await repo.deleteSubtree('c1', (await repo.node('c1', 'n2'))!.path), 3);
    assert.deepEqual(
      (await repo.grantsOf('c1', 'u')).map((g) => g.id),
      ['g2'],
    );
    assert.equal(await repo.countNodes('c1'), 3);
    assert.equal(await repo.countNodes('c2'), 1);
  });
});
