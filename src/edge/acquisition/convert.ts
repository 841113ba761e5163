/**
 * Value conversion per value type: 16-bit register words to values and back (int16...uint64,
 * float32/64 with word and byte order, bool, string, bit addressing), the payload `datatype` of a
 * value type, and the coercion of a written JSON value to a tag's type.
 */
import type { TagValue } from './types.js';

/** `ABCD` big endian; `DCBA` little endian; `BADC` bytes swapped in each word; `CDAB` words swapped. */
export type ByteOrder = 'ABCD' | 'DCBA' | 'BADC' | 'CDAB';

const INT = new Set(['int16', 'int32', 'int64', 'sint', 'byte', 'int8']);
const UINT = new Set(['uint16', 'uint32', 'uint64']);
const FLOAT = new Set(['float32', 'float64']);

/** PLC type names (IEC 61131-3, as the Logix drivers name them) as the generic value types. */
const PLC_TYPES: Record<string, string> = {
  int: 'int16',
  dint: 'int32',
  lint: 'int64',
  usint: 'byte',
  uint: 'uint16',
  udint: 'uint32',
  ulint: 'uint64',
  real: 'float32',
  lreal: 'float64',
};
/** The generic value type of a PLC type name (`dint` → `int32`); other names unchanged. */
export const plainType = (valueType: string): string => PLC_TYPES[valueType] ?? valueType;

/** The payload `datatype` of a value type (wire notes: int64, uint64, float64, string, bool...). */
export function datatypeOf(type: string): string {
  const valueType = plainType(type);
  if (valueType.endsWith('_array')) return 'json';
  if (INT.has(valueType)) return 'int64';
  if (UINT.has(valueType)) return 'uint64';
  if (FLOAT.has(valueType)) return 'float64';
  if (valueType === 'bool' || valueType === 'bit') return 'bool';
  if (valueType === 'json') return 'json';
  return 'string';
}

/** Registers (16-bit words) a value of this type occupies. */
export function wordCount(valueType: string, stringLength = 10): number {
  switch (valueType) {
    case 'int32':
    case 'uint32':
    case 'float32':
      return 2;
    case 'int64':
    case 'uint64':
    case 'float64':
      return 4;
    case 'string':
      return Math.ceil(stringLength / 2);
    default:
      return 1;
  }
}

/** Copies `n` words at `offset` (bytes) of `src` into the big-endian (ABCD) order. */
function ordered(src: Buffer, offset: number, words: number, order: ByteOrder): Buffer {
  const bytes = words * 2;
  const b = Buffer.allocUnsafe(bytes);
  src.copy(b, 0, offset, offset + bytes);
  if (order === 'DCBA') b.reverse();
  else if (order === 'BADC') b.swap16();
  else if (order === 'CDAB') {
    // Words in reverse order, bytes of each word as they are.
    for (let i = 0, j = bytes - 2; i < j; i += 2, j -= 2) {
      const a0 = b[i]!;
      const a1 = b[i + 1]!;
      b[i] = b[j]!;
      b[i + 1] = b[j + 1]!;
      b[j] = a0;
      b[j + 1] = a1;
    }
  }
  return b;
}

/** A 64-bit integer as a number when it is safe, else as its decimal text (JSON has no bigint). */
export function bigToJson(v: bigint): number | string {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(v)
    : v.toString();
}

/**
 * Decodes a value from register bytes (`buf` holds the words big-endian as they came off the
 * wire, `offset` in bytes).
 */
export function decodeWords(
  buf: Buffer,
  offset: number,
  valueType: string,
  order: ByteOrder = 'ABCD',
  opts: { bit?: number; length?: number } = {},
): TagValue {
  if (order === 'ABCD') {
    switch (valueType) {
      case 'int16':
        return buf.readInt16BE(offset);
      case 'uint16':
        return buf.readUInt16BE(offset);
      case 'int32':
        return buf.readInt32BE(offset);
      case 'uint32':
        return buf.readUInt32BE(offset);
      case 'float32':
        return buf.readFloatBE(offset);
      case 'float64':
        return buf.readDoubleBE(offset);
      case 'int64':
        return bigToJson(buf.readBigInt64BE(offset));
      case 'uint64':
        return bigToJson(buf.readBigUInt64BE(offset));
      case 'bit':
      case 'bool':
        return ((buf.readUInt16BE(offset) >> (opts.bit ?? 0)) & 1) === 1;
      default:
        break;
    }
  }
  const words = wordCount(valueType, opts.length);
  if (valueType === 'bit' || valueType === 'bool') {
    // A single word: the byte order swaps its bytes or not.
    const w = order === 'BADC' || order === 'DCBA' ? buf.readUInt16LE(offset) : buf.readUInt16BE(offset);
    return ((w >> (opts.bit ?? 0)) & 1) === 1;
  }
  if (valueType === 'string') {
    const b = Buffer.from(buf.subarray(offset, offset + words * 2));
    if (order === 'BADC' || order === 'DCBA') b.swap16();
    const len = opts.length ?? b.length;
    const text = b.subarray(0, len).toString('latin1');
    const nul = text.indexOf('\0');
    return nul >= 0 ? text.slice(0, nul) : text;
  }
  const b = ordered(buf, offset, words, order);
  return decodeWords(b, 0, valueType, 'ABCD', opts);
}

