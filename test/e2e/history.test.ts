/**
 * Tag history on the running edge: values published on the DataHub are kept and answered by
 * `/history/...` (raw pages, aggregates, last value, streamed CSV) and `/history/graphql`; a
 * template's policy changes what is kept; anonymous calls are refused.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { bootstrapAdmin, startTestEdge, type TestEdge } from '../helpers/edge.js';
import { eventually } from '../helpers/util.js';

let t: TestEdge;
let h: Record<string, string>;
const T0 = Math.floor((Date.now() - 20 * 60_000) / 60_000) * 60_000;

function publish(device: string, tag: string, ts: number, value: unknown) {
  t.edge.datahub.hub.publish(`devicehub.raw.${device}.${tag}`, {
    success: true,
    datatype: typeof value === 'number' ? 'float64' : 'string',
    timestamp: ts,
    registerId: `${device}-${tag}`,
    value,
    deviceID: device,
    deviceName: device,
    tagName: tag,
  });
}

before(async () => {
  t = await startTestEdge({ historyFlushMs: 50 });
  h = { authorization: `Bearer ${await bootstrapAdmin(t)}` };
  for (let i = 0; i < 600; i++) publish('Press', 'Speed', T0 + i * 1000, i % 10);
  publish('Press', 'State', T0 + 500, 'running');
  publish('Press', 'Broken', T0, null);
});
after(() => t.stop());

test('raw values, paged in time order, and the last value before a time', async () => {
  const q = `tag=Press.Speed,Press.State&from=${T0}&to=${T0 + 3000}`;
  await eventually(async () => {
    const r = await t.call(`/history/values?${q}&limit=2&offset=1`, { headers: h });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.total, 4);
    assert.deepEqual(r.body.items, [
      { tag: 'Press.State', ts: T0 + 500, value: 'running' },
      { tag: 'Press.Speed', ts: T0 + 1000, value: 1 },
    ]);
    return true;
  });
  const last = await t.call(`/history/last?tag=Press.Speed&at=${new Date(T0 + 2500).toISOString()}`, {
    headers: h,
  });
  assert.deepEqual(last.body.items, [{ tag: 'Press.Speed', ts: T0 + 2000, value: 2 }]);
  const bad = await t.call(`/history/values?tag=Press.Speed&from=${T0}&to=${T0}`, { headers: h });
  assert.equal(bad.status, 400);
  assert.match(bad.body.message ?? bad.text, /to must be after from/);
  const noTag = await t.call(`/history/aggregate?from=${T0}`, { headers: h });
  assert.equal(noTag.status, 400);
  assert.match(noTag.body.message, /name at least one tag/);
  const tooMany = await t.call(`/history/values?${q}&limit=1001`, { headers: h });
  assert.equal(tooMany.status, 400);
  assert.match(tooMany.body.message, /limit/);
  const anon = await t.call(`/history/values?${q}`);
  assert.equal(anon.status, 401);
});

test('aggregates per bucket from a point budget, REST and GraphQL', async () => {
  const from = T0;
  const to = T0 + 600_000;
  await eventually(async () => {
    const r = await t.call(`/history/aggregate?tag=Press.Speed&from=${from}&to=${to}&points=60`, {
      headers: h,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.bucketMs, 10_000);
    const b = r.body.series[0].buckets;
    assert.equal(b.length, 60);
    assert.deepEqual(
      { ...b[0], ts: b[0].ts - from },
      { ts: 0, first: 0, last: 9, min: 0, max: 9, mean: 4.5, count: 10, twa: 4.5 },
    );
    return true;
  });
  const gql = await t.call('/history/graphql', {
    headers: h,
    json: {
      query:
        'query A($input: HistoryAggregateRequest!) { HistoryAggregate(input: $input) { BucketMs Series { Tag Buckets { Count Max TimeWeightedMean } } } }',
      variables: { input: { Tags: ['Press.Speed'], From: from, To: to, Bucket: 60_000 } },
    },
  });
  assert.equal(gql.status, 200, gql.text);
  const s = gql.body.data.HistoryAggregate;
  assert.equal(s.BucketMs, 60_000);
  assert.equal(s.Series[0].Buckets.length, 10);
  assert.deepEqual(s.Series[0].Buckets[0], { Count: 60, Max: 9, TimeWeightedMean: 4.5 });
  const page = await t.call('/history/graphql', {
    headers: h,
    json: {
      query:
        '{ HistoryValues(input: { Tags: ["Press.Speed"], From: ' +
        from +
        ', To: ' +
        to +
        ', Limit: 5, Offset: 10 }) { Total Items { Tag Timestamp Value Text } } }',
    },
  });
  assert.equal(page.body.data.HistoryValues.Total, 600);
  assert.deepEqual(page.body.data.HistoryValues.Items[0], {
    Tag: 'Press.Speed',
    Timestamp: from + 10_000,
    Value: 0,
    Text: null,
  });
});

test('CSV export streams every value', async () => {
  await eventually(async () => {
    const r = await t.call(`/history/export.csv?tag=Press.Speed,Press.State&from=${T0}&to=${T0 + 600_000}`, {
      headers: h,
    });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /text\/csv/);
    const lines = r.text.trim().split('\n');
    assert.equal(lines[0], 'tag,timestamp,time,value');
    assert.equal(lines.length, 1 + 600 + 1);
    assert.equal(lines[1], `Press.Speed,${T0},${new Date(T0).toISOString()},0`);
    assert.equal(lines[601], `Press.State,${T0 + 500},${new Date(T0 + 500).toISOString()},"running"`);
    return true;
  });
});

test('a policy of the history section: on change only, from then on', async () => {
  t.edge.shell
    .module('history')
    .service!.setPolicies([{ tag: 'Oven.*', mode: 'change', deadband: 0, minIntervalMs: 0 }]);
  const base = T0 + 700_000;
  for (let i = 0; i < 100; i++) publish('Oven', 'Temp', base + i * 1000, i < 50 ? 20 : 21);
  await eventually(async () => {
    const r = await t.call(`/history/values?tag=Oven.Temp&from=${base}&to=${base + 100_000}`, { headers: h });
    assert.deepEqual(
      r.body.items.map((v: { value: number }) => v.value),
      [20, 21],
    );
    return true;
  });
  const status = await t.call('/history/status', { headers: h });
  assert.equal(status.body.engine, 'duckdb');
  assert.ok(status.body.skipped >= 98, `skipped ${status.body.skipped}`);
});
