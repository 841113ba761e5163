/** A packet of the SQL persistence as a JSON text and back (binary payloads in base64). */
import type { Packet } from './async-persistence.js';

export function encode(packet: Packet): string {
  const { payload, ...rest } = packet;
  return Buffer.isBuffer(payload)
    ? JSON.stringify({ ...rest, payload: payload.toString('base64'), b64: true })
    : JSON.stringify({ ...rest, payload });
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
