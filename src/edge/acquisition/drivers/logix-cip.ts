/**
 * CIP pieces of the Logix drivers: the library loading, CIP type codes, tag-name parsing, the
 * Multiple Service Packet framing, value encoding, the session opening and the browse of the tag list.
 */
import type { Controller as ControllerT } from 'st-ethernet-ip';
import type { BrowseNode } from '../../devicehub/index.js';
import { bigToJson } from '../convert.js';
import { errorText } from '../engine.js';
import type { TagValue } from '../types.js';

export type Lib = typeof import('st-ethernet-ip');
export let loaded: Promise<{ lib: Lib; config: { EIP_PORT: number } }> | undefined;
export const load = () =>
  (loaded ??= Promise.all([import('st-ethernet-ip'), import('st-ethernet-ip/dist/config.js')]).then(
    ([m, c]) => ({
      lib: ((m as { default?: Lib }).default ?? m) as Lib,
      config: ((c as { default?: { EIP_PORT: number } }).default ?? c) as { EIP_PORT: number },
    }),
  ));

/** Largest unconnected request and reply data this driver builds or expects (Logix: 504). */
export const MAX_MESSAGE = 480;

/** CIP atomic type codes and sizes, by the catalogue's value type. */
export const TYPES: Record<string, { code: number; size: number }> = {
  bool: { code: 0xc1, size: 1 },
  sint: { code: 0xc2, size: 1 },
  int: { code: 0xc3, size: 2 },
  dint: { code: 0xc4, size: 4 },
  lint: { code: 0xc5, size: 8 },
  usint: { code: 0xc6, size: 1 },
  uint: { code: 0xc7, size: 2 },
  udint: { code: 0xc8, size: 4 },
  ulint: { code: 0xc9, size: 8 },
  real: { code: 0xca, size: 4 },
  lreal: { code: 0xcb, size: 8 },
};
export const CODE_TYPE = new Map(Object.entries(TYPES).map(([name, t]) => [t.code, name]));
export const STRING_SIZE = 88;

/** `Program:Main.Motor[2].Speed` as its scope and segments (names and element indexes). */
export function parseTagName(name: string): { program: string | null; segments: Array<string | number> } {
  let rest = name.trim();
  let program: string | null = null;
  const m = /^Program:([A-Za-z_][A-Za-z0-9_]*)\./i.exec(rest);
  if (m) {
    program = m[1]!;
    rest = rest.slice(m[0].length);
  }
  const segments: Array<string | number> = [];
  for (const part of rest.split('.')) {
    const p = /^([A-Za-z_][A-Za-z0-9_:]*)(?:\[(\d+(?:\s*,\s*\d+)*)\])?$/.exec(part);
    if (!p) throw new Error(`tag name ${JSON.stringify(name)}: cannot read ${JSON.stringify(part)}`);
    segments.push(p[1]!);
    if (p[2]) for (const i of p[2].split(',')) segments.push(Number(i));
  }
  return { program, segments };
}

export interface Reply {
  status: number;
  ext: number[];
  data: Buffer;
}

export function cipStatus(r: Reply): string {
  const names: Record<number, string> = {
    0x04: 'path segment error (tag name not understood)',
    0x05: 'path destination unknown (no such tag)',
    0x06: 'partial transfer',
    0x08: 'service not supported',
    0x11: 'reply data too large',
    0x13: 'not enough data',
    0x1e: 'embedded service error',
    0xff: 'general error',
  };
  const ext = r.ext.length ? ` (extended 0x${r.ext.map((e) => e.toString(16)).join(', 0x')})` : '';
  const detail =
    r.ext[0] === 0x2107
      ? ': data type does not match the tag'
      : r.ext[0] === 0x2105
        ? ': beyond the end of the tag'
        : '';
  return `CIP status 0x${r.status.toString(16).padStart(2, '0')} ${names[r.status] ?? ''}${ext}${detail}`.trim();
}

/** Only one connect at a time in the process: the library reads its port from a module setting. */
export let connecting: Promise<unknown> = Promise.resolve();

