/**
 * `isStringifiedObject`: a stored JSON text is copied into an export only when
 * `JSON.stringify(JSON.parse(text))` would write it back byte for byte. Every text the scan accepts
 * is checked against that round trip (hand-picked traps and random texts), and what the edge
 * itself stores (`JSON.stringify` of ordinary properties) is accepted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isStringifiedObject } from '../../../src/edge/devicehub/json-canonical.js';

const roundTrips = (t: string): boolean => {
  try {
    return JSON.stringify(JSON.parse(t)) === t;
  } catch {
    return false;
  }
};

test('texts JSON.stringify writes are accepted', () => {
  for (const value of [
    { address: '40001' },
    { address: '1', scale: 10, offset: -3, enabled: true, unit: null },
    { nested: { list: [1, 'two', [3], {}], empty: [] }, 'é ☃ 😀': 'sep \u2028 x' },
    { a: 'x{y}z', b: '}{', c: '[', d: '' },
  ]) {
    const text = JSON.stringify(value);
    assert.equal(isStringifiedObject(text), true, text);
  }
});

test('texts that do not round-trip are refused', () => {
  for (const text of [
    '{"a": 1}', // whitespace
    ' {"a":1}',
    '{"a":1} ',
    '{"a":"\\u0041"}', // an escape JSON.stringify would not write
    '{"a":"\\n"}', // escapes are refused even where they would round-trip
    '{"a":"x\u0001"}', // a raw control character: JSON.parse refuses it
    '{"a":1.0}',
    '{"a":1e2}',
    '{"a":-0}',
    '{"a":01}',
    '{"a":12345678901234567890}',
    '{"a":1,"a":2}', // a repeated key: the last wins
    '{"b":1,"1":2}', // an index key moves to the front
    '{"a":"\ud800"}', // a lone surrogate is escaped
    '{"a":"\udc00x"}',
    '{"a":tru}',
    '{"a":1,}',
    '{"a":[1,]}',
    '{"a"}',
    '{"a":1',
    '{',
    '',
    '[1]', // not an object
    '{}x',
  ]) {
    assert.equal(isStringifiedObject(text), false, text);
  }
  assert.equal(isStringifiedObject(`{"a":${'['.repeat(70)}${']'.repeat(70)}}`), false);
});

test('every accepted random text round-trips byte for byte', () => {
  // A small alphabet of JSON pieces, joined at random: most texts are invalid or not canonical;
  // the scan must never accept one that does not round-trip.
  const pieces = [
    '{',
    '}',
    '[',
    ']',
    ',',
    ':',
    '"a"',
    '"b"',
    '"1"',
    '"01"',
    '"\\""',
    '"\\u0041"',
    '"\ud83d\ude00"',
    '"\ud83d"',
    '1',
    '0',
    '-0',
    '-1',
    '10',
    '1.5',
    '1e3',
    'true',
    'false',
    'null',
    ' ',
    '""',
    '"{"',
  ];
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let accepted = 0;
  for (let i = 0; i < 200_000; i++) {
    let t = '{';
    const n = 1 + rand(10);
    for (let j = 0; j < n; j++) t += pieces[rand(pieces.length)];
    if (isStringifiedObject(t)) {
      accepted++;
      assert.equal(roundTrips(t), true, t);
    }
  }
  // And texts made by JSON.stringify of random values, which must all be accepted or round-trip.
  const values = [1, -7, 0, 'x', 'y"', '😀', true, null, 2.5, 1e21, [], {}];
  for (let i = 0; i < 20_000; i++) {
    const o: Record<string, unknown> = {};
    const n = rand(5);
    for (let j = 0; j < n; j++) o[['a', 'b', '2', 'c d', 'é'][rand(5)]!] = values[rand(values.length)];
    const t = JSON.stringify(o);
    if (isStringifiedObject(t)) {
      accepted++;
      assert.equal(roundTrips(t), true, t);
    }
  }
  assert.ok(accepted > 1000, `only ${accepted} texts accepted`);
});
