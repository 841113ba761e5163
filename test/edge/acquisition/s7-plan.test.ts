/** The S7 driver's read plan (items per area, requests per PDU) and its value encodings. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  decodeS7,
  encodeS7,
  parseBrowseAreas,
  planReads,
  MAX_ITEMS,
  itemBytes,
  largeRequests,
} from '../../../src/edge/acquisition/drivers/s7-plan.js';
import type { TagSpec } from '../../../src/edge/acquisition/types.js';

const tag = (register: string, valueType: string, props: Record<string, string>) =>
  ({ register, valueType, props }) as unknown as TagSpec;

/** Bytes of one request and of its answer, as the S7 protocol frames them. */
function sizes(items: Array<{ area: string; count: number }>) {
  const bytes = (it: { area: string; count: number }) =>
    it.area === 'T' || it.area === 'C' ? it.count * 2 : it.count;
  const request = 12 + 12 * items.length;
  const answer =
    14 + items.reduce((n, it, k) => n + 4 + bytes(it) + (k < items.length - 1 ? bytes(it) % 2 : 0), 0);
  return { request, answer };
}

test('300 contiguous INTs of a data block at PDU 240: one run read whole, three full PDUs', () => {
  const tags = Array.from({ length: 300 }, (_, i) =>
    tag('DB', 'int16', { dbNumber: '1', address: String(i * 2) }),
  );
  const plan = planReads(tags, 240);
  assert.equal(plan.requests.length, 0);
  assert.equal(plan.large.length, 1);
  assert.equal(plan.large[0]!.tags.length, 300);
  assert.equal(largeRequests(itemBytes(plan.large[0]!), 240), 3);
});

test('40 tags in 40 data blocks at PDU 240: 19 items per request (the request limit), three requests', () => {
  const tags = Array.from({ length: 40 }, (_, i) =>
    tag('DB', 'int16', { dbNumber: String(i + 1), address: '0' }),
  );
  const plan = planReads(tags, 240);
  assert.deepEqual(
    plan.requests.map((r) => r.length),
    [19, 19, 2],
  );
  // At PDU 960 snap7's own limit of 20 items per request applies.
  assert.ok(planReads(tags, 960).requests.every((r) => r.length <= MAX_ITEMS));
});

test('a STRING larger than one PDU is read alone (split by the client); bad registers fail their tag', () => {
  const plan = planReads(
    [
      tag('DB', 'string', { dbNumber: '1', address: '0', length: '254' }),
      tag('X', 'int16', { address: '0' }),
    ],
    240,
  );
  assert.equal(plan.large.length, 1);
  assert.match(plan.invalid.get(1)!, /not an S7 area/);
});

test('every plan fits the PDU, covers every tag once, and needs no more requests than twice the lower bound', () => {
  const arb = fc.array(
    fc.record({
      area: fc.constantFrom('DB', 'M', 'I', 'Q', 'T', 'C'),
      db: fc.integer({ min: 1, max: 4 }),
      address: fc.integer({ min: 0, max: 2000 }),
      type: fc.constantFrom('bool', 'byte', 'int16', 'int32', 'float32', 'string'),
      pdu: fc.constantFrom(240, 480, 960),
    }),
    { minLength: 1, maxLength: 300 },
  );
  fc.assert(
    fc.property(arb, (specs) => {
      const pdu = specs[0]!.pdu;
      const tags = specs.map((s) =>
        s.area === 'T' || s.area === 'C'
          ? tag(s.area, 'uint16', { address: String(s.address) })
          : tag(s.area, s.type, { dbNumber: String(s.db), address: String(s.address), length: '10' }),
      );
      const plan = planReads(tags, pdu);
      const seen = new Set<number>();
      for (const r of plan.requests) {
        assert.ok(r.length <= MAX_ITEMS);
        const { request, answer } = sizes(r);
        assert.ok(request <= pdu && answer <= pdu, `${request}/${answer} > ${pdu}`);
        for (const it of r) for (const i of it.tags) seen.add(i);
      }
      for (const it of plan.large) for (const i of it.tags) seen.add(i);
      assert.equal(seen.size, tags.length);
      const items = plan.requests.flat();
      const payload = items.reduce(
        (n, it) => n + 4 + (it.area === 'T' || it.area === 'C' ? it.count * 2 : it.count) + 1,
        0,
      );
      const lower = Math.max(Math.ceil(items.length / MAX_ITEMS), Math.ceil(payload / (pdu - 14)));
      assert.ok(plan.requests.length <= Math.max(1, 2 * lower));
      // Runs read whole fill their PDUs: no more requests than their bytes need.
      for (const it of plan.large) assert.ok(itemBytes(it) > pdu - 18);
    }),
    { numRuns: 200 },
  );
});

test('values: integers and reals big endian, STRING with its header, timers and counters in BCD', () => {
  const b = Buffer.alloc(32);
  b.writeFloatBE(-2.5, 0);
  b[4] = 0b10;
  b[5] = 10;
  b[6] = 3;
  b.write('abc', 7, 'latin1');
  assert.equal(decodeS7(tag('DB', 'float32', {}), b, 0), -2.5);
  assert.equal(decodeS7(tag('DB', 'bool', { bit: '1' }), b, 4), true);
  assert.equal(decodeS7(tag('DB', 'string', { length: '10' }), b, 5), 'abc');
  assert.deepEqual([...encodeS7(tag('DB', 'string', { length: '10' }), 'hi')], [10, 2, 104, 105]);
  assert.throws(() => encodeS7(tag('DB', 'string', { length: '2' }), 'long'), /longer/);
  assert.equal(encodeS7(tag('T', 'uint32', {}), 2500).readUInt16BE(0), 0x0250);
  assert.equal(encodeS7(tag('T', 'uint32', {}), 123_000).readUInt16BE(0), 0x2123);
  assert.throws(() => encodeS7(tag('T', 'uint32', {}), 1234_5), /cannot be held/);
  assert.equal(decodeS7(tag('T', 'uint32', {}), Buffer.from([0x21, 0x23]), 0), 123_000);
  assert.equal(decodeS7(tag('C', 'uint16', {}), Buffer.from([0x09, 0x99]), 0), 999);
  assert.throws(() => encodeS7(tag('C', 'uint16', {}), 1000), /counter value/);
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 999 }), fc.constantFrom(10, 100, 1000, 10000), (n, base) => {
      const ms = n * base;
      assert.equal(decodeS7(tag('T', 'uint32', {}), encodeS7(tag('T', 'uint32', {}), ms), 0), ms);
    }),
  );
});

test('browseAreas: DB ranges, M/I/Q bytes (E and A too), timers and counters; mistakes are named', () => {
  assert.deepEqual(parseBrowseAreas('DB1:0-63, M0-15, E0, A1-2, T0-7, Z3'), [
    { area: 'DB', db: 1, from: 0, to: 63 },
    { area: 'M', db: 0, from: 0, to: 15 },
    { area: 'I', db: 0, from: 0, to: 0 },
    { area: 'Q', db: 0, from: 1, to: 2 },
    { area: 'T', db: 0, from: 0, to: 7 },
    { area: 'C', db: 0, from: 3, to: 3 },
  ]);
  assert.throws(() => parseBrowseAreas('DB1'), /"DB1" is not an area/);
  assert.throws(() => parseBrowseAreas('M9-3'), /ends before it starts/);
  assert.throws(() => parseBrowseAreas('M0-5000'), /more than 4096/);
  assert.throws(() => parseBrowseAreas(' '), /empty/);
});