export const MESSAGE_ROUTER = Buffer.from([0x20, 0x02, 0x24, 0x01]);
/** Requests in flight at once during a read. */
export const WINDOW = 4;

export const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(n);
  return b;
};

export function multiple(requests: Buffer[]): Buffer {
  const head = Buffer.alloc(2 + 2 * requests.length);
  head.writeUInt16LE(requests.length, 0);
  let off = head.length;
  requests.forEach((r, i) => {
    head.writeUInt16LE(off, 2 + i * 2);
    off += r.length;
  });
  return Buffer.concat([head, ...requests]);
}

export function splitMultiple(data: Buffer): Reply[] {
  const n = data.readUInt16LE(0);
  const out: Reply[] = [];
  for (let i = 0; i < n; i++) {
    const start = data.readUInt16LE(2 + i * 2);
    const end = i + 1 < n ? data.readUInt16LE(4 + i * 2) : data.length;
    const r = data.subarray(start, end);
    const extLen = r[3] ?? 0;
    out.push({
      status: r[2] ?? 0x13,
      ext: Array.from({ length: extLen }, (_, k) => r.readUInt16LE(4 + k * 2)),
      data: r.subarray(4 + extLen * 2),
    });
  }
  return out;
}

export function atomic(type: string, b: Buffer, o: number): TagValue {
  switch (type) {
    case 'bool':
      return b[o] !== 0;
    case 'sint':
      return b.readInt8(o);
    case 'usint':
      return b.readUInt8(o);
    case 'int':
      return b.readInt16LE(o);
    case 'uint':
      return b.readUInt16LE(o);
    case 'dint':
      return b.readInt32LE(o);
    case 'udint':
      return b.readUInt32LE(o);
    case 'lint':
      return bigToJson(b.readBigInt64LE(o));
    case 'ulint':
      return bigToJson(b.readBigUInt64LE(o));
    case 'real':
      return b.readFloatLE(o);
    default:
      return b.readDoubleLE(o);
  }
}

