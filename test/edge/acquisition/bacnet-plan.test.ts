/**
 * The BACnet driver's read plan: every property due in exactly one request, each request's answer
 * (encoded by @bacnet-js/client's own encoder, values or errors) within the budget, the
 * `maxPropertiesPerRequest` cap, halves of a split request covering it, and the Abort reasons
 * that mean "too long".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import {
  PRESENT_VALUE,
  apduCode,
  planBatches,
  splitBatch,
  tooLong,
  valueBytes,
  type Batch,
  type Ref,
} from '../../../src/edge/acquisition/drivers/bacnet-plan.js';
import { InvokeTable } from '../../../src/edge/acquisition/drivers/bacnet-socket.js';

const RPM = (
  createRequire(import.meta.url)('@bacnet-js/client/dist/lib/services/ReadPropertyMultiple.js') as {
    default: { encodeAcknowledge(buffer: { buffer: Buffer; offset: number }, values: unknown[]): void };
  }
).default;

/** The answer's service data for a batch: REAL values, or errors where `error` says. */
function answerBytes(b: Batch, error: (ref: Ref) => boolean): number {
  const values = b.spec.map((o) => ({
    objectId: o.objectId,
    values: o.properties.map((p) => ({
      property: { id: p.id, index: p.index },
      value: error({ object: o.objectId, property: p.id })
        ? [{ value: { type: 'BacnetError', errorClass: 2, errorCode: 32 } }]
        : [{ type: 4, value: 12.5 }],
    })),
  }));
  const scratch = { buffer: Buffer.alloc(65536), offset: 0 };
  RPM.encodeAcknowledge(scratch, values);
  return scratch.offset;
}

const arbRefs = fc.array(
  fc.record({
    type: fc.constantFrom(0, 1, 2),
    instance: fc.integer({ min: 0, max: 4_194_302 }),
    property: fc.constantFrom(PRESENT_VALUE, 103, 111),
    error: fc.boolean(),
  }),
  { minLength: 1, maxLength: 400 },
);

test('every property in one request; answers (values or errors) fit the budget; the cap holds', () => {
  fc.assert(
    fc.property(
      arbRefs,
      fc.constantFrom(206, 480, 1024, 1476),
      fc.constantFrom(0, 1, 7, 40),
      (list, apdu, cap) => {
        const refs = list.map((r, i) => {
          const ref = { object: { type: r.type, instance: r.instance }, property: r.property };
          // Present values are REALs here; other properties are estimated at 32 bytes.
          return { i, ref, bytes: valueBytes(ref, 'float32', 0) };
        });
        const errors = new Set(list.flatMap((r, i) => (r.error ? [i] : [])));
        const budget = apdu - 8;
        const batches = planBatches({ refs, budget, maxProperties: cap });
        const seen = new Map<number, number>();
        for (const b of batches) {
          if (cap > 0) assert.ok(b.size <= cap, `${b.size} > cap ${cap}`);
          const erroneous = (ref: Ref) =>
            refs.some(
              (r) =>
                errors.has(r.i) &&
                r.ref.object.type === ref.object.type &&
                r.ref.object.instance === ref.object.instance &&
                r.ref.property === ref.property,
            );
          const bytes = answerBytes(b, erroneous);
          assert.ok(bytes <= budget || b.size === 1, `answer ${bytes} > ${budget}`);
          for (const o of b.objects)
            for (const p of o.props) for (const i of p.tags) seen.set(i, (seen.get(i) ?? 0) + 1);
        }
        assert.equal(seen.size, refs.length);
        assert.ok([...seen.values()].every((n) => n === 1));
      },
    ),
    { numRuns: 200 },
  );
});

test('REAL present values: about 90 objects a 1476-byte answer, 26 at 480; the same object twice is one property', () => {
  const refs = Array.from({ length: 1000 }, (_, i) => ({
    i,
    ref: { object: { type: 2, instance: i }, property: PRESENT_VALUE },
    bytes: 5,
  }));
  const big = planBatches({ refs, budget: 1476 - 8, maxProperties: 0 });
  assert.ok(big[0]!.size >= 80 && big[0]!.size <= 92, `per request at 1476: ${big[0]!.size}`);
  const small = planBatches({ refs, budget: 480 - 8, maxProperties: 0 });
  assert.ok(small[0]!.size >= 25 && small[0]!.size <= 29, `per request at 480: ${small[0]!.size}`);
  const twice = planBatches({ refs: [refs[0]!, { ...refs[0]!, i: 1 }], budget: 472, maxProperties: 0 });
  assert.equal(twice.length, 1);
  assert.deepEqual(twice[0]!.objects[0]!.props[0]!.tags, [0, 1]);
});

test('a split request: two halves with every property once, in order', () => {
  const refs = Array.from({ length: 9 }, (_, i) => ({
    i,
    ref: { object: { type: 0, instance: i >> 1 }, property: i % 2 ? 77 : PRESENT_VALUE },
    bytes: 5,
  }));
  const [b] = planBatches({ refs, budget: 1468, maxProperties: 0 });
  const [h1, h2] = splitBatch(b!);
  assert.equal(h1.size + h2.size, 9);
  const flat = (x: Batch) => x.spec.flatMap((o) => o.properties.map((p) => `${o.objectId.instance}:${p.id}`));
  assert.deepEqual([...flat(h1), ...flat(h2)], flat(b!));
});

test('too long: Abort reasons 1, 4, 11; others are not', () => {
  assert.equal(tooLong('BacnetAbort - Reason:4'), true);
  assert.equal(tooLong('BacnetAbort - Reason:1'), true);
  assert.equal(tooLong('BacnetAbort - Reason:11'), true);
  assert.equal(tooLong('BacnetAbort - Reason:9'), false);
  assert.equal(tooLong('BacnetError - Class:2 - Code:31'), false);
  assert.equal(apduCode(1476), 5);
  assert.equal(apduCode(480), 3);
  assert.equal(apduCode(500), 3);
});

test('invoke table: an id used again within the timeout is answered (the library lost it); a silent one times out', async () => {
  const t = new InvokeTable(300);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const first = t.add(7);
  assert.equal(t.resolve(7, null, 'a'), true);
  assert.equal(await first, 'a');
  await sleep(200);
  // The counter came round: id 7 again, answered after the first request's expiry time.
  const second = t.add(7);
  await sleep(150);
  assert.equal(t.resolve(7, null, 'b'), true);
  assert.equal(await second, 'b');
  const silent = assert.rejects(t.add(7), /ERR_TIMEOUT/);
  await silent;
  const refused = t.add(8);
  assert.equal(t.resolve(8, new Error('BacnetAbort - Reason:4')), true);
  await assert.rejects(refused, /Reason:4/);
  assert.equal(t.resolve(99, null, 'x'), false);
  const closing = assert.rejects(t.add(9), /ERR_TIMEOUT/);
  t.clear(true);
  await closing;
});
