/**
 * The SNMP driver's fast path for v1/v2c GETs of `OID` tags: the GetRequest encoded here (each
 * tag's OID encoded once and kept), the GetResponse decoded here straight into the values the
 * driver publishes, without net-snmp's Message, Pdu, varbind objects and OID strings. v3, walks,
 * tables, sets and traps stay on net-snmp. Every value is what net-snmp's decoding followed by
 * `varbindValue` gives for the same bytes (test/edge/acquisition/snmp-ber.test.ts): integers as
 * `asn1-ber` reads them, Counter/Gauge/TimeTicks as unsigned 32-bit, Counter64 as a number (text
 * beyond 2^53), octet strings as text when printable (else hex), IpAddress and OID values dotted.
 */
import type { TagValue } from '../types.js';

/** BER tags of the SNMP types (net-snmp's `ObjectType`). */
export const T = {
  Boolean: 0x01,
  Integer: 0x02,
  BitString: 0x03,
  OctetString: 0x04,
  Null: 0x05,
  OID: 0x06,
  Sequence: 0x30,
  IpAddress: 0x40,
  Counter: 0x41,
  Gauge: 0x42,
  TimeTicks: 0x43,
  Opaque: 0x44,
  Counter64: 0x46,
  NoSuchObject: 0x80,
  NoSuchInstance: 0x81,
  EndOfMibView: 0x82,
  GetRequest: 0xa0,
  GetResponse: 0xa2,
} as const;

/** Names of the varbind error types, as net-snmp's `varbindError` gives them. */
export const VARBIND_ERROR: Record<number, string> = {
  [T.NoSuchObject]: 'NoSuchObject',
  [T.NoSuchInstance]: 'NoSuchInstance',
  [T.EndOfMibView]: 'EndOfMibView',
};

export class BerError extends Error {}

function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const out: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

function tlv(tag: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag, ...lengthBytes(body.length)]), body]);
}

/** A non-negative integer's minimal two's-complement BER content. */
function intContent(n: number): Buffer {
  const bytes: number[] = [];
  let v = n;
  do {
    bytes.unshift(v & 0xff);
    v = Math.floor(v / 256);
  } while (v > 0);
  if (bytes[0]! & 0x80) bytes.unshift(0);
  return Buffer.from(bytes);
}

/** One varbind of a GET (`SEQUENCE { OID, NULL }`) for a dotted OID, as net-snmp's writer encodes it. */
export function encodeGetVarbind(oid: string): Buffer {
  const arcs = oid.split('.').map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isInteger(a) || a < 0 || a > 0xffffffff)) {
    throw new BerError(`invalid OID '${oid}'`);
  }
  const bytes: number[] = [];
  const sub = (v: number) => {
    const parts = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) parts.unshift(0x80 | (x & 0x7f));
    bytes.push(...parts);
  };
  sub(arcs[0]! * 40 + arcs[1]!);
  for (let i = 2; i < arcs.length; i++) sub(arcs[i]!);
  return tlv(T.Sequence, Buffer.concat([tlv(T.OID, Buffer.from(bytes)), Buffer.from([T.Null, 0])]));
}

/** Bytes of a tag and its length. */
const headerSize = (len: number) => (len < 0x80 ? 2 : len < 0x100 ? 3 : len < 0x10000 ? 4 : 5);

function putHeader(buf: Buffer, pos: number, tag: number, len: number): number {
  buf[pos++] = tag;
  if (len < 0x80) buf[pos++] = len;
  else {
    const n = headerSize(len) - 2;
    buf[pos++] = 0x80 | n;
    for (let i = n - 1; i >= 0; i--) buf[pos++] = Math.floor(len / 256 ** i) & 0xff;
  }
  return pos;
}

/**
 * A whole v1/v2c GetRequest message: `version` 0 (v1) or 1 (v2c), the request id (0 to 2^31 - 1),
 * the varbinds encoded above; one buffer, written in place.
 */
