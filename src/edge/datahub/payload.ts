/**
 * Payload encoding at the boundary of the process: in-process subscribers get the published value
 * itself; a NATS connection (gateway client or external cluster) gets bytes: Buffers and byte
 * arrays as they are, strings as UTF-8, `undefined` and `null` as nothing, anything else as JSON.
 */
export const EMPTY = Buffer.alloc(0);

export function encodePayload(data: unknown): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (data === undefined || data === null) return EMPTY;
  return Buffer.from(JSON.stringify(data), 'utf8');
}

/** Byte length when the value already is bytes or text; 0 for objects (not serialised in process). */
export function knownLength(data: unknown): number {
  if (data instanceof Uint8Array) return data.byteLength;
  if (typeof data === 'string') return data.length;
  return 0;
}

/** NATS headers (`NATS/1.0` block) as a map, and back. Names keep their case; values repeat. */
export type HeaderMap = Record<string, string | string[]>;

export function encodeHeaders(headers: HeaderMap, status?: string): Buffer {
  let text = status ? `NATS/1.0 ${status}\r\n` : 'NATS/1.0\r\n';
  for (const [name, value] of Object.entries(headers)) {
    for (const v of Array.isArray(value) ? value : [value]) text += `${name}: ${v}\r\n`;
  }
  return Buffer.from(`${text}\r\n`, 'utf8');
}

export interface DecodedHeaders {
  /** Status code of the first line (`503` for no responders), if any. */
  status: string | undefined;
  headers: HeaderMap;
}

export function decodeHeaders(raw: Uint8Array): DecodedHeaders {
  const lines = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8').split('\r\n');
  const first = lines[0] ?? '';
  const status = first.length > 9 ? first.slice(9).trim() || undefined : undefined;
  const headers: HeaderMap = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    const prev = headers[name];
    if (prev === undefined) headers[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else headers[name] = [prev, value];
  }
  return { status: status?.split(' ')[0], headers };
}
