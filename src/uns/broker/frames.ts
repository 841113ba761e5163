/**
 * Packets the broker writes as whole buffers (one write each, not mqtt-packet's several small
 * writes): a QoS 0 PUBLISH without properties (retained messages sent on SUBSCRIBE) and a plain
 * PUBACK (the acknowledgements of a retained commit). Anything else is mqtt-packet's `generate`.
 */
import { createRequire } from 'node:module';
import type { Duplex } from 'node:stream';
import type { WirePacket } from './wire.js';

const require = createRequire(import.meta.url);
const mqttPacket = require('mqtt-packet') as {
  generate: (packet: WirePacket, opts?: { protocolVersion?: number }) => Buffer;
};

/** mqtt-packet's options per protocol level, made once. */
export const VERSION_OPTS: Record<number, { protocolVersion: number }> = {
  3: Object.freeze({ protocolVersion: 3 }),
  4: Object.freeze({ protocolVersion: 4 }),
  5: Object.freeze({ protocolVersion: 5 }),
};

/**
 * A PUBLISH as one buffer. A QoS 0 message without properties (a retained message sent on
 * SUBSCRIBE, mostly) is laid out here: fixed header, topic, an empty property length (MQTT 5),
 * payload; anything else is mqtt-packet's `generate`.
 */
export function publishFrame(packet: WirePacket, opts: { protocolVersion?: number } | undefined): Buffer {
  const payload = packet.payload as unknown;
  const topic = packet.topic as unknown;
  const props = packet.properties as object | undefined;
  if (
    (packet.qos ?? 0) !== 0 ||
    packet.dup === true ||
    typeof topic !== 'string' ||
    topic.length === 0 ||
    !Buffer.isBuffer(payload) ||
    (props !== undefined && props !== null && Object.keys(props).length > 0)
  )
    return mqttPacket.generate(packet, opts);
  const v5 = opts?.protocolVersion === 5;
  const topicBytes = Buffer.byteLength(topic);
  const remaining = 2 + topicBytes + (v5 ? 1 : 0) + payload.length;
  if (topicBytes > 0xffff || remaining > 268_435_455) return mqttPacket.generate(packet, opts);
  let lengthBytes = 1;
  for (let n = remaining; n >= 128; n = Math.floor(n / 128)) lengthBytes++;
  const buf = Buffer.allocUnsafe(1 + lengthBytes + remaining);
  buf[0] = packet.retain === true ? 0x31 : 0x30; // PUBLISH, QoS 0, retain flag
  let o = 1;
  let n = remaining;
  do {
    const digit = n % 128;
    n = Math.floor(n / 128);
    buf[o++] = n > 0 ? digit | 128 : digit;
  } while (n > 0);
  buf.writeUInt16BE(topicBytes, o);
  o += 2;
  o += buf.write(topic, o, 'utf8');
  if (v5) buf[o++] = 0;
  payload.copy(buf, o);
  return buf;
}

/** A PUBACK/PUBREC as a buffer: a plain success is its four bytes, anything else mqtt-packet's. */
export function ackFrame(packet: WirePacket, opts: { protocolVersion?: number } | undefined): Buffer {
  const id = packet.messageId as unknown;
  const props = packet.properties as object | undefined;
  if (
    packet.cmd !== 'puback' ||
    typeof id !== 'number' ||
    (packet.reasonCode ?? 0) !== 0 ||
    (props !== undefined && props !== null && Object.keys(props).length > 0)
  )
    return mqttPacket.generate(packet, opts);
  // PUBACK, remaining length 2, the message id (MQTT 5 leaves out a 0x00 reason without properties).
  return Buffer.from([0x40, 0x02, (id >> 8) & 0xff, id & 0xff]);
}

/**
 * Puts what was written to a connection so far on the wire now, and keeps it corked as it was
 * (the writes gathered per turn by `coalesceWrites` go on gathering): the last uncork writes the
 * gathered chunks (aedes-support.ts), the socket sends them, and the corks are put back.
 */
export function writeNow(stream: Duplex): void {
  const corked = stream.writableCorked;
  for (let i = 0; i < corked; i++) stream.uncork();
  for (let i = 0; i < corked; i++) stream.cork();
}
