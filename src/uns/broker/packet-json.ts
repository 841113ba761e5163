/** A packet of the SQL persistence as a JSON text and back (binary payloads in base64). */
import type { Packet } from './async-persistence.js';

export function encode(packet: Packet): string {
  const payload = packet.payload;
  if (!Buffer.isBuffer(payload)) {
    const { payload: text, ...rest } = packet;
    return JSON.stringify({ ...rest, payload: text });
  }
  // The same text as JSON.stringify({ ...rest, payload: base64, b64: true }), built field by field:
  // it ran for every retained publish, and the two copies of the packet cost more than the text.
  let s = '{';
  for (const key in packet) {
    if (key === 'payload') continue;
    const v = (packet as Record<string, unknown>)[key];
    switch (typeof v) {
      case 'string':
        s += `${quoted(key)}${JSON.stringify(v)},`;
        break;
      case 'number':
        s += `${quoted(key)}${Number.isFinite(v) ? String(v) : 'null'},`;
        break;
      case 'boolean':
        s += `${quoted(key)}${v ? 'true' : 'false'},`;
        break;
      case 'undefined':
      case 'function':
      case 'symbol':
        break;
      default:
        s += `${quoted(key)}${JSON.stringify(v)},`;
    }
  }
  return `${s}"payload":"${payload.toString('base64')}","b64":true}`;
}

/** A packet's keys as JSON (`"key":`), made once each: a packet has the same few keys. */
const QUOTED = new Map<string, string>();
const QUOTED_MAX = 64;

function quoted(key: string): string {
  let q = QUOTED.get(key);
  if (q === undefined) {
    q = `${JSON.stringify(key)}:`;
    if (QUOTED.size < QUOTED_MAX) QUOTED.set(key, q);
  }
  return q;
}

export function decode(text: string): Packet {
  const { b64, payload, ...rest } = JSON.parse(text, reviveBuffers) as Packet & { b64?: boolean };
  return { ...rest, payload: b64 ? Buffer.from(payload as string, 'base64') : payload } as Packet;
}

/**
 * Buffers inside a packet (MQTT 5 correlation data, binary user data in properties) are written
 * by JSON.stringify as `{ type: 'Buffer', data: [...] }`: read back as Buffers.
 */
function reviveBuffers(_key: string, value: unknown): unknown {
  const v = value as { type?: unknown; data?: unknown } | null;
  if (v && typeof v === 'object' && v.type === 'Buffer' && Array.isArray(v.data))
    return Buffer.from(v.data as number[]);
  return value;
}
