/**
 * The broker's hand-laid packets and rows (issue 34): a QoS 0 PUBLISH frame and a plain PUBACK are
 * what mqtt-packet makes of them (or parses back to the same packet), the retained row's text is
 * JSON.stringify's, and a filter test matches as MQTT does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { ackFrame, publishFrame } from '../../src/uns/broker/frames.js';
import { decode, encode } from '../../src/uns/broker/packet-json.js';
import { filterTest } from '../../src/uns/broker/aedes-support.js';
import { topicMatches } from '../../src/uns/accounts/index.js';

const require = createRequire(import.meta.url);
const mqttPacket = require('mqtt-packet') as {
  generate: (p: object, o?: object) => Buffer;
  parser: (o?: object) => {
    on: (e: string, f: (p: Record<string, unknown>) => void) => void;
    parse: (b: Buffer) => number;
  };
};

function parse(buf: Buffer, protocolVersion: number): Record<string, unknown>[] {
  const parser = mqttPacket.parser({ protocolVersion });
  const out: Record<string, unknown>[] = [];
  parser.on('packet', (p) => out.push(p));
  parser.parse(buf);
  return out;
}

test('a QoS 0 PUBLISH frame is the bytes mqtt-packet generates, for MQTT 3.1.1 and 5', () => {
  const payloads = [Buffer.alloc(0), Buffer.alloc(64, 7), Buffer.alloc(200, 1), Buffer.alloc(20_000, 2)];
  for (const protocolVersion of [4, 5]) {
    for (const topic of ['a', 'plant/line 1/ü/temp', 'x'.repeat(300)]) {
      for (const payload of payloads) {
        for (const retain of [true, false]) {
          const packet = { cmd: 'publish', topic, payload, qos: 0, retain, dup: false };
          const mine = publishFrame(packet, { protocolVersion });
          assert.deepEqual(
            mine,
            mqttPacket.generate(packet, { protocolVersion }),
            `${topic} ${payload.length}`,
          );
        }
      }
    }
  }
  // With properties (or at QoS 1) it is mqtt-packet's own.
  const withProps = {
    cmd: 'publish',
    topic: 't',
    payload: Buffer.from('p'),
    qos: 0,
    retain: true,
    dup: false,
    properties: { contentType: 'text/plain' },
  };
  assert.deepEqual(parse(publishFrame(withProps, { protocolVersion: 5 }), 5)[0]!.properties, {
    contentType: 'text/plain',
  });
  const q1 = {
    cmd: 'publish',
    topic: 't',
    payload: Buffer.from('p'),
    qos: 1,
    messageId: 9,
    retain: true,
    dup: false,
  };
  assert.deepEqual(publishFrame(q1, { protocolVersion: 5 }), mqttPacket.generate(q1, { protocolVersion: 5 }));
});

test("a plain PUBACK is four bytes read back as the same PUBACK; one with a reason code is mqtt-packet's", () => {
  for (const protocolVersion of [4, 5]) {
    for (const messageId of [1, 255, 256, 65535]) {
      const frame = ackFrame({ cmd: 'puback', messageId }, { protocolVersion });
      assert.equal(frame.length, 4);
      const [p] = parse(frame, protocolVersion);
      assert.equal(p!.cmd, 'puback');
      assert.equal(p!.messageId, messageId);
    }
  }
  const refused = { cmd: 'puback', messageId: 3, reasonCode: 0x87 };
  assert.deepEqual(
    ackFrame(refused, { protocolVersion: 5 }),
    mqttPacket.generate(refused, { protocolVersion: 5 }),
  );
});

test('a retained row is the text JSON.stringify made of it, and reads back', () => {
  const old = (p: Record<string, unknown>) => {
    const { payload, ...rest } = p;
    return JSON.stringify({ ...rest, payload: (payload as Buffer).toString('base64'), b64: true });
  };
  const packets: Record<string, unknown>[] = [
    {
      cmd: 'publish',
      brokerId: 'b-1',
      brokerCounter: 42,
      topic: 'a/"b"\\c',
      payload: Buffer.from([0, 1, 255]),
      qos: 1,
      retain: true,
      dup: false,
      messageId: 7,
    },
    {
      cmd: 'publish',
      topic: 't',
      payload: Buffer.alloc(0),
      qos: 0,
      retain: true,
      messageId: undefined,
      n: Number.NaN,
      nl: null,
    },
    {
      cmd: 'publish',
      topic: 't',
      payload: Buffer.from('x'),
      qos: 1,
      retain: true,
      properties: { userProperties: { a: 'b' }, correlationData: Buffer.from([1, 2]) },
    },
  ];
  for (const p of packets) {
    assert.equal(encode(p as never), old(p));
    assert.deepEqual(decode(encode(p as never)), decode(old(p)));
  }
});

test('a filter test matches as MQTT matching does', () => {
  const topics = ['a', 'a/b', 'a/b/c', 'ab/c', 'b/a', '$SYS/x', 'a//b', ''];
  for (const filter of ['#', 'a/#', 'a/b/#', 'a/+', '+/b', 'a', 'a/b', '+', '+/#', '$SYS/#', 'a//#']) {
    const test = filterTest(filter);
    for (const topic of topics.filter((t) => t !== ''))
      assert.equal(test(topic), topicMatches(filter, topic), `${filter} ${topic}`);
  }
});