export function encodeGetRequest(
  version: number,
  community: Buffer,
  requestId: number,
  varbinds: readonly Buffer[],
): Buffer {
  const id = intContent(requestId);
  let listLen = 0;
  for (const vb of varbinds) listLen += vb.length;
  const pduLen = 2 + id.length + 3 + 3 + headerSize(listLen) + listLen;
  const msgLen = 3 + headerSize(community.length) + community.length + headerSize(pduLen) + pduLen;
  const buf = Buffer.allocUnsafe(headerSize(msgLen) + msgLen);
  let pos = putHeader(buf, 0, T.Sequence, msgLen);
  pos = putHeader(buf, pos, T.Integer, 1);
  buf[pos++] = version;
  pos = putHeader(buf, pos, T.OctetString, community.length);
  pos += community.copy(buf, pos);
  pos = putHeader(buf, pos, T.GetRequest, pduLen);
  pos = putHeader(buf, pos, T.Integer, id.length);
  pos += id.copy(buf, pos);
  for (let k = 0; k < 2; k++) {
    buf[pos++] = T.Integer; // error status and index: 0
    buf[pos++] = 1;
    buf[pos++] = 0;
  }
  pos = putHeader(buf, pos, T.Sequence, listLen);
  for (const vb of varbinds) pos += vb.copy(buf, pos);
  return buf;
}

/** A response's header: enough to find its request before its varbinds are decoded. */
export interface ResponseHead {
  version: number;
  /** The community's bytes: `buf[communityStart, communityEnd)`. */
  communityStart: number;
  communityEnd: number;
  pduType: number;
  requestId: number;
  errorStatus: number;
  errorIndex: number;
  /** Offset of the varbind list's contents, and its end. */
  varbindsStart: number;
  varbindsEnd: number;
}

/** An INTEGER's contents `buf[start, end)` as asn1-ber reads them (signed, any length while safe). */
function intAt(buf: Buffer, start: number, end: number): number {
  if (end === start) throw new BerError('zero-length integer');
  let v = (buf[start]! << 24) >> 24;
  for (let i = start + 1; i < end; i++) v = v * 256 + buf[i]!;
  if (!Number.isSafeInteger(v)) throw new BerError('integer not representable as a JavaScript number');
  return v;
}

/** Cursor over a buffer: `pos` the next byte, `len` the length read by `header`. */
class Cursor {
  pos = 0;
  len = 0;
  constructor(
    readonly buf: Buffer,
    readonly end: number,
  ) {}

  /** Reads a tag and its length (asn1-ber's long form, any number of bytes); returns the tag. */
  header(): number {
    const buf = this.buf;
    if (this.pos + 2 > this.end) throw new BerError('truncated');
    const tag = buf[this.pos++]!;
    let len = buf[this.pos++]!;
    if (len & 0x80) {
      const n = len & 0x7f;
      if (n === 0) throw new BerError('indefinite length not supported');
      if (this.pos + n > this.end) throw new BerError('truncated length');
      len = 0;
      for (let i = 0; i < n; i++) len = len * 256 + buf[this.pos++]!;
    }
    if (len > this.end - this.pos) throw new BerError('truncated contents');
    this.len = len;
    return tag;
  }

  expect(tag: number): void {
    const got = this.header();
    if (got !== tag) throw new BerError(`expected 0x${tag.toString(16)}: got 0x${got.toString(16)}`);
  }

  /** An INTEGER's contents as asn1-ber reads them (signed, any length while safe). */
  int(): number {
    const v = intAt(this.buf, this.pos, this.pos + this.len);
    this.pos += this.len;
    return v;
  }
}

/** Parses a v1/v2c message up to its varbind list. Throws BerError on bytes it cannot read. */
export function readResponseHead(buf: Buffer): ResponseHead {
  const c = new Cursor(buf, buf.length);
  c.expect(T.Sequence);
  c.expect(T.Integer);
  const version = c.int();
  c.expect(T.OctetString);
  const communityStart = c.pos;
  c.pos += c.len;
  const communityEnd = c.pos;
  const pduType = c.header();
  c.expect(T.Integer);
  const requestId = c.int();
  c.expect(T.Integer);
  const errorStatus = c.int();
  c.expect(T.Integer);
  const errorIndex = c.int();
  c.expect(T.Sequence);
  const varbindsStart = c.pos;
  return {
    version,
    communityStart,
    communityEnd,
    pduType,
    requestId,
    errorStatus,
    errorIndex,
    varbindsStart,
    varbindsEnd: varbindsStart + c.len,
  };
}

