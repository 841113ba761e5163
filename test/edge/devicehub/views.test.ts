/** A register's view works out Topics, Properties and MetaData once, however often they are read. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RegisterTuple } from '../../../src/edge/devicehub/repository.js';
import { registerViewOf } from '../../../src/edge/devicehub/views.js';

const tuple = (): RegisterTuple => [
  'r1',
  'd1',
  'S',
  'tag_1',
  'a sine',
  'float64',
  0,
  '',
  1000,
  '{"address":"7"}',
  '{"unit":"bar"}',
  1_700_000_000_000,
  1_700_000_000_000,
  'dev-1',
  1,
];

test('Topics, Properties and MetaData: the same value on every read (graphql-jit reads a list field several times)', () => {
  const view = registerViewOf(tuple());
  const topics = view.Topics;
  assert.equal(view.Topics, topics, 'one array, not one per read');
  assert.deepEqual(
    topics.map((t) => [t.Format, t.Topic]),
    [
      ['Raw', 'devicehub.raw.dev-1.tag_1'],
      ['Raw', 'devicehub.alias.dev-1.tag_1'],
      ['Value', 'devicehub.value.dev-1.tag_1'],
      ['Command', 'devicehub.command.dev-1.tag_1'],
      ['WriteResponse', 'devicehub.writeresponse.dev-1.tag_1'],
    ],
  );
  const properties = view.Properties;
  assert.equal(view.Properties, properties);
  assert.deepEqual(properties, [
    { Name: 'address', Value: '7' },
    { Name: 'DataType', Value: 'float64' },
  ]);
  const metaData = view.MetaData;
  assert.equal(view.MetaData, metaData);
  assert.deepEqual(metaData, { unit: 'bar' });
  assert.deepEqual(JSON.parse(JSON.stringify(view)).Topics.length, 5);
});
