/** The recorder's per-tag state kept on the publisher's encoder (`subscriberMemo`). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DataHub } from '../../../src/edge/datahub/index.js';
import {
  PolicyTable,
  Recorder,
  type HistoryStore,
  type SampleBatch,
} from '../../../src/edge/history/index.js';

function recorder(hub: DataHub, batches: SampleBatch[]): Recorder {
  const store = { append: async (b: SampleBatch) => void batches.push(b) } as unknown as HistoryStore;
  const policies = new PolicyTable([{ tag: 'D.b', mode: 'change', deadband: 0, minIntervalMs: 0 }]);
  const r = new Recorder({
    hub,
    store,
    tags: new Map(),
    policies,
    flushMs: 1000,
    batchSize: 1000,
    maxTags: 100,
    maxPending: 10_000,
  });
  r.start();
  return r;
}

const rows = (batches: SampleBatch[], r: Recorder) =>
  batches.flatMap((b) => [...b.tag.subarray(0, b.n)].map((id, i) => `${r.nameOf(id)}=${b.v[i]}`));

const want = ['D.a=1', 'D.b=2', 'D.a=3', 'D.b=4', 'D.a=5'];

/** One encoder publishing on two subjects (a tag and its alias), as the acquisition's does. */
function publishAll(hub: DataHub): void {
  const encoder = { encode: (d: unknown) => Buffer.from(JSON.stringify(d)), subscriberMemo: undefined };
  const send = (subject: string, value: number) =>
    hub.dispatch(subject, { success: true, timestamp: 1000, value }, '', undefined, undefined, true, encoder);
  send('devicehub.raw.D.a', 1);
  send('devicehub.raw.D.b', 2);
  send('devicehub.raw.D.a', 3);
  send('devicehub.raw.D.b', 2); // `change` policy of D.b: skipped, by D.b's own state
  send('devicehub.raw.D.b', 4);
  hub.publish('devicehub.raw.D.a', { success: true, timestamp: 1000, value: 5 }); // no encoder
}

test('recorder: a state found on the encoder is used only for its subject', async () => {
  const hub = new DataHub();
  const a: SampleBatch[] = [];
  const ra = recorder(hub, a);
  publishAll(hub);
  await ra.flush();
  assert.deepEqual(rows(a, ra), want);
  assert.equal(ra.counters.skipped, 1);
  await ra.stop();
});

test('recorder: a state found on the encoder is used only by its recorder', async () => {
  const hub = new DataHub();
  const a: SampleBatch[] = [];
  const b: SampleBatch[] = [];
  const ra = recorder(hub, a);
  const rb = recorder(hub, b);
  publishAll(hub);
  await ra.flush();
  await rb.flush();
  assert.deepEqual(rows(a, ra), want);
  assert.deepEqual(rows(b, rb), want);
  assert.equal(rb.counters.skipped, 1);
  await ra.stop();
  await rb.stop();
});