/** A dotted OID from its contents, as asn1-ber's `readOID`. */
export function oidText(buf: Buffer, start: number, end: number): string {
  const values: number[] = [];
  let value = 0;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    value <<= 7;
    value += byte & 0x7f;
    if ((byte & 0x80) === 0) {
      values.push(value >>> 0);
      value = 0;
    }
  }
  const first = values.shift()!;
  values.unshift(first % 40);
  values.unshift((first / 40) >> 0);
  return values.join('.');
}

/** True when net-snmp's driver regex calls the bytes printable (latin1 9, 10, 13, 0x20-0x7e, 0xa0-0xff). */
function printable(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const b = buf[i]!;
    if (b >= 0x20 ? b > 0x7e && b < 0xa0 : b !== 9 && b !== 10 && b !== 13) return false;
  }
  return true;
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** One value's contents (`buf[start, end)`, type `type`) as `varbindValue` gives it. */
export function valueOf(buf: Buffer, type: number, start: number, end: number): TagValue {
  const len = end - start;
  switch (type) {
    case T.Integer:
    case T.Counter:
    case T.Gauge:
    case T.TimeTicks: {
      const v = intAt(buf, start, end);
      return type === T.Integer ? v : v >>> 0;
    }
    case T.OctetString:
    case T.Opaque:
      return printable(buf, start, end) ? buf.toString('utf8', start, end) : buf.toString('hex', start, end);
    case T.Counter64: {
      if (len <= 6) {
        let n = 0;
        for (let i = start; i < end; i++) n = n * 256 + buf[i]!;
        return n;
      }
      let n = 0n;
      for (let i = start; i < end; i++) n = (n << 8n) | BigInt(buf[i]!);
      return n <= SAFE ? Number(n) : n.toString();
    }
    case T.IpAddress:
      if (len !== 4) throw new BerError(`length ${len} of IP address is not 4`);
      return `${buf[start]}.${buf[start + 1]}.${buf[start + 2]}.${buf[start + 3]}`;
    case T.OID:
      if (len === 0) throw new BerError('truncated OID');
      return oidText(buf, start, end);
    case T.Null:
      return null;
    case T.Boolean:
      if (len === 0) throw new BerError('zero-length boolean');
      return intAt(buf, start, end) !== 0;
    case T.BitString: {
      if (len === 0) return '';
      const ignored = buf[start]!;
      const octets = buf.subarray(start + 1, end);
      const bits = parseInt(octets.toString('hex'), 16)
        .toString(2)
        .padStart(octets.length * 8, '0');
      return bits.substring(0, bits.length - ignored);
    }
    default:
      throw new BerError(`unknown type 0x${type.toString(16)} in response`);
  }
}

/**
 * The varbinds of a response: `onValue(k, type, value, oidStart, oidEnd)` per varbind in order (the
 * OID's contents at `buf[oidStart, oidEnd)`, for the rare caller that needs its text; a varbind
 * error type comes with value null). Returns how many there were.
 */
export function readVarbinds(
  buf: Buffer,
  head: ResponseHead,
  onValue: (k: number, type: number, value: TagValue, oidStart: number, oidEnd: number) => void,
): number {
  const c = new Cursor(buf, head.varbindsEnd);
  c.pos = head.varbindsStart;
  let k = 0;
  while (c.pos < head.varbindsEnd) {
    c.expect(T.Sequence);
    c.expect(T.OID);
    const oidStart = c.pos;
    const oidEnd = (c.pos += c.len);
    if (oidEnd === oidStart) throw new BerError('truncated OID in varbind list');
    const type = c.header();
    const start = c.pos;
    const end = (c.pos += c.len);
    const value = type in VARBIND_ERROR ? null : valueOf(buf, type, start, end);
    onValue(k++, type, value, oidStart, oidEnd);
  }
  return k;
}
