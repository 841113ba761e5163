/**
 * Tag values cross to the OPC UA server's worker as one batch in columns (`UaValueBatch`): what
 * the worker reads back, after the structured clone of `postMessage`, is each value as it was
 * published: its value, a failed read, a missing timestamp (NaN in the column, null again).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { batchValues, type UaValueBatch } from '../../../src/edge/opcua/ua-protocol.js';

test('a batch of values in columns arrives through postMessage as the values it holds', async () => {
  const batch: UaValueBatch = {
    registerIds: ['r1', 'r2', 'r3', 'r4'],
    values: [1.5, 'text', null, [1, 2]],
    success: [true, false, true, true],
    timestamps: [1_700_000_000_123, NaN, 1_700_000_000_456, 0],
  };
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<UaValueBatch>((resolve) => port2.once('message', resolve));
  port1.postMessage(batch);
  const copy = await received;
  port1.close();
  assert.deepEqual(
    [...batchValues(copy)],
    [
      { registerId: 'r1', value: 1.5, success: true, timestamp: 1_700_000_000_123 },
      { registerId: 'r2', value: 'text', success: false, timestamp: null },
      { registerId: 'r3', value: null, success: true, timestamp: 1_700_000_000_456 },
      { registerId: 'r4', value: [1, 2], success: true, timestamp: 0 },
    ],
  );
});
