/**
 * The S7 driver's pure parts: where a tag lives (area, data block, byte offset, size), the read
 * plan (tags at neighbouring addresses of one area become one item; items are packed into as few
 * read requests as the negotiated PDU allows), and the S7 encodings of each value type (big
 * endian integers and reals, STRING with its two-byte header, timers and counters in BCD).
 */
import { coalesce } from '../blocks.js';
import type { TagSpec, TagValue } from '../types.js';

/** S7 area codes on the wire (and in snap7's `S7Area*` constants). */
export const AREA = { I: 0x81, Q: 0x82, M: 0x83, DB: 0x84, C: 0x1c, T: 0x1d } as const;
export type AreaName = keyof typeof AREA;
/** snap7's word lengths: bytes, and the 2-byte timer and counter cells. */
export const WL = { byte: 0x02, counter: 0x1c, timer: 0x1d } as const;

/** Bytes of the S7 read request header (10) and its parameter head (2); one item's address is 12. */
const REQ_HEAD = 12;
const REQ_ITEM = 12;
/** Bytes of the read answer header (12 with the error word) and its parameter head (2); 4 per item. */
const RES_HEAD = 14;
const RES_ITEM = 4;
/** snap7 (like the CPUs) takes at most 20 items per request. */
export const MAX_ITEMS = 20;
/** Unused bytes read through to join two neighbouring tags into one item. */
const MAX_GAP = 16;
/** The longest run read in one call (split into PDU-sized requests by the client). */
const MAX_LARGE = 16384;

/** Requests a run of `bytes` read whole takes (the client fills each answer). */
export const largeRequests = (bytes: number, pdu: number) => Math.ceil(bytes / (pdu - 18));

export interface TagAddress {
  area: AreaName;
  db: number;
  /** Byte offset (I, Q, M, DB) or the timer or counter number (T, C). */
  start: number;
  /** Bytes (I, Q, M, DB) or cells (T, C). */
  count: number;
}

export const isCell = (area: AreaName) => area === 'T' || area === 'C';

/** Bytes a value of this type takes in a byte area (`length`: a STRING's declared characters). */
export function byteSize(valueType: string, length: number): number {
  switch (valueType) {
    case 'bool':
    case 'bit':
    case 'byte':
    case 'sint':
      return 1;
    case 'int16':
    case 'uint16':
      return 2;
    case 'int32':
    case 'uint32':
    case 'float32':
      return 4;
    case 'string':
      return length + 2;
    default:
      throw new Error(`value type ${valueType} is not an S7 type`);
  }
}

export function addressOf(tag: TagSpec): TagAddress {
  const area = tag.register as AreaName;
  if (!(area in AREA)) throw new Error(`register ${tag.register} is not an S7 area (DB, M, I, Q, T, C)`);
  const start = Number(tag.props.address ?? 0);
  const db = area === 'DB' ? Number(tag.props.dbNumber ?? 1) : 0;
  const count = isCell(area) ? 1 : byteSize(tag.valueType, Number(tag.props.length ?? 10));
  return { area, db, start, count };
}

/** One item of a read request: a run of bytes (or cells) of one area, and the tags it serves. */
export interface ReadItem {
  area: AreaName;
  db: number;
  start: number;
  count: number;
  /** Indexes into the planned tags. */
  tags: number[];
}

/** Bytes an item's data takes in an answer. */
export const itemBytes = (it: { area: AreaName; count: number }) =>
  isCell(it.area) ? it.count * 2 : it.count;

export interface ReadPlan {
  addresses: TagAddress[];
  /** Requests of several items (one ReadMultiVars each). */
  requests: ReadItem[][];
  /** Runs larger than one PDU: each read in one call (the client splits it into full PDUs). */
  large: ReadItem[];
  /** Tags whose address is wrong, with the reason. */
  invalid: Map<number, string>;
}

/**
 * The read plan for `tags` at PDU size `pdu`: per area, neighbouring tags coalesced into runs;
 * runs larger than one PDU's payload are read whole (full PDUs), the others are items packed,
 * largest first, into the first request that still has room in the request and in its answer
 * (first-fit decreasing).
 */
