/** The value messages' bytes for NATS connections: exactly JSON of the payload the engine publishes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { devicePart, ReadPayload, ValuePayloadEncoder } from '../../../src/edge/acquisition/payload.js';
import type { TagSpec, TagValue } from '../../../src/edge/acquisition/types.js';

function tagOf(t: {
  id: string;
  deviceId: string;
  deviceName: string;
  tagName: string;
  description: string;
  metadata: Record<string, unknown>;
}): TagSpec {
  return {
    ...t,
    register: 'DB',
    valueType: 'int16',
    publishCoV: false,
    formula: null,
    intervalMs: 1000,
    props: {},
    rawSubject: `devicehub.raw.${t.deviceName}.${t.tagName}`,
    aliasSubject: null,
    valueSubject: undefined,
    writeResponseSubject: undefined,
  };
}

/** The payload as the engine builds it (device-runner.ts), field order included. */
const payloadOf = (tag: TagSpec, datatype: string, timestamp: number, value: TagValue) => ({
  success: true as const,
  datatype,
  timestamp,
  registerId: tag.id,
  value,
  deviceID: tag.deviceId,
  deviceName: tag.deviceName,
  tagName: tag.tagName,
  description: tag.description,
  metadata: tag.metadata,
});

const json = fc.jsonValue() as fc.Arbitrary<TagValue>;
const value: fc.Arbitrary<TagValue> = fc.oneof(
  fc.integer(),
  fc.double(), // NaN and ±Infinity included: JSON makes them null
  fc.boolean(),
  fc.string(),
  fc.constant(null),
  json,
);
const text = fc.string({ unit: 'binary' }); // any code points, quotes and controls included

test('the bytes are JSON of the payload, for any tag and value', () => {
  fc.assert(
    fc.property(
      fc.record({
        id: fc.uuid(),
        deviceId: fc.uuid(),
        deviceName: text,
        tagName: text,
        description: text,
        metadata: fc.dictionary(fc.string(), fc.jsonValue()),
      }),
      fc.constantFrom('int16', 'float64', 'string', 'bool', 'json'),
      fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), fc.double()),
      fc.array(value, { minLength: 1, maxLength: 4 }),
      (t, datatype, timestamp, values) => {
        const tag = tagOf(t);
        const enc = new ValuePayloadEncoder(tag, datatype, devicePart(tag.deviceId, tag.deviceName));
        // The same encoder, value after value (its parts are made on the first).
        for (const v of values) {
          const payload = payloadOf(tag, datatype, timestamp, v);
          assert.equal(enc.encode(payload).toString('utf8'), JSON.stringify(payload));
        }
      },
    ),
  );
});

test('another data type than the encoder was made for (a formula giving a fraction) is still JSON', () => {
  const tag = tagOf({ id: 'a', deviceId: 'b', deviceName: 'd', tagName: 't', description: '', metadata: {} });
  const enc = new ValuePayloadEncoder(tag, 'int16', devicePart('b', 'd'));
  const payload = payloadOf(tag, 'float64', 1, 2.5);
  assert.equal(enc.encode(payload).toString('utf8'), JSON.stringify(payload));
  const failure = { ...payloadOf(tag, 'int16', 1, null), success: false, error: 'x' };
  assert.equal(enc.encode(failure).toString('utf8'), JSON.stringify(failure));
});

test("ReadPayload makes the engine's payload: a plain object, the same fields in the same order", () => {
  const tag = tagOf({
    id: 'a1',
    deviceId: 'd1',
    deviceName: 'plc',
    tagName: 'hr1',
    description: 'x',
    metadata: { unit: 'C' },
  });
  const made = new ReadPayload('uint16', 1700000000123, tag, 42);
  const literal = payloadOf(tag, 'uint16', 1700000000123, 42);
  assert.equal(Object.getPrototypeOf(made), Object.prototype);
  assert.deepStrictEqual(made, literal);
  assert.equal(JSON.stringify(made), JSON.stringify(literal));
  const enc = new ValuePayloadEncoder(tag, 'uint16', devicePart(tag.deviceId, tag.deviceName));
  assert.equal(enc.text(made), JSON.stringify(literal));
});