export function writeAtomic(type: string, b: Buffer, o: number, v: TagValue): void {
  const n = typeof v === 'boolean' ? Number(v) : Number(v);
  switch (type) {
    case 'bool':
      b[o] = n ? 1 : 0;
      return;
    case 'sint':
      b.writeInt8(n, o);
      return;
    case 'usint':
      b.writeUInt8(n, o);
      return;
    case 'int':
      b.writeInt16LE(n, o);
      return;
    case 'uint':
      b.writeUInt16LE(n, o);
      return;
    case 'dint':
      b.writeInt32LE(n, o);
      return;
    case 'udint':
      b.writeUInt32LE(n, o);
      return;
    case 'lint':
      b.writeBigInt64LE(BigInt(v as number | string), o);
      return;
    case 'ulint':
      b.writeBigUInt64LE(BigInt(v as number | string), o);
      return;
    case 'real':
      b.writeFloatLE(n, o);
      return;
    default:
      b.writeDoubleLE(n, o);
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * The library parses one encapsulation packet per TCP read; with several requests in flight a
 * read can hold more than one answer, or part of one. Packets are split here, by their length.
 */
export function reframe(plc: ControllerT): void {
  const handle = (plc as unknown as { _handleDataEvent: (b: Buffer) => void })._handleDataEvent;
  plc.removeAllListeners('data');
  let buf: Buffer = Buffer.alloc(0);
  plc.on('data', (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    while (buf.length >= 24) {
      const len = 24 + buf.readUInt16LE(2);
      if (buf.length < len) break;
      const packet = buf.subarray(0, len);
      buf = buf.subarray(len);
      handle.call(plc, packet);
    }
  });
}

/** A library Controller with an EtherNet/IP session to the device (unconnected messaging). */
export async function openController(
  p: Record<string, string>,
  timeout: number,
): Promise<{ plc: ControllerT; lib: Lib }> {
  const { lib, config } = await load();
  const plc = new lib.Controller(false, { unconnectedSendTimeout: Math.max(timeout, 100) });
  plc.timeout_sp = timeout;
  plc.on('error', () => undefined);
  const port = Number(p.port ?? 44818) || 44818;
  reframe(plc);
  const attempt = connecting.then(async () => {
    config.EIP_PORT = port;
    await withTimeout(
      plc.connect(p.host ?? '', Number(p.slot ?? 0), false),
      timeout + 1000,
      'opening the session',
    );
  });
  connecting = attempt.catch(() => undefined);
  try {
    await attempt;
  } catch (err) {
    try {
      plc.destroy();
    } catch {
      // not open
    }
    throw new Error(`cannot connect to ${p.host}:${port}: ${errorText(err)}`);
  }
  return { plc, lib };
}

export const BROWSE_TYPES = new Set(Object.keys(TYPES));

/** The tag list (controller and program tags), structures expanded into their members. */
export async function browseLogix(props: Record<string, string>, arrays: boolean): Promise<BrowseNode[]> {
  const timeout = Number(props.requestTimeoutMs ?? 2000) || 2000;
  const { plc, lib } = await openController(props, timeout);
  try {
    const list = new lib.TagList();
    await withTimeout(plc.getControllerTagList(list), timeout * 10, 'reading the tag list');
    const templates = list.templates as Record<
      string,
      {
        _name: string;
        _members: Array<{
          name: string;
          info: number;
          type: { code: number; structure: boolean; arrayDims: number };
        }>;
      }
    >;
    const leaf = (
      name: string,
      code: number,
      structure: boolean,
      dims: number,
      length: number,
    ): BrowseNode[] => {
      const t = templates[code];
      if (structure && t) {
        if (t._name === 'STRING') return [node(name, 'string')];
        if (dims > 0 || name.split('.').length > 4) return [];
        return t._members
          .filter((m) => !m.name.startsWith('ZZZZZZZZZZ') && !m.name.startsWith('__'))
          .flatMap((m) => leaf(`${name}.${m.name}`, m.type.code, m.type.structure, m.type.arrayDims, m.info));
      }
      const type = CODE_TYPE.get(code);
      if (!type || !BROWSE_TYPES.has(type)) return [];
      if (dims === 0) return [node(name, type)];
      if (!arrays || !['bool', 'sint', 'int', 'dint', 'real', 'usint', 'uint', 'udint'].includes(type))
        return [];
      return [node(name, `${type}_array`, length)];
    };
    const folders = new Map<string, BrowseNode[]>();
    for (const t of list.tags) {
      if (t.type.reserved || t.name.startsWith('__') || t.name.startsWith('Program:')) continue;
      const scope = t.program ? `Program:${t.program}` : 'Controller';
      const full = t.program ? `Program:${t.program}.${t.name}` : t.name;
      const nodes = folders.get(scope) ?? [];
      let length = 1;
      if (t.type.arrayDims > 0 && !t.program && arrays) {
        try {
          const dims = await withTimeout(
            plc.getAttributeSingle(0x6b, t.id, 8),
            timeout,
            'reading array dimensions',
          );
          length = dims.readUInt32LE(0) || 1;
        } catch {
          length = 1;
        }
      }
      nodes.push(...leaf(full, t.type.code, t.type.structure, t.type.arrayDims, length));
      folders.set(scope, nodes);
    }
    return [...folders].map(([Name, Children]) => ({
      Name,
      Description: Name === 'Controller' ? 'controller tags' : 'program tags',
      Children,
    }));
  } finally {
    try {
      plc.destroy();
    } catch {
      // gone
    }
  }
}

export function node(tagName: string, valueType: string, arrayLength?: number): BrowseNode {
  const Properties = [{ Name: 'tagName', Value: tagName }];
  if (arrayLength !== undefined)
    Properties.push({ Name: 'arrayLength', Value: String(Math.min(arrayLength, 4096)) });
  return {
    Name: tagName,
    Description: `${tagName} (${valueType})`,
    RegisterName: 'R',
    ValueType: valueType,
    Properties,
  };
}