export function planReads(tags: readonly TagSpec[], pdu: number): ReadPlan {
  const addresses: TagAddress[] = new Array(tags.length);
  const invalid = new Map<number, string>();
  const byArea = new Map<string, number[]>();
  tags.forEach((tag, i) => {
    try {
      const a = addressOf(tag);
      addresses[i] = a;
      const key = `${a.area}:${a.db}`;
      const list = byArea.get(key) ?? [];
      list.push(i);
      byArea.set(key, list);
    } catch (err) {
      invalid.set(i, err instanceof Error ? err.message : String(err));
      addresses[i] = { area: 'M', db: 0, start: 0, count: 1 };
    }
  });
  // The largest payload one item can have in an answer of one item.
  const maxPayload = pdu - RES_HEAD - RES_ITEM;
  const items: ReadItem[] = [];
  const large: ReadItem[] = [];
  for (const list of byArea.values()) {
    const first = addresses[list[0]!]!;
    const cell = isCell(first.area);
    // Runs longer than one PDU's payload are read whole: the client splits them into full PDUs
    // itself (as many requests as items of one PDU each would take, in one call to the library).
    const max = cell ? Math.floor(MAX_LARGE / 2) : MAX_LARGE;
    for (const b of coalesce(list, (i) => addresses[i]!, max, cell ? 0 : MAX_GAP)) {
      const item = { area: first.area, db: first.db, start: b.start, count: b.count, tags: b.items };
      (itemBytes(item) > maxPayload ? large : items).push(item);
    }
  }
  items.sort((a, b) => itemBytes(b) - itemBytes(a));
  const requests: Array<{ items: ReadItem[]; answer: number }> = [];
  const maxItems = Math.min(MAX_ITEMS, Math.floor((pdu - REQ_HEAD) / REQ_ITEM));
  for (const item of items) {
    // Every item but the last of an answer is padded to an even length.
    const need = RES_ITEM + itemBytes(item) + (itemBytes(item) % 2);
    const r = requests.find((q) => q.items.length < maxItems && q.answer + need <= pdu);
    if (r) {
      r.items.push(item);
      r.answer += need;
    } else requests.push({ items: [item], answer: RES_HEAD + need });
  }
  return { addresses, requests: requests.map((r) => r.items), large, invalid };
}

// ---------------------------------------------------------------------------------------------
// Values

/** Timer time bases: 10 ms, 100 ms, 1 s, 10 s. */
const TIME_BASES = [10, 100, 1000, 10000];

const fromBcd = (v: number) => {
  let out = 0;
  for (let shift = 8; shift >= 0; shift -= 4) {
    const digit = (v >> shift) & 0xf;
    if (digit > 9) throw new Error(`0x${v.toString(16)} is not BCD`);
    out = out * 10 + digit;
  }
  return out;
};
const toBcd = (n: number) => ((Math.floor(n / 100) % 10) << 8) | ((Math.floor(n / 10) % 10) << 4) | (n % 10);

/** Decodes a tag's value from `buf` at `offset` (bytes). */
export function decodeS7(tag: TagSpec, buf: Buffer, offset: number): TagValue {
  if (tag.register === 'T') {
    const w = buf.readUInt16BE(offset);
    return fromBcd(w & 0x0fff) * TIME_BASES[(w >> 12) & 0x3]!;
  }
  if (tag.register === 'C') return fromBcd(buf.readUInt16BE(offset) & 0x0fff);
  switch (tag.valueType) {
    case 'bool':
    case 'bit':
      return ((buf[offset]! >> Number(tag.props.bit ?? 0)) & 1) === 1;
    case 'byte':
      return buf.readUInt8(offset);
    case 'sint':
      return buf.readInt8(offset);
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
    case 'string': {
      const max = Number(tag.props.length ?? 10);
      const len = Math.min(buf[offset + 1]!, buf[offset]! || max, max);
      return buf.toString('latin1', offset + 2, offset + 2 + len);
    }
    default:
      throw new Error(`value type ${tag.valueType} is not an S7 type`);
  }
}

/**
 * The bytes to write for a value (already coerced to the tag's type). A bool is not here: a bit
 * is written with the bit transport (see the driver).
 */
