/**
 * The OPC UA node tree's lookups by ID (`child`, indexed) and child counts answer what a scan of
 * the parent's children answers, through adds, renames, moves, removals and sibling IDs that
 * repeat; and the DeviceHub sync of many tags under one device places and finds each tag once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NodeTree } from '../../../src/edge/opcua/tree.js';
import { syncDevicehubFolder } from '../../../src/edge/opcua/devicehub-sync.js';
import type { OpcuaNode } from '../../../src/edge/opcua/types.js';
import type { DeviceConfig, TagConfig } from '../../../src/edge/devicehub/index.js';

function node(ref: string, parentRef: string | null, id: string, position = 0): OpcuaNode {
  return {
    ref,
    parentRef,
    kind: parentRef ? 'Tag' : 'Folder',
    id,
    name: id,
    description: '',
    originId: null,
    dataType: null,
    accessControl: 'ReadOnly',
    version: 1,
    syncState: 'Synced',
    syncFailureReason: null,
    position,
    updatedAt: 0,
  };
}

/** The first child with that ID in the order the children were added: what `child` must answer. */
function scan(nodes: Map<string, OpcuaNode>, order: string[], parentRef: string | null, id: string) {
  for (const r of order) {
    const n = nodes.get(r);
    if (n && n.parentRef === parentRef && n.id === id) return n;
  }
  return undefined;
}

test('child and childCount answer what a scan answers, through puts, renames, moves, removals and repeated IDs', () => {
  const tree = new NodeTree();
  // The reference: every live node, and the order in which each entered its current parent.
  const nodes = new Map<string, OpcuaNode>();
  let order: string[] = [];
  const parents: (string | null)[] = [null, 'p0', 'p1', 'p2'];
  const ids = ['a', 'b', 'c'];
  for (const p of ['p0', 'p1', 'p2']) {
    const n = node(p, null, p);
    tree.put(n);
    nodes.set(p, n);
    order.push(p);
  }
  // A fixed pseudo-random sequence (a linear congruential generator), so a failure repeats.
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let step = 0; step < 3000; step++) {
    const op = next(10);
    const leafRefs = [...nodes.keys()].filter((r) => !r.startsWith('p'));
    if (op < 5 || leafRefs.length === 0) {
      const ref = `n${step}`;
      const n = node(ref, parents[1 + next(3)]!, ids[next(3)]!);
      tree.put(n);
      nodes.set(ref, n);
      order.push(ref);
    } else if (op < 7) {
      // A rename under the same parent: its place among the siblings is kept.
      const ref = leafRefs[next(leafRefs.length)]!;
      const n = { ...nodes.get(ref)!, id: ids[next(3)]! };
      tree.put(n);
      nodes.set(ref, n);
    } else if (op < 9) {
      // A move: last among its new siblings.
      const ref = leafRefs[next(leafRefs.length)]!;
      const old = nodes.get(ref)!;
      const n = { ...old, parentRef: parents[1 + next(3)]!, id: ids[next(3)]! };
      tree.put(n);
      nodes.set(ref, n);
      if (n.parentRef !== old.parentRef) order = [...order.filter((r) => r !== ref), ref];
    } else {
      const ref = leafRefs[next(leafRefs.length)]!;
      assert.deepEqual(
        tree.removeSubtree(ref).map((n) => n.ref),
        [ref],
      );
      nodes.delete(ref);
      order = order.filter((r) => r !== ref);
    }
    for (const p of parents) {
      for (const id of [...ids, 'p0', 'zz']) {
        assert.equal(tree.child(p, id)?.ref, scan(nodes, order, p, id)?.ref, `step ${step}: ${p}/${id}`);
      }
      assert.equal(tree.childCount(p), tree.children(p).length, `step ${step}: count of ${p}`);
    }
  }
  // A folder removed with its subtree: nothing of it is found any more.
  const removed = tree.removeSubtree('p1');
  assert.ok(removed.length >= 1);
  assert.equal(removed.at(-1)!.ref, 'p1', 'children before parents');
  for (const id of ids) assert.equal(tree.child('p1', id), undefined);
  assert.equal(tree.child(null, 'p1'), undefined);
  assert.equal(tree.childCount('p1'), 0);
});

test('the DeviceHub sync of 5,000 tags under one device: each tag once, in order, found again by the next sync', () => {
  const device = { id: 'd1', name: 'gen1', description: '' } as DeviceConfig;
  const tags = Array.from(
    { length: 5000 },
    (_, i) =>
      ({
        id: `t${i}`,
        deviceId: 'd1',
        tagName: `tag${i}`,
        description: '',
        valueType: 'float64',
      }) as TagConfig,
  );
  const tree = new NodeTree();
  const first = syncDevicehubFolder(tree, [device], tags);
  assert.equal(first.added.length, 1 + 1 + 5000, 'the folder, the device, the tags');
  const folder = tree.child(null, 'DeviceHub')!;
  const dev = tree.child(folder.ref, 'gen1')!;
  const children = tree.children(dev.ref);
  assert.deepEqual(
    children.map((n) => n.id),
    tags.map((t) => t.tagName),
  );
  assert.deepEqual(
    children.map((n) => n.position),
    tags.map((_, i) => i),
  );
  const again = syncDevicehubFolder(tree, [device], tags);
  assert.equal(again.added.length, 0, 'nothing new');
  assert.equal(again.removed.length, 0);
  assert.equal(tree.size, 5002);
});
