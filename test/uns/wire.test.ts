/** The MQTT 5 broker layer's pure parts: shared subscription names, retained message properties. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseShared, sharedProblem, underlyingFilter } from '../../src/uns/broker/wire.js';
import { retainedPropertiesOf, TopicTree } from '../../src/uns/namespace/topic-tree.js';

test('shared subscription names: $share/<group>/<filter> and the internal $shared/ form', () => {
  assert.deepEqual(parseShared('$share/g/a/+/c'), { group: 'g', filter: 'a/+/c' });
  assert.deepEqual(parseShared('$shared/g/#'), { group: 'g', filter: '#' });
  assert.equal(parseShared('a/b'), null);
  assert.equal(parseShared('$SYS/x'), null);
  assert.equal(underlyingFilter('$share/g/a/#'), 'a/#');
  assert.equal(underlyingFilter('plain/#'), 'plain/#');
  assert.equal(sharedProblem('$share/g/a'), null);
  assert.equal(sharedProblem('plain'), null);
  assert.match(sharedProblem('$share/g')!, /\$share\/<group>\/<filter>/);
  assert.match(sharedProblem('$share//a')!, /\$share\/<group>\/<filter>/);
  assert.match(sharedProblem('$share/g+/a')!, /cannot contain \+ or #/);
});

test('retained message properties: what is kept, bounded to 1 KiB, none when empty', () => {
  assert.deepEqual(retainedPropertiesOf(undefined), { value: null, bytes: 0 });
  assert.deepEqual(retainedPropertiesOf({ messageExpiryInterval: 5 }), { value: null, bytes: 0 });
  const kept = retainedPropertiesOf({
    contentType: 'application/json',
    payloadFormatIndicator: true,
    userProperties: { a: '1', b: ['2', '3'] },
  });
  assert.deepEqual(kept.value, {
    contentType: 'application/json',
    responseTopic: undefined,
    payloadFormatIndicator: true,
    userProperties: [
      { name: 'a', value: '1' },
      { name: 'b', value: '2' },
      { name: 'b', value: '3' },
    ],
  });
  const big: Record<string, string> = {};
  for (let i = 0; i < 200; i++) big[`key${i}`] = 'v'.repeat(20);
  const bounded = retainedPropertiesOf({ userProperties: big });
  assert.ok(bounded.value!.userProperties.length < 200);
  assert.ok(bounded.bytes <= 1024 + 64, String(bounded.bytes));
});

test('the topic tree keeps a retained message properties, drops them with it, and counts their bytes', () => {
  const tree = new TopicTree(100);
  const before = tree.bytes;
  tree.record('a/b', Buffer.from('v'), true, Date.now(), { contentType: 'text/plain' });
  assert.equal(tree.get('a/b')!.retainedProperties?.contentType, 'text/plain');
  assert.ok(tree.bytes > before);
  const withProps = tree.bytes;
  tree.record('a/b', Buffer.from('w'), false, Date.now(), { contentType: 'other' });
  assert.equal(tree.get('a/b')!.retainedProperties?.contentType, 'text/plain', 'a live message leaves them');
  tree.record('a/b', Buffer.alloc(0), true);
  assert.equal(tree.get('a/b')!.retainedProperties, null);
  assert.ok(tree.bytes < withProps);
});
