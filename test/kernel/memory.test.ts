/** A bulk change is followed by full collections once it settles; small changes are not. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually } from '../helpers/util.js';
import {
  BULK_CHANGE_ITEMS,
  bulkCollections,
  MAX_DEFER_MS,
  noteBulkChange,
  noteResponse,
  QUIET_MS,
} from '../../src/kernel/memory.js';

test('a bulk change runs a full collection 2 s after it settles; a small change runs none', async () => {
  const before = bulkCollections();
  noteBulkChange(BULK_CHANGE_ITEMS - 1);
  // Time is the test: the collection runs 2 s after a bulk change settles.
  await new Promise((r) => setTimeout(r, 2300));
  assert.equal(bulkCollections(), before, 'a small change schedules nothing');

  let garbage: object[] | null = Array.from({ length: 300_000 }, (_, i) => ({ i, s: `x${i}` }));
  assert.equal(garbage.length, 300_000);
  garbage = null;
  const heapBefore = process.memoryUsage().heapUsed;
  noteBulkChange(BULK_CHANGE_ITEMS);
  noteBulkChange(BULK_CHANGE_ITEMS * 10); // settles again: still one round
  // Time is the test: not before the change settled...
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(bulkCollections(), before, 'not before the change settled');
  // ...and soon after.
  await new Promise((r) => setTimeout(r, 900));
  assert.equal(bulkCollections(), before + 1, 'the first pass ran');
  assert.ok(process.memoryUsage().heapUsed < heapBefore, 'the garbage was collected');
});

test('a collection waits while the HTTP API answers requests, and runs once it is quiet', async () => {
  // After the previous test's round: the next may start 10 s after it (MIN_INTERVAL_MS).
  await new Promise((r) => setTimeout(r, 8000));
  const before = bulkCollections();
  noteBulkChange(BULK_CHANGE_ITEMS);
  // Responses every 200 ms through the settling time and beyond: the pass waits for them.
  const responses = setInterval(noteResponse, 200);
  try {
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(bulkCollections(), before, 'no collection while responses are sent');
  } finally {
    clearInterval(responses);
  }
  assert.ok(QUIET_MS < 2000 && MAX_DEFER_MS > 3000);
  // Once no response was sent for QUIET_MS, the pass runs (well before MAX_DEFER_MS; waited for
  // generously, so that a loaded machine's late timers do not fail it).
  await eventually(
    () => bulkCollections() === before + 1,
    10_000,
    'the first pass ran once the API was quiet',
  );
});
