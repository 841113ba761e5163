/** The data plane's shared budget per turn of the event loop (no timing asserted). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dataPlaneWait } from '../../../src/edge/acquisition/slices.js';

test('work found due waits for the next turn of the loop, one turn shared by every waiter', async () => {
  // No slice was ever started: the first caller cannot tell a spent budget from an old one.
  const first = dataPlaneWait();
  assert.ok(first instanceof Promise);
  // Everyone who asks meanwhile waits for the same turn, not one each.
  assert.equal(dataPlaneWait(), first);
  assert.equal(dataPlaneWait(), first);
  const order: number[] = [];
  await Promise.all([first.then(() => order.push(1)), first.then(() => order.push(2))]);
  // One turn resumed them all, in the order they waited; the next ask within its budget goes on.
  assert.deepEqual(order, [1, 2]);
});