/** Encodes a value to the words to write (the inverse of `decodeWords`; not for `bit`). */
export function encodeWords(
  value: unknown,
  valueType: string,
  order: ByteOrder = 'ABCD',
  opts: { length?: number } = {},
): number[] {
  const words = wordCount(valueType, opts.length);
  const b = Buffer.alloc(words * 2);
  if (valueType === 'string') {
    Buffer.from(String(value), 'latin1').copy(b, 0, 0, Math.min(b.length, opts.length ?? b.length));
    if (order === 'BADC' || order === 'DCBA') b.swap16();
  } else {
    const v = coerce(value, valueType);
    switch (valueType) {
      case 'int16':
        b.writeInt16BE(v as number);
        break;
      case 'uint16':
        b.writeUInt16BE(v as number);
        break;
      case 'int32':
        b.writeInt32BE(v as number);
        break;
      case 'uint32':
        b.writeUInt32BE(v as number);
        break;
      case 'float32':
        b.writeFloatBE(v as number);
        break;
      case 'float64':
        b.writeDoubleBE(v as number);
        break;
      case 'int64':
        b.writeBigInt64BE(BigInt(v as number | string));
        break;
      case 'uint64':
        b.writeBigUInt64BE(BigInt(v as number | string));
        break;
      default:
        throw new TypeError(`value type "${valueType}" cannot be written as registers`);
    }
    if (order !== 'ABCD') {
      // The orders are their own inverses: apply the same permutation.
      const back = ordered(b, 0, words, order);
      back.copy(b);
    }
  }
  const out: number[] = [];
  for (let i = 0; i < words; i++) out.push(b.readUInt16BE(i * 2));
  return out;
}

const RANGES: Record<string, [number, number]> = {
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  sint: [-128, 127],
  byte: [0, 255],
};

/**
 * A written value (from JSON) as the tag's type; throws a TypeError naming the problem when the
 * value does not fit.
 */
export function coerce(value: unknown, type: string): TagValue {
  const valueType = plainType(type);
  if (valueType.endsWith('_array')) {
    const element = valueType.slice(0, -'_array'.length);
    if (!Array.isArray(value))
      throw new TypeError(`${JSON.stringify(value)} is not an array (value type ${type})`);
    return value.map((v) => coerce(v, element));
  }
  if (valueType === 'string') return typeof value === 'string' ? value : JSON.stringify(value);
  if (valueType === 'json') return value as TagValue;
  if (valueType === 'bool' || valueType === 'bit') {
    if (typeof value === 'boolean') return value;
    if (value === 1 || value === 0) return value === 1;
    if (value === 'true' || value === 'false') return value === 'true';
    if (value === '1' || value === '0') return value === '1';
    throw new TypeError(`${JSON.stringify(value)} is not a bool (true, false, 1 or 0)`);
  }
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'boolean') n = value ? 1 : 0;
  else if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    n = Number(value);
  else throw new TypeError(`${JSON.stringify(value)} is not a number`);
  if (!Number.isFinite(n)) throw new TypeError(`${JSON.stringify(value)} is not a finite number`);
  if (FLOAT.has(valueType)) return n;
  if (!Number.isInteger(n)) throw new TypeError(`${n} is not an integer (value type ${valueType})`);
  const range = RANGES[valueType];
  if (range && (n < range[0] || n > range[1]))
    throw new TypeError(`${n} is out of range for ${valueType} (${range[0]} to ${range[1]})`);
  if (valueType === 'uint64' && n < 0) throw new TypeError(`${n} is out of range for uint64`);
  return n;
}

/** A generated or computed number as the tag's type (integers rounded and clamped). */
export function numberAs(n: number, valueType: string): TagValue {
  if (valueType === 'bool' || valueType === 'bit') return n > 0;
  if (valueType === 'string') return String(n);
  if (FLOAT.has(valueType)) return valueType === 'float32' ? Math.fround(n) : n;
  const r = Math.round(n);
  const range = RANGES[valueType];
  if (range) return Math.min(Math.max(r, range[0]), range[1]);
  if (valueType === 'uint64') return Math.max(r, 0);
  return r;
}
