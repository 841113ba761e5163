/**
 * A Logix controller's tag server for the tests: EtherNet/IP encapsulation and CIP, written here
 * from the public specifications (ODVA's EtherNet/IP and CIP volumes, and Rockwell's "Logix 5000
 * Controllers Data Access" manual), because no Logix simulator is installable on this machine
 * (cpppo is a PyPI package; PyPI is not reachable, and neither npm nor Debian carries one). It is
 * our own code, not a field implementation: what it proves is that the driver speaks the protocol
 * as those documents describe it.
 *
 * Served: RegisterSession, UnRegisterSession, ListIdentity, SendRRData (unconnected: the Unconnected
 * Send service of the Connection Manager, or a bare Message Router request), and the CIP services
 * Get_Attribute_All (Identity), Read Tag, Read Tag Fragmented, Write Tag, Multiple Service Packet,
 * Get_Instance_Attribute_List (Symbol class 0x6B: the tag list, controller and program scope) and
 * the Template object (0x6C: Get_Attribute_List, Read). Tags: atomic types, one-dimension arrays,
 * structures (user-defined types and STRING), addressed by symbolic segments or by symbol instance.
 */
import { createServer, type Server, type Socket } from 'node:net';

export const CIP = {
  BOOL: 0xc1,
  SINT: 0xc2,
  INT: 0xc3,
  DINT: 0xc4,
  LINT: 0xc5,
  USINT: 0xc6,
  UINT: 0xc7,
  UDINT: 0xc8,
  ULINT: 0xc9,
  REAL: 0xca,
  LREAL: 0xcb,
} as const;
const SIZE: Record<number, number> = {
  0xc1: 1,
  0xc2: 1,
  0xc3: 2,
  0xc4: 4,
  0xc5: 8,
  0xc6: 1,
  0xc7: 2,
  0xc8: 4,
  0xc9: 8,
  0xca: 4,
  0xcb: 8,
};

export interface UdtMember {
  name: string;
  type: number | Udt;
  offset: number;
  /** Elements of an array member (0: not an array). */
  dim?: number;
}
export interface Udt {
  name: string;
  /** Template instance (= structure handle here). */
  id: number;
  size: number;
  members: UdtMember[];
}

export const STRING_UDT: Udt = {
  name: 'STRING',
  id: 0x0fce,
  size: 88,
  members: [
    { name: 'LEN', type: CIP.DINT, offset: 0 },
    { name: 'DATA', type: CIP.SINT, offset: 4, dim: 82 },
  ],
};

interface PeerTag {
  name: string;
  program: string | null;
  instance: number;
  type: number | Udt;
  /** Elements (1 for a scalar). */
  count: number;
  array: boolean;
  data: Buffer;
}

const sizeOf = (t: number | Udt) => (typeof t === 'number' ? SIZE[t]! : t.size);

/** Where a request path points: a tag's bytes from `offset`, of `type`, `count` elements. */
interface Target {
  tag: PeerTag;
  type: number | Udt;
  offset: number;
  count: number;
}

class CipError extends Error {
  constructor(
    readonly status: number,
    readonly ext: number[] = [],
  ) {
    super(`CIP status 0x${status.toString(16)}`);
  }
}

export class LogixPeer {
  readonly tags: PeerTag[] = [];
  readonly udts: Udt[] = [STRING_UDT];
  /** Requests served, by CIP service code (after unwrapping Unconnected Send and Multiple Service Packets count once). */
  readonly served = new Map<number, number>();
  /** Tag reads inside all requests (Read Tag services, inside a Multiple Service Packet or not). */
  tagReads = 0;
  /** SendRRData requests (one per request on the wire). */
  requests = 0;
  port = 0;
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  #nextInstance = 1;
  #session = 0x1000;

  /** Adds a tag; `program` makes it a program tag of that program. Answers the tag. */
  add(name: string, type: number | Udt, opts: { program?: string; count?: number } = {}): PeerTag {
    const count = opts.count ?? 1;
    const tag: PeerTag = {
      name,
      program: opts.program ?? null,
      instance: this.#nextInstance++,
      type,
      count,
      array: opts.count !== undefined,
      data: Buffer.alloc(sizeOf(type) * count),
    };
    if (typeof type !== 'number' && !this.udts.includes(type)) this.udts.push(type);
    if (tag.program && !this.tags.some((t) => t.name === `Program:${tag.program}`))
      this.tags.push({
        name: `Program:${tag.program}`,
        program: null,
        instance: this.#nextInstance++,
        type: 0x1068,
        count: 0,
        array: false,
        data: Buffer.alloc(0),
      });
    this.tags.push(tag);
    return tag;
  }

