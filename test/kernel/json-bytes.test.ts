/**
 * `jsonBytes` (src/kernel/http/json-bytes.ts) writes a GraphQL answer piece by piece: its bytes
 * must be exactly those of `JSON.stringify`, whatever the value holds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonBytes } from '../../src/kernel/http/json-bytes.js';

const same = (value: unknown) =>
  assert.equal(jsonBytes(value).toString('utf8'), JSON.stringify(value) ?? 'null');

test('a page of 1,000 registers is JSON.stringify byte for byte', () => {
  const registers = Array.from({ length: 1000 }, (_, i) => ({
    ID: `id-${i}`,
    TagName: `tag_${i}`,
    IntervalMs: 1000,
    Gone: undefined,
    Topics: [{ Format: 'Raw', Topic: `devicehub.raw.dev.tag_${i}` }],
  }));
  same({
    data: { ListRegistersFromAllDevices: { TotalCount: 100000, Last: 'id-999', Registers: registers } },
  });
});

test('what JSON.stringify leaves out or turns to null, it leaves out or turns to null', () => {
  const many = (v: unknown) => Array.from({ length: 20 }, () => v);
  same({
    data: {
      a: undefined,
      f: () => 1,
      s: Symbol('x'),
      d: new Date(0),
      n: null,
      nan: Number.NaN,
      gone: { toJSON: () => undefined },
      list: [...many(undefined), ...many(() => 1), new Date(1), { toJSON: () => 'x' }],
      deep: { a: { b: { c: { d: { e: many({ f: 1 }) } } } } },
      empty: {},
      small: [1, 'two', null],
    },
  });
  same([]);
  same('text');
  same(null);
});

test('text beyond ASCII: two- and four-byte characters, lone surrogates, escapes', () => {
  const texts = Array.from(
    { length: 40 },
    (_, i) => `Grüße ${i} 温度 🌡️ "q" \\ \n \ud800 ${'é'.repeat(i * 50)}`,
  );
  same({ data: { texts, key_é: 'ü' } });
});

test('a buffer grows past its first size with multi-byte text', () => {
  same({ data: { list: Array.from({ length: 5000 }, (_, i) => ({ i, t: '温'.repeat(i % 20) })) } });
});

test('arrays around the piece size (128 elements), with holes and undefined, are JSON.stringify', () => {
  for (const length of [17, 127, 128, 129, 256, 257, 1000]) {
    const list: unknown[] = Array.from({ length }, (_, i) => (i % 50 === 0 ? undefined : { i }));
    delete list[length - 1]; // a hole
    same({ data: { list } });
    same(list);
  }
});
