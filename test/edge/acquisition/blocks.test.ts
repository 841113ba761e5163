/** Coalescing of neighbouring addresses into block reads. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { coalesce } from '../../../src/edge/acquisition/blocks.js';

const span = (x: { start: number; count: number }) => x;

test('contiguous registers fill blocks up to the maximum', () => {
  const items = Array.from({ length: 1000 }, (_, i) => ({ start: i, count: 1 }));
  const blocks = coalesce(items, span, 100);
  assert.equal(blocks.length, 10);
  assert.ok(blocks.every((b) => b.count === 100 && b.items.length === 100));
});

test('multi-register values are never split; small holes are read through, large ones are not', () => {
  const blocks = coalesce(
    [
      { start: 0, count: 2 },
      { start: 98, count: 4 },
      { start: 110, count: 1 },
      { start: 500, count: 1 },
    ],
    span,
    100,
    8,
  );
  assert.deepEqual(
    blocks.map((b) => [b.start, b.count]),
    [
      [0, 2],
      [98, 13],
      [500, 1],
    ],
  );
});

test('every item lands in exactly one block that covers it and respects the maximum', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.record({ start: fc.integer({ min: 0, max: 2000 }), count: fc.integer({ min: 1, max: 4 }) }),
        { maxLength: 300 },
      ),
      fc.integer({ min: 4, max: 125 }),
      fc.integer({ min: 0, max: 10 }),
      (items, max, gap) => {
        const blocks = coalesce(items, span, max, gap);
        assert.equal(
          blocks.reduce((n, b) => n + b.items.length, 0),
          items.length,
        );
        for (const b of blocks) {
          assert.ok(b.count <= max);
          for (const it of b.items)
            assert.ok(it.start >= b.start && it.start + it.count <= b.start + b.count);
        }
      },
    ),
  );
});
