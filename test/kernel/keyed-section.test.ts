/**
 * The kernel's apply of keyed collections (configuration sections): the plan by key and mode,
 * items that fail (aborting with failFast, reported and skipped without, undone alone with a
 * guard), removals before, after or later, and the merge of merge-apply.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AppError, conflict } from '../../src/kernel/errors.js';
import type { ApplyMode } from '../../src/kernel/service/config-section.js';
import {
  applyKeyed,
  missingSecret,
  planKeyed,
  removeKeyed,
  type KeyedApply,
} from '../../src/kernel/service/keyed-section.js';

interface Item {
  id: string;
  v: number;
  note?: string;
}

const match = {
  key: (i: Item) => i.id,
  rowKey: (r: Item) => r.id,
  same: (r: Item, i: Item) => r.v === i.v && r.note === i.note,
};
const rows: Item[] = [
  { id: 'a', v: 1, note: 'kept' },
  { id: 'b', v: 2 },
  { id: 'c', v: 3 },
];
const template: Item[] = [
  { id: 'b', v: 2 },
  { id: 'a', v: 9 },
  { id: 'd', v: 4 },
];

test('planKeyed: create, update, unchanged by key; only use removes', () => {
  for (const mode of ['legacy', 'use', 'merge-apply'] as ApplyMode[]) {
    const plan = planKeyed(rows, template, mode, match);
    assert.deepEqual(
      plan.create.map((c) => [c.item.id, c.index]),
      [['d', 2]],
    );
    assert.deepEqual(
      plan.update.map((u) => [u.item.id, u.row.id, u.index]),
      [['a', 'a', 1]],
    );
    assert.deepEqual(
      plan.unchanged.map((u) => u.item.id),
      ['b'],
    );
    assert.deepEqual(
      plan.remove.map((r) => r.id),
      mode === 'use' ? ['c'] : [],
      mode,
    );
  }
});

test('planKeyed: merge-apply takes the union of row and item; the other modes the item', () => {
  const merge = (r: Item, i: Item): Item => ({ ...r, ...i });
  const tpl = [{ id: 'a', v: 1 }];
  const merged = planKeyed(rows, tpl, 'merge-apply', { ...match, merge });
  assert.deepEqual(
    merged.unchanged[0]?.item,
    { id: 'a', v: 1, note: 'kept' },
    'the note the template leaves out stays',
  );
  const legacy = planKeyed(rows, tpl, 'legacy', { ...match, merge });
  assert.deepEqual(legacy.update[0]?.item, { id: 'a', v: 1 }, 'legacy replaces');
});

/** A spec that records what it is asked, failing on the ids of `failOn`. */
function recorder(failOn: string[] = [], extra: Partial<KeyedApply<Item, Item>> = {}) {
  const calls: string[] = [];
  const spec: KeyedApply<Item, Item> = {
    ...match,
    section: 'demo',
    path: 'items',
    async create(i) {
      if (failOn.includes(i.id)) throw conflict(`item "${i.id}" cannot be made`);
      calls.push(`create ${i.id}`);
    },
    async update(i, r) {
      if (failOn.includes(i.id)) throw new Error(`item "${i.id}" broke`);
      calls.push(`update ${r.id}->${i.v}`);
    },
    async remove(gone) {
      if (gone.some((r) => failOn.includes(r.id))) throw new Error('cannot remove');
      calls.push(`remove ${gone.map((r) => r.id).join(',')}`);
    },
    step: (i) => calls.push(`step ${i.id}`),
    ...extra,
  };
  return { calls, spec };
}

const ctxOf = (mode: ApplyMode, failFast: boolean) => {
  const failed: Array<{ item: string; message: string }> = [];
  return {
    failed,
    ctx: { mode, failFast, fail: (item: string, message: string) => failed.push({ item, message }) },
  };
};

test('applyKeyed: removals first (by default), then the items in the template order', async () => {
  const { calls, spec } = recorder();
  const { ctx } = ctxOf('use', true);
  const out = await applyKeyed(rows, template, ctx, spec);
  assert.deepEqual(calls, ['remove c', 'step b', 'update a->9', 'step a', 'create d', 'step d']);
  assert.deepEqual(
    [out.created.map((i) => i.id), out.updated.map((u) => u.row.id), out.unchanged.map((u) => u.row.id)],
    [['d'], ['a'], ['b']],
  );
  assert.deepEqual(
    out.removed.map((r) => r.id),
    ['c'],
  );
  const after = recorder([], { removeWhen: 'after' });
  await applyKeyed(rows, template, ctx, after.spec);
  assert.equal(after.calls.at(-1), 'remove c');
  const later = recorder([], { removeWhen: 'later', removeOneByOne: true });
  const kept = await applyKeyed(rows, template, ctx, later.spec);
  assert.ok(!later.calls.some((c) => c.startsWith('remove')));
  assert.deepEqual(
    kept.leftOut.map((r) => r.id),
    ['c'],
  );
  const removed = await removeKeyed(kept.leftOut, ctx, later.spec);
  assert.deepEqual(
    removed.removed.map((r) => r.id),
    ['c'],
  );
});

test('applyKeyed: with failFast an item that fails aborts, its message naming section and item', async () => {
  const { spec } = recorder(['d']);
  const { ctx } = ctxOf('legacy', true);
  await assert.rejects(applyKeyed(rows, template, ctx, spec), (err: AppError) => {
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 409);
    assert.equal(err.message, 'section demo: items[2] (d): item "d" cannot be made');
    return true;
  });
  const plain = recorder(['a']).spec;
  await assert.rejects(
    applyKeyed(rows, template, ctx, plain),
    /^Error: section demo: items\[1\] \(a\): item "a" broke$/,
  );
});

test('applyKeyed: without failFast a failing item is reported and skipped, the rest applies', async () => {
  const { calls, spec } = recorder(['a', 'c'], { removeOneByOne: true });
  const { ctx, failed } = ctxOf('use', false);
  const out = await applyKeyed(rows, template, ctx, spec);
  assert.deepEqual(failed, [
    { item: 'demo: items "c" (removing)', message: 'section demo: items "c" (removing): cannot remove' },
    { item: 'demo: items[1] (a)', message: 'section demo: items[1] (a): item "a" broke' },
  ]);
  assert.equal(out.failed, 2);
  assert.deepEqual(calls, ['step b', 'step a', 'create d', 'step d']);
  assert.deepEqual(
    out.created.map((i) => i.id),
    ['d'],
  );
});

test('applyKeyed: a guard undoes the failed item alone (failFast false only)', async () => {
  const log: string[] = [];
  const guard = {
    begin: async () => void log.push('begin'),
    keep: async () => void log.push('keep'),
    undo: async () => void log.push('undo'),
  };
  const { spec } = recorder(['d'], { guard });
  const soft = ctxOf('legacy', false);
  await applyKeyed(rows, template, soft.ctx, spec);
  assert.deepEqual(log, ['begin', 'keep', 'begin', 'undo'], 'a kept, d undone (b unchanged: no write)');
  log.length = 0;
  await assert.rejects(applyKeyed(rows, template, ctxOf('legacy', true).ctx, spec));
  assert.deepEqual(log, [], 'with failFast the whole transaction is undone: no savepoints');
});

test('missingSecret names the item and the field', () => {
  const err = missingSecret('api client "robot"', 'secret');
  assert.equal(err.status, 409);
  assert.equal(
    err.message,
    'api client "robot" has no secret in the template (exported without an encryptionKey) and does not exist on this edge',
  );
});