export function encodeS7(tag: TagSpec, value: unknown): Buffer {
  if (tag.register === 'T') {
    const ms = Number(value);
    if (!Number.isInteger(ms) || ms < 0 || ms > 9_990_000)
      throw new Error(`${String(value)} ms is not a timer value (0 to 9990000 ms)`);
    // The finest time base that holds the value in three BCD digits without losing precision.
    const base = TIME_BASES.findIndex((b) => ms % b === 0 && ms / b <= 999);
    if (base < 0)
      throw new Error(`${ms} ms cannot be held by an S7 timer (3 digits × 10 ms, 100 ms, 1 s or 10 s)`);
    const b = Buffer.alloc(2);
    b.writeUInt16BE((base << 12) | toBcd(ms / TIME_BASES[base]!));
    return b;
  }
  if (tag.register === 'C') {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 999)
      throw new Error(`${String(value)} is not a counter value (0 to 999)`);
    const b = Buffer.alloc(2);
    b.writeUInt16BE(toBcd(n));
    return b;
  }
  const n = Number(value);
  switch (tag.valueType) {
    case 'byte':
      return Buffer.from([n & 0xff]);
    case 'sint':
      return Buffer.from([n & 0xff]);
    case 'int16': {
      const b = Buffer.alloc(2);
      b.writeInt16BE(n);
      return b;
    }
    case 'uint16': {
      const b = Buffer.alloc(2);
      b.writeUInt16BE(n);
      return b;
    }
    case 'int32': {
      const b = Buffer.alloc(4);
      b.writeInt32BE(n);
      return b;
    }
    case 'uint32': {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n);
      return b;
    }
    case 'float32': {
      const b = Buffer.alloc(4);
      b.writeFloatBE(n);
      return b;
    }
    case 'string': {
      const max = Number(tag.props.length ?? 10);
      const text = Buffer.from(String(value), 'latin1');
      if (text.length > max) throw new Error(`"${String(value)}" is longer than the tag's ${max} characters`);
      return Buffer.concat([Buffer.from([max, text.length]), text]);
    }
    default:
      throw new Error(`value type ${tag.valueType} cannot be written to S7`);
  }
}

// ---------------------------------------------------------------------------------------------
// Areas named for browsing

export interface BrowseArea {
  area: AreaName;
  db: number;
  from: number;
  to: number;
}

const AREA_RE = /^(DB(\d+):|M|I|E|Q|A|T|C|Z)(\d+)(?:-(\d+))?$/i;
/** At most this many addresses (bytes, timers, counters) in one browse. */
export const MAX_BROWSE = 4096;

/**
 * Parses `browseAreas`: comma-separated areas, `DB<n>:<from>-<to>` (bytes of a data block),
 * `M`, `I`, `Q` `<from>-<to>` (bytes; German E and A for I and Q), `T`, `C` `<from>-<to>` (timer,
 * counter numbers; Z for C).
 */
export function parseBrowseAreas(text: string): BrowseArea[] {
  const out: BrowseArea[] = [];
  let total = 0;
  for (const raw of text.split(',')) {
    const part = raw.trim().replace(/\s+/g, '');
    if (part === '') continue;
    const m = AREA_RE.exec(part);
    if (!m)
      throw new Error(`browseAreas: "${part}" is not an area (DB1:0-99, M0-15, I0-3, Q0-3, T0-9, C0-9)`);
    const head = m[1]!.toUpperCase();
    const area: AreaName = head.startsWith('DB')
      ? 'DB'
      : (({ E: 'I', A: 'Q', Z: 'C' } as Record<string, AreaName>)[head] ?? (head as AreaName));
    const from = Number(m[3]);
    const to = m[4] === undefined ? from : Number(m[4]);
    if (to < from) throw new Error(`browseAreas: "${part}" ends before it starts`);
    total += to - from + 1;
    if (total > MAX_BROWSE) throw new Error(`browseAreas: more than ${MAX_BROWSE} addresses in all`);
    out.push({ area, db: area === 'DB' ? Number(m[2]) : 0, from, to });
  }
  if (out.length === 0) throw new Error('browseAreas is empty: name the areas to list, e.g. DB1:0-63, M0-15');
  return out;
}
