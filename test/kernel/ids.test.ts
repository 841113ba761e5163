/** The kernel's ID generator: time-ordered UUIDs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { uuidv7 } from '../../src/kernel/ids.js';

test('uuidv7 IDs increase, also within one millisecond', () => {
  const now = Date.now();
  const ids = Array.from({ length: 10000 }, () => uuidv7(now));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 50 }), (n) => {
      const a = Array.from({ length: n }, () => uuidv7());
      return [...a].sort().every((x, i) => x === a[i]);
    }),
  );
});

test('uuidv7 IDs are version 7, variant 10, and carry their millisecond', () => {
  const now = Date.UTC(2030, 0, 2, 3, 4, 5, 678);
  const id = uuidv7(now + 1000 * 3600 * 24 * 365);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(parseInt(id.replace(/-/g, '').slice(0, 12), 16), now + 1000 * 3600 * 24 * 365);
});