  find(name: string, program: string | null = null): PeerTag {
    const t = this.tags.find((x) => x.name.toLowerCase() === name.toLowerCase() && x.program === program);
    if (!t) throw new Error(`no tag ${name}`);
    return t;
  }

  /** A new program download: every symbol gets a new instance number. */
  renumber(): void {
    for (const t of this.tags) t.instance += 1000;
  }

  async start(port = 0): Promise<number> {
    const server = createServer((socket) => this.#accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
    this.port = (server.address() as { port: number }).port;
    return this.port;
  }

  /** Stops listening and drops every connection (a controller powered off). */
  async stop(): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    for (const sock of this.#sockets) sock.destroy();
    this.#sockets.clear();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }

  #accept(socket: Socket): void {
    this.#sockets.add(socket);
    socket.setNoDelay(true);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 24) {
        const len = buf.readUInt16LE(2);
        if (buf.length < 24 + len) break;
        const packet = buf.subarray(0, 24 + len);
        buf = buf.subarray(24 + len);
        const reply = this.#encapsulation(packet);
        if (reply) socket.write(reply);
      }
    });
  }

  #encapsulation(p: Buffer): Buffer | null {
    const command = p.readUInt16LE(0);
    const context = p.subarray(12, 20);
    const header = (cmd: number, session: number, body: Buffer, status = 0) => {
      const h = Buffer.alloc(24);
      h.writeUInt16LE(cmd, 0);
      h.writeUInt16LE(body.length, 2);
      h.writeUInt32LE(session, 4);
      h.writeUInt32LE(status, 8);
      context.copy(h, 12);
      return Buffer.concat([h, body]);
    };
    switch (command) {
      case 0x65: // RegisterSession
        return header(0x65, ++this.#session, p.subarray(24, 28));
      case 0x66: // UnRegisterSession
        return null;
      case 0x63: // ListIdentity: one CIP Identity item
        return header(0x63, 0, Buffer.concat([Buffer.from([1, 0, 0x0c, 0]), this.#identityItem()]));
      case 0x6f: {
        this.requests++;
        // SendRRData: interface handle (4), timeout (2), CPF items
        const data = p.subarray(24);
        let off = 6;
        const items = data.readUInt16LE(off);
        off += 2;
        let mr: Buffer | undefined;
        for (let i = 0; i < items; i++) {
          const type = data.readUInt16LE(off);
          const len = data.readUInt16LE(off + 2);
          if (type === 0xb2) mr = data.subarray(off + 4, off + 4 + len);
          off += 4 + len;
        }
        if (!mr) return header(0x6f, p.readUInt32LE(4), Buffer.alloc(0), 0x03);
        const resp = this.#unconnected(mr);
        const body = Buffer.alloc(16);
        body.writeUInt16LE(2, 6);
        body.writeUInt16LE(0x00b2, 12);
        body.writeUInt16LE(resp.length, 14);
        return header(0x6f, p.readUInt32LE(4), Buffer.concat([body, resp]));
      }
      default:
        return header(command, p.readUInt32LE(4), Buffer.alloc(0), 0x01);
    }
  }

  #identityItem(): Buffer {
    const name = Buffer.from('1756-L83E/B Millwright test peer');
    const b = Buffer.alloc(15);
    b.writeUInt16LE(1, 0); // vendor: Rockwell Automation
    b.writeUInt16LE(0x0e, 2); // programmable logic controller
    b.writeUInt16LE(166, 4);
    b.writeUInt8(33, 6);
    b.writeUInt8(11, 7);
    b.writeUInt16LE(0x0060, 8); // run mode
    b.writeUInt32LE(0x00c0ffee, 10);
    b.writeUInt8(name.length, 14);
    return Buffer.concat([b, name]);
  }

  /** A Message Router request, possibly inside Unconnected Send; answers the response. */
  #unconnected(mr: Buffer): Buffer {
    const service = mr[0]!;
    const pathLen = mr[1]! * 2;
    const path = mr.subarray(2, 2 + pathLen);
    if (service === 0x52 && path[0] === 0x20 && path[1] === 0x06) {
      const data = mr.subarray(2 + pathLen);
      const len = data.readUInt16LE(2);
      return this.#request(data.subarray(4, 4 + len));
    }
    return this.#request(mr);
  }

  #request(mr: Buffer): Buffer {
    const service = mr[0]!;
    this.served.set(service, (this.served.get(service) ?? 0) + 1);
    const path = mr.subarray(2, 2 + mr[1]! * 2);
    const data = mr.subarray(2 + mr[1]! * 2);
    try {
      const { status, body } = this.#serve(service, path, data);
      return reply(service, status, [], body);
    } catch (err) {
      if (err instanceof CipError) return reply(service, err.status, err.ext, Buffer.alloc(0));
      return reply(service, 0x1f, [], Buffer.alloc(0));
    }
  }

  #serve(service: number, path: Buffer, data: Buffer): { status: number; body: Buffer } {
    const seg = parsePath(path);
    const cls = num(seg, 'class');
    switch (service) {
      case 0x01: // Get_Attribute_All (Identity)
        if (cls !== 1) throw new CipError(0x08);
        return { status: 0, body: this.#identityItem() };
      case 0x0a:
        return this.#multiple(data);
      case 0x0e: {
        // Get_Attribute_Single: a symbol's array dimensions (attribute 8)
        const inst = num(seg, 'instance');
        const t = this.tags.find((x) => x.program === null && x.instance === inst);
        if (cls !== 0x6b || !t || num(seg, 'attribute') !== 8) throw new CipError(0x14);
        return { status: 0, body: Buffer.concat([u32(t.array ? t.count : 0), u32(0), u32(0)]) };
      }
      case 0x55:
        return this.#symbols(seg, data);
      case 0x03:
        return this.#templateAttributes(seg);
      case 0x4c: {
        if (cls === 0x6c) return this.#templateRead(seg, data);
        this.tagReads++;
        const t = this.#resolve(seg);
        const n = data.readUInt16LE(0);
        if (n > t.count) throw new CipError(0xff, [0x2105]);
        const bytes = t.tag.data.subarray(t.offset, t.offset + n * sizeOf(t.type));
        const full = Buffer.concat([typeHeader(t.type), bytes]);
        if (full.length > 496) return { status: 0x06, body: full.subarray(0, 496) };
        return { status: 0, body: full };
      }
      case 0x52: {
        this.tagReads++;
        const t = this.#resolve(seg);
        const n = data.readUInt16LE(0);
        const from = data.readUInt32LE(2);
        const bytes = t.tag.data.subarray(t.offset, t.offset + n * sizeOf(t.type));
        if (from > bytes.length) throw new CipError(0xff, [0x2105]);
        const chunk = bytes.subarray(from, from + 480);
        const more = from + chunk.length < bytes.length;
        return { status: more ? 0x06 : 0, body: Buffer.concat([typeHeader(t.type), chunk]) };
      }
      case 0x4d:
        return this.#write(seg, data);
      default:
        throw new CipError(0x08);
    }
  }

  #multiple(data: Buffer): { status: number; body: Buffer } {
    const n = data.readUInt16LE(0);
    const out: Buffer[] = [];
    let failed = false;
    for (let i = 0; i < n; i++) {
      const start = data.readUInt16LE(2 + i * 2);
      const end = i + 1 < n ? data.readUInt16LE(4 + i * 2) : data.length;
      const r = this.#request(data.subarray(start, end));
      if (r[2] !== 0) failed = true;
      out.push(r);
    }
    const head = Buffer.alloc(2 + 2 * n);
    head.writeUInt16LE(n, 0);
    let off = head.length;
    out.forEach((r, i) => {
      head.writeUInt16LE(off, 2 + i * 2);
      off += r.length;
    });
    const body = Buffer.concat([head, ...out]);
    if (body.length > 504) throw new CipError(0x11); // reply data too large
    return { status: failed ? 0x1e : 0, body };
  }

  #scopeOf(seg: Segment[]): { program: string | null; rest: Segment[] } {
    const first = seg[0];
    if (first?.kind === 'symbol' && /^program:/i.test(first.name)) {
      const program = first.name.slice(8);
      if (!this.tags.some((t) => t.name.toLowerCase() === `program:${program.toLowerCase()}`))
        throw new CipError(0x05);
      return { program, rest: seg.slice(1) };
    }
    return { program: null, rest: seg };
  }

  #symbols(seg: Segment[], data: Buffer): { status: number; body: Buffer } {
    const { program, rest } = this.#scopeOf(seg);
    const from = num(rest, 'instance') ?? 0;
    const count = data.readUInt16LE(0);
    const attrs = Array.from({ length: count }, (_, i) => data.readUInt16LE(2 + i * 2));
    const list = this.tags
      .filter((t) => t.program === program && t.instance >= from)
      .sort((a, b) => a.instance - b.instance);
    const parts: Buffer[] = [];
    let size = 0;
    for (const t of list) {
      const fields: Buffer[] = [u32(t.instance)];
      for (const a of attrs) {
        if (a === 1) fields.push(u16(t.name.length), Buffer.from(t.name, 'latin1'));
        else if (a === 2) fields.push(u16(symbolType(t)));
        else if (a === 8) fields.push(u32(t.array ? t.count : 0), u32(0), u32(0));
      }
      const entry = Buffer.concat(fields);
      if (size + entry.length > 480) return { status: 0x06, body: Buffer.concat(parts) };
      parts.push(entry);
      size += entry.length;
    }
    return { status: 0, body: Buffer.concat(parts) };
  }

  #udt(seg: Segment[]): { udt: Udt; def: Buffer } {
    const id = num(seg, 'instance');
    const udt = this.udts.find((u) => u.id === id);
    if (!udt) throw new CipError(0x05);
    const rows = udt.members.map((m) => {
      const b = Buffer.alloc(8);
      b.writeUInt16LE(m.dim ?? 0, 0);
      b.writeUInt16LE(typeof m.type === 'number' ? m.type | (m.dim ? 0x2000 : 0) : 0x8000 | m.type.id, 2);
      b.writeUInt32LE(m.offset, 4);
      return b;
    });
    const names = Buffer.from(`${udt.name};n\0${udt.members.map((m) => `${m.name}\0`).join('')}`, 'latin1');
    let def = Buffer.concat([...rows, names]);
    const words = Math.ceil((def.length + 16) / 4);
    def = Buffer.concat([def, Buffer.alloc(words * 4 - 16 - def.length)]);
    return { udt, def };
  }

  #templateAttributes(seg: Segment[]): { status: number; body: Buffer } {
    const { udt, def } = this.#udt(seg);
    const b = Buffer.alloc(30);
    b.writeUInt16LE(4, 0);
    b.writeUInt16LE(4, 2);
    b.writeUInt32LE((def.length + 16) / 4, 6); // definition size, 32-bit words
    b.writeUInt16LE(5, 10);
    b.writeUInt32LE(udt.size, 14); // structure size, bytes
    b.writeUInt16LE(2, 18);
    b.writeUInt16LE(udt.members.length, 22);
    b.writeUInt16LE(1, 24);
    b.writeUInt16LE(udt.id, 28); // structure handle
    return { status: 0, body: b };
  }

  #templateRead(seg: Segment[], data: Buffer): { status: number; body: Buffer } {
    const { def } = this.#udt(seg);
    const from = data.readUInt32LE(0);
    const n = data.readUInt16LE(4);
    const chunk = def.subarray(from, from + Math.min(n, 480));
    return { status: from + chunk.length < def.length ? 0x06 : 0, body: chunk };
  }

  #write(seg: Segment[], data: Buffer): { status: number; body: Buffer } {
    const t = this.#resolve(seg);
    const type = data.readUInt16LE(0);
    let off = 2;
    if (type === 0x02a0) {
      const handle = data.readUInt16LE(2);
      if (typeof t.type === 'number' || t.type.id !== handle) throw new CipError(0xff, [0x2107]);
      off = 4;
    } else if (type !== t.type) throw new CipError(0xff, [0x2107]);
    const n = data.readUInt16LE(off);
    const bytes = data.subarray(off + 2);
    if (n > t.count || bytes.length !== n * sizeOf(t.type)) throw new CipError(0xff, [0x2105]);
    bytes.copy(t.tag.data, t.offset);
    return { status: 0, body: Buffer.alloc(0) };
  }

  #resolve(seg: Segment[]): Target {
    const { program, rest } = this.#scopeOf(seg);
    let i = 0;
    let tag: PeerTag | undefined;
    const first = rest[0];
    if (first?.kind === 'symbol') {
      tag = this.tags.find((t) => t.program === program && t.name.toLowerCase() === first.name.toLowerCase());
      i = 1;
    } else if (first?.kind === 'class' && first.value === 0x6b && rest[1]?.kind === 'instance') {
      const inst = rest[1].value;
      tag = this.tags.find((t) => t.program === program && t.instance === inst);
      i = 2;
    }
    if (!tag || tag.type === 0x1068) throw new CipError(0x05);
    let target: Target = { tag, type: tag.type, offset: 0, count: tag.count };
    let indexable = tag.array;
    for (; i < rest.length; i++) {
      const s = rest[i]!;
      if (s.kind === 'element') {
        if (!indexable || s.value >= target.count) throw new CipError(0x05);
        target = {
          ...target,
          offset: target.offset + s.value * sizeOf(target.type),
          count: target.count - s.value,
        };
        indexable = false;
      } else if (s.kind === 'symbol') {
        const udt = target.type;
        const m =
          typeof udt === 'number'
            ? undefined
            : udt.members.find((x) => x.name.toLowerCase() === s.name.toLowerCase());
        if (!m) throw new CipError(0x05);
        target = { tag, type: m.type, offset: target.offset + m.offset, count: m.dim || 1 };
        indexable = Boolean(m.dim);
      } else throw new CipError(0x04);
    }
    return target;
  }
}

