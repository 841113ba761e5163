/**
 * The MQTT connector's QoS 0 writer: the bytes it hands the socket are exactly mqtt-packet's
 * PUBLISH encoding (MQTT 3.1.1 and 5, retained or not, small and slab-sized payloads, multi-byte
 * topics), in order, and a packet above the broker's Maximum Packet Size is not written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import mqttPacket from 'mqtt-packet';
import { QoS0Writer } from '../../../src/edge/integrations/connectors/mqtt-direct.js';

function collect(stream: PassThrough): () => Buffer {
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return () => Buffer.concat(chunks);
}

for (const protocolVersion of [4, 5] as const) {
  for (const retain of [false, true]) {
    test(`MQTT ${protocolVersion === 5 ? '5' : '3.1.1'}${retain ? ', retained' : ''}: the bytes of mqtt-packet's PUBLISH, in order`, async () => {
      const stream = new PassThrough();
      const read = collect(stream);
      const w = new QoS0Writer(stream, { retain, protocolVersion });
      const sizes = [0, 1, 127, 128, 16_383, 16_384, 40_000, 70_000, 5];
      const expected: Buffer[] = [];
      for (const [i, size] of sizes.entries()) {
        const topic = i % 2 === 0 ? 'plant/line-1/température' : `plant/${i}`;
        const payload = Buffer.alloc(size, i + 1);
        assert.equal(w.write(topic, payload), true);
        const packet = {
          cmd: 'publish' as const,
          topic,
          payload,
          qos: 0 as const,
          dup: false,
          retain,
          ...(protocolVersion === 5 ? { properties: {} } : {}),
        };
        expected.push(mqttPacket.generate(packet, { protocolVersion }));
      }
      w.flush();
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(read(), Buffer.concat(expected));
    });
  }
}

test("a packet above the broker's Maximum Packet Size is refused and nothing is written", async () => {
  const stream = new PassThrough();
  const read = collect(stream);
  const w = new QoS0Writer(stream, { retain: false, protocolVersion: 5, maxPacketBytes: 100 });
  assert.equal(w.write('t', Buffer.alloc(200)), false);
  assert.equal(w.write('t', Buffer.alloc(10)), true);
  w.flush();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(
    read(),
    mqttPacket.generate(
      {
        cmd: 'publish',
        topic: 't',
        payload: Buffer.alloc(10),
        qos: 0,
        dup: false,
        retain: false,
        properties: {},
      },
      { protocolVersion: 5 },
    ),
  );
});
