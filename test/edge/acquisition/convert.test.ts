/** Value conversion: register words to values and back, per value type and byte order. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  coerce,
  datatypeOf,
  decodeWords,
  encodeWords,
  numberAs,
  wordCount,
  type ByteOrder,
} from '../../../src/edge/acquisition/convert.js';

const ORDERS: ByteOrder[] = ['ABCD', 'DCBA', 'BADC', 'CDAB'];
const words = (...w: number[]) => Buffer.from(w.flatMap((x) => [x >> 8, x & 0xff]));

test('float32 3.5 (0x40600000) in the four byte orders', () => {
  assert.equal(decodeWords(words(0x4060, 0x0000), 0, 'float32', 'ABCD'), 3.5);
  assert.equal(decodeWords(words(0x0000, 0x4060), 0, 'float32', 'CDAB'), 3.5);
  assert.equal(decodeWords(words(0x6040, 0x0000), 0, 'float32', 'BADC'), 3.5);
  assert.equal(decodeWords(words(0x0000, 0x6040), 0, 'float32', 'DCBA'), 3.5);
});

test('integers, 64-bit values beyond 2^53 as text, bits, strings', () => {
  assert.equal(decodeWords(words(0xffff), 0, 'int16'), -1);
  assert.equal(decodeWords(words(0xffff), 0, 'uint16'), 65535);
  assert.equal(decodeWords(words(0xffff, 0xfffe), 0, 'int32'), -2);
  assert.equal(decodeWords(words(0x0001, 0x0000), 0, 'uint32'), 65536);
  assert.equal(decodeWords(words(0, 1, 0, 5), 0, 'uint64'), 2 ** 32 + 5);
  assert.equal(decodeWords(words(0xffff, 0xffff, 0xffff, 0xffff), 0, 'uint64'), '18446744073709551615');
  assert.equal(decodeWords(words(0xffff, 0xffff, 0xffff, 0xffff), 0, 'int64'), -1);
  assert.equal(decodeWords(words(0b1000), 0, 'bit', 'ABCD', { bit: 3 }), true);
  assert.equal(decodeWords(words(0b1000), 0, 'bit', 'ABCD', { bit: 2 }), false);
  assert.equal(decodeWords(words(0x0800), 0, 'bit', 'BADC', { bit: 3 }), true);
  assert.equal(decodeWords(words(0x4142, 0x4300), 0, 'string', 'ABCD', { length: 4 }), 'ABC');
  assert.equal(decodeWords(words(0x4241, 0x0043), 0, 'string', 'BADC', { length: 4 }), 'ABC');
  assert.equal(
    decodeWords(words(0, 0x4049, 0x0fd0), 2, 'float32'),
    decodeWords(words(0x4049, 0x0fd0), 0, 'float32'),
  );
});

test('encodeWords is the inverse of decodeWords for every numeric type and byte order', () => {
  const cases: Array<[string, fc.Arbitrary<number>]> = [
    ['int16', fc.integer({ min: -32768, max: 32767 })],
    ['uint16', fc.integer({ min: 0, max: 65535 })],
    ['int32', fc.integer({ min: -2147483648, max: 2147483647 })],
    ['uint32', fc.integer({ min: 0, max: 4294967295 })],
    ['int64', fc.maxSafeInteger()],
    ['uint64', fc.maxSafeNat()],
    ['float32', fc.float({ noNaN: true, noDefaultInfinity: true }).map(Math.fround)],
    ['float64', fc.double({ noNaN: true, noDefaultInfinity: true })],
  ];
  for (const [type, arb] of cases) {
    fc.assert(
      fc.property(arb, fc.constantFrom(...ORDERS), (v, order) => {
        const w = encodeWords(v, type, order);
        assert.equal(w.length, wordCount(type));
        const back = decodeWords(words(...w), 0, type, order);
        assert.ok(
          Object.is(back, v) || back === v || (v === 0 && back === 0),
          `${type} ${order}: ${v} -> ${back}`,
        );
      }),
      { numRuns: 200 },
    );
  }
  assert.deepEqual(encodeWords('AB', 'string', 'ABCD', { length: 4 }), [0x4142, 0]);
});

test('coerce refuses what does not fit and names why', () => {
  assert.equal(coerce('12', 'int16'), 12);
  assert.equal(coerce(1, 'bool'), true);
  assert.equal(coerce('false', 'bool'), false);
  assert.throws(() => coerce(70000, 'int16'), /out of range for int16/);
  assert.throws(() => coerce(1.5, 'int32'), /not an integer/);
  assert.throws(() => coerce('abc', 'float64'), /not a number/);
  assert.throws(() => coerce('maybe', 'bool'), /not a bool/);
  assert.equal(coerce({ a: 1 }, 'string'), '{"a":1}');
  assert.equal(numberAs(70000, 'int16'), 32767);
  assert.equal(numberAs(2.6, 'uint16'), 3);
  assert.equal(numberAs(0.1, 'float32'), Math.fround(0.1));
  assert.equal(datatypeOf('int16'), 'int64');
  assert.equal(datatypeOf('uint32'), 'uint64');
  assert.equal(datatypeOf('float32'), 'float64');
  assert.equal(datatypeOf('bit'), 'bool');
  assert.equal(datatypeOf('string'), 'string');
});