type Segment =
  { kind: 'symbol'; name: string } | { kind: 'element' | 'class' | 'instance' | 'attribute'; value: number };

function num(seg: Segment[], kind: string): number | undefined {
  const s = seg.find((x) => x.kind === kind);
  return s && 'value' in s ? s.value : undefined;
}

function parsePath(p: Buffer): Segment[] {
  const out: Segment[] = [];
  let i = 0;
  const logical = (kind: 'element' | 'class' | 'instance' | 'attribute', fmt: number) => {
    if (fmt === 0) {
      out.push({ kind, value: p[i + 1]! });
      i += 2;
    } else if (fmt === 1) {
      out.push({ kind, value: p.readUInt16LE(i + 2) });
      i += 4;
    } else {
      out.push({ kind, value: p.readUInt32LE(i + 2) });
      i += 6;
    }
  };
  while (i < p.length) {
    const b = p[i]!;
    if (b === 0x91) {
      const len = p[i + 1]!;
      out.push({ kind: 'symbol', name: p.subarray(i + 2, i + 2 + len).toString('latin1') });
      i += 2 + len + (len % 2);
    } else if ((b & 0xfc) === 0x28) logical('element', b & 3);
    else if ((b & 0xfc) === 0x20) logical('class', b & 3);
    else if ((b & 0xfc) === 0x24) logical('instance', b & 3);
    else if ((b & 0xfc) === 0x30) logical('attribute', b & 3);
    else throw new CipError(0x04);
  }
  return out;
}

function symbolType(t: PeerTag): number {
  if (t.type === 0x1068) return 0x1068;
  const base = typeof t.type === 'number' ? t.type : 0x8000 | t.type.id;
  return base | (t.array ? 0x2000 : 0);
}

function typeHeader(type: number | Udt): Buffer {
  if (typeof type === 'number') return u16(type);
  const b = Buffer.alloc(4);
  b.writeUInt16LE(0x02a0, 0);
  b.writeUInt16LE(type.id, 2);
  return b;
}

function reply(service: number, status: number, ext: number[], body: Buffer): Buffer {
  const h = Buffer.alloc(4 + ext.length * 2);
  h[0] = service | 0x80;
  h[2] = status;
  h[3] = ext.length;
  ext.forEach((e, i) => h.writeUInt16LE(e, 4 + i * 2));
  return Buffer.concat([h, body]);
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
};
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
