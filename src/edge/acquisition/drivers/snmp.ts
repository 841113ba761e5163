/**
 * The SNMP driver, on `net-snmp`: v1, v2c (community) and v3 (user, with authentication and
 * privacy). Registers: `OID` (one object, read with GET, many per request), `Walk` (a subtree as
 * a JSON object, by GETBULK on v2c/v3 and GETNEXT on v1), `Table` (a conceptual table as rows
 * keyed by index) and `Trap` (the notifications received on the device's `trapPort`, as values).
 * UDP has no connection: `connect` asks the agent for sysUpTime, and a request that gets no
 * answer after the retries counts as the device being away.
 */
import type * as snmp from 'net-snmp';
import { netSnmp } from './snmp-lib.js';
import type { Session, User, Varbind } from 'net-snmp';
import { errorText } from '../engine.js';
import {
  ReadFailure,
  type DeviceSpec,
  type DriverContext,
  type DriverFactory,
  type DriverSession,
  type ReadResult,
  type TagSpec,
  type TagValue,
  type ValueSink,
} from '../types.js';
import type { BrowseNode } from '../../devicehub/index.js';
import { encodeGetVarbind } from './snmp-ber.js';
import { SnmpGetter, VarbindError } from './snmp-get.js';

const SYS_UPTIME = '1.3.6.1.2.1.1.3.0';
const TRAP_OID = '1.3.6.1.6.3.1.1.4.1.0';
/** Objects of a walk or table kept as one value; objects of a browse. */
const MAX_WALK = 10_000;
const MAX_BROWSE = 5_000;

const AUTH = (): Record<string, snmp.AuthProtocols> => {
  const p = netSnmp().AuthProtocols;
  return {
    MD5: p.md5,
    SHA: p.sha,
    SHA224: p.sha224,
    SHA256: p.sha256,
    SHA384: p.sha384,
    SHA512: p.sha512,
  };
};
const PRIV = (): Record<string, snmp.PrivProtocols> => {
  const p = netSnmp().PrivProtocols;
  return {
    DES: p.des,
    AES: p.aes,
    AES256B: p.aes256b,
    AES256R: p.aes256r,
  };
};
const LEVEL = (): Record<string, snmp.SecurityLevel> => ({
  noAuthNoPriv: netSnmp().SecurityLevel.noAuthNoPriv,
  authNoPriv: netSnmp().SecurityLevel.authNoPriv,
  authPriv: netSnmp().SecurityLevel.authPriv,
});

export function v3User(p: Record<string, string>): User {
  const level = LEVEL()[p.securityLevel ?? 'authPriv'] ?? netSnmp().SecurityLevel.authPriv;
  const user: User = { name: p.securityName ?? '', level };
  if (level !== netSnmp().SecurityLevel.noAuthNoPriv) {
    user.authProtocol = AUTH()[p.authProtocol ?? 'SHA'] ?? netSnmp().AuthProtocols.sha;
    user.authKey = p.authKey ?? '';
  }
  if (level === netSnmp().SecurityLevel.authPriv) {
    user.privProtocol = PRIV()[p.privProtocol ?? 'AES'] ?? netSnmp().PrivProtocols.aes;
    user.privKey = p.privKey ?? '';
  }
  return user;
}

/** A session to the device's agent as its properties say. */
export function openSession(p: Record<string, string>): Session {
  const options = {
    port: Number(p.port ?? 161) || 161,
    retries: Number(p.retryRequestCount ?? 1),
    timeout: Number(p.requestTimeoutMs ?? 2000) || 2000,
    transport: 'udp4' as const,
  };
  const version = p.version ?? 'v2c';
  const session =
    version === 'v3'
      ? netSnmp().createV3Session(p.host ?? '', v3User(p), { ...options, context: p.contextName ?? '' })
      : netSnmp().createSession(p.host ?? '', p.community ?? 'public', {
          ...options,
          version: version === 'v1' ? netSnmp().Version1 : netSnmp().Version2c,
        });
  session.on('error', () => undefined);
  return session;
}

const call = <T>(fn: (cb: (err: Error | null, result?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((err, result) => (err ? reject(err) : resolve(result as T))));

/** A varbind's value as JSON can carry it: octet strings as text when printable, else hex. */
export function varbindValue(vb: Varbind): TagValue {
  const v = vb.value;
  if (Buffer.isBuffer(v)) {
    if (vb.type === netSnmp().ObjectType.Counter64) {
      let n = 0n;
      for (const byte of v) n = (n << 8n) | BigInt(byte);
      return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
    }
    // eslint-disable-next-line no-control-regex
    return /^[\x09\x0a\x0d\x20-\x7e\u00a0-\u00ff]*$/.test(v.toString('latin1'))
      ? v.toString('utf8')
      : v.toString('hex');
  }
  if (typeof v === 'bigint') return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  return (v ?? null) as TagValue;
}

/** A value as the tag's value type (numbers from text, text from numbers). */
function asType(v: TagValue, valueType: string): TagValue {
  if (valueType === 'json' || v === null) return v;
  if (valueType === 'string') return typeof v === 'string' ? v : JSON.stringify(v);
  if (valueType === 'bool') return typeof v === 'boolean' ? v : Number(v) !== 0;
  if (typeof v === 'object') return v;
  const n = Number(v);
  return Number.isNaN(n) ? v : n;
}

const isTimeout = (err: unknown) => (err as { name?: string }).name === 'RequestTimedOutError';

/** SNMP types of a set, by name (tag property `setType`), else from the value type. */
const SET_TYPES = (): Record<string, snmp.ObjectType> => {
  const p = netSnmp().ObjectType;
  return {
    Integer: p.Integer,
    OctetString: p.OctetString,
    Gauge32: p.Gauge32,
    Counter32: p.Counter32,
    TimeTicks: p.TimeTicks,
    IpAddress: p.IpAddress,
    ObjectIdentifier: p.OID,
  };
};
function setType(tag: TagSpec): snmp.ObjectType {
  const named = tag.props.setType ? SET_TYPES()[tag.props.setType] : undefined;
  if (named) return named;
  if (tag.valueType === 'string') return netSnmp().ObjectType.OctetString;
  if (tag.valueType.startsWith('uint')) return netSnmp().ObjectType.Gauge32;
  return netSnmp().ObjectType.Integer;
}

class SnmpSession implements DriverSession {
  readonly #device: DeviceSpec;
  readonly #ctx: DriverContext;
  readonly #maxOids: number;
  readonly #maxRep: number;
  /** GETs in flight at once (`maxConcurrentRequests`). */
  readonly #concurrency: number;
  #session: Session | undefined;
  /** v1/v2c: the GETs of `OID` tags, encoded and decoded by the driver (net-snmp for the rest). */
  #getter: SnmpGetter | undefined;
  /** Each tag's GET varbind, encoded once (null: not encodable here, read through net-snmp). */
  readonly #encoded = new WeakMap<TagSpec, Buffer | null>();
  #receiver: { close(cb?: () => void): void } | undefined;
  #traps: TagSpec[] = [];
  #sink: ValueSink | undefined;

  constructor(device: DeviceSpec, ctx: DriverContext) {
    this.#device = device;
    this.#ctx = ctx;
    this.#maxOids = Number(device.props.maxOidsPerRequest ?? 50) || 50;
    this.#maxRep = Number(device.props.maxRepetitions ?? 20) || 20;
    this.#concurrency = Math.max(1, Math.min(16, Number(device.props.maxConcurrentRequests ?? 4) || 4));
  }

  async connect(): Promise<void> {
    const p = this.#device.props;
    const session = openSession(p);
    try {
      await call<Varbind[]>((cb) => session.get([SYS_UPTIME], cb));
    } catch (err) {
      session.close();
      throw new Error(`no answer from the SNMP agent at ${p.host}:${p.port ?? 161}: ${errorText(err)}`);
    }
    this.#session = session;
    const version = p.version ?? 'v2c';
    if (version !== 'v3') {
      this.#getter = new SnmpGetter(
        p.host ?? '',
        Number(p.port ?? 161) || 161,
        version === 'v1' ? 0 : 1,
        p.community ?? 'public',
        Number(p.requestTimeoutMs ?? 2000) || 2000,
        Number(p.retryRequestCount ?? 1),
      );
    }
    const trapPort = Number(p.trapPort ?? 0);
    if (trapPort > 0) this.#receiver = this.#listen(trapPort);
  }

  /** A notification receiver on `trapPort`: traps from the device's host become Trap tag values. */
  #listen(port: number) {
    const p = this.#device.props;
    const receiver = netSnmp().createReceiver(
      { port, transport: 'udp4' },
      (err: Error | null, n: unknown) => {
        if (err || !n || !this.#sink) return;
        const { pdu } = n as { pdu: { varbinds: Varbind[] } };
        const vbs: Record<string, TagValue> = {};
        for (const vb of pdu.varbinds) vbs[vb.oid] = varbindValue(vb);
        const trapOid = String(vbs[TRAP_OID] ?? '');
        const now = Date.now();
        for (const tag of this.#traps) {
          const want = tag.props.trapOid ?? '';
          if (want !== '' && want !== trapOid) continue;
          const oid = tag.props.oid ?? '';
          if (oid === '') this.#sink(tag, { trapOid, varbinds: vbs }, now);
          else if (oid in vbs) this.#sink(tag, asType(vbs[oid]!, tag.valueType), now);
        }
      },
    );
    const auth = receiver.getAuthorizer();
    if ((p.version ?? 'v2c') === 'v3') auth.addUser(v3User(p));
    else auth.addCommunity(p.community ?? 'public');
    return receiver as { close(cb?: () => void): void };
  }

  async close(): Promise<void> {
    const s = this.#session;
    this.#session = undefined;
    this.#getter?.close();
    this.#getter = undefined;
    try {
      s?.close();
    } catch {
      // closed already
    }
    const r = this.#receiver;
    this.#receiver = undefined;
    if (r) await new Promise<void>((resolve) => r.close(() => resolve()));
  }

  async watch(tags: readonly TagSpec[], sink: ValueSink): Promise<readonly TagSpec[]> {
    this.#sink = sink;
    this.#traps = tags.filter((t) => t.register === 'Trap');
    if (this.#traps.length > 0 && !this.#receiver) {
      for (const t of this.#traps) sink(t, new ReadFailure('no trapPort set on the device'), Date.now());
    }
    return tags.filter((t) => t.register !== 'Trap');
  }

  #lostOn(err: unknown): void {
    if (isTimeout(err)) {
      this.#ctx.lost(`the SNMP agent stopped answering: ${errorText(err)}`);
      throw err;
    }
  }

  async read(
    tags: readonly TagSpec[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<ReadResult[]> {
    const session = this.#session;
    if (!session) throw new Error('not connected');
    const out = new Array<ReadResult>(tags.length);
    const gets: number[] = [];
    tags.forEach((t, i) => {
      if (t.register === 'OID') gets.push(i);
    });
    // The GETs of `maxOids` each, up to `#concurrency` in flight (net-snmp matches the answers by
    // request id): the agent's turnaround and this thread's decoding and publishing overlap.
    const batches: number[][] = [];
    for (let k = 0; k < gets.length; k += this.#maxOids) batches.push(gets.slice(k, k + this.#maxOids));
    let next = 0;
    let stop = false;
    const worker = async () => {
      while (!stop && next < batches.length) {
        try {
          await this.#get(session, tags, batches[next++]!, out, early);
        } catch (err) {
          stop = true; // the agent is away: no more requests this read
          throw err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, batches.length) }, worker));
    for (let i = 0; i < tags.length; i++) {
      const t = tags[i]!;
      if (t.register === 'OID') continue;
      try {
        if (t.register === 'Walk') out[i] = await this.#walk(session, t.props.oid ?? '');
        else if (t.register === 'Table') out[i] = await this.#table(session, t.props.oid ?? '');
        else out[i] = new ReadFailure(`register ${t.register} is not read by polling`);
      } catch (err) {
        this.#lostOn(err);
        out[i] = new ReadFailure(`${t.register.toLowerCase()} ${t.props.oid}: ${errorText(err)}`);
      }
      early?.(i, out[i]!);
    }
    return out;
  }

  /** One GET of many OIDs; on v1 an error names one varbind: that tag fails, the rest is asked again. */
  async #get(
    session: Session,
    tags: readonly TagSpec[],
    idx: number[],
    out: ReadResult[],
    early?: (index: number, result: ReadResult) => void,
  ): Promise<void> {
    let left = idx;
    while (left.length > 0) {
      try {
        const encoded = this.#getter ? this.#varbinds(tags, left) : undefined;
        if (encoded) {
          const values = await this.#getter!.get(encoded);
          for (let k = 0; k < left.length; k++) {
            const i = left[k]!;
            const v = values[k]!;
            const r = (out[i] =
              v instanceof VarbindError
                ? new ReadFailure(`get ${tags[i]!.props.oid}: ${v.text}`)
                : asType(v, tags[i]!.valueType));
            early?.(i, r);
          }
          return;
        }
        const vbs = await call<Varbind[]>((cb) =>
          session.get(
            left.map((i) => tags[i]!.props.oid ?? ''),
            cb,
          ),
        );
        left.forEach((i, k) => {
          const vb = vbs[k];
          out[i] =
            !vb || netSnmp().isVarbindError(vb)
              ? new ReadFailure(`get ${tags[i]!.props.oid}: ${vb ? netSnmp().varbindError(vb) : 'no answer'}`)
              : asType(varbindValue(vb), tags[i]!.valueType);
          early?.(i, out[i]!);
        });
        return;
      } catch (err) {
        this.#lostOn(err);
        // v1 names the failed varbind (net-snmp: "NoSuchName: <oid>"); else every tag of the request fails.
        const named = /: ([0-9.]+)$/.exec(errorText(err))?.[1];
        const one = named === undefined ? -1 : left.findIndex((i) => tags[i]!.props.oid === named);
        const bad = one >= 0 ? [left[one]!] : left;
        for (const i of bad) {
          out[i] = new ReadFailure(`get ${tags[i]!.props.oid}: ${errorText(err)}`);
          early?.(i, out[i]!);
        }
        left = bad === left ? [] : left.filter((i) => i !== bad[0]);
      }
    }
  }

  /** The tags' GET varbinds, each encoded once; undefined if one is not encodable here. */
  #varbinds(tags: readonly TagSpec[], idx: readonly number[]): Buffer[] | undefined {
    const out = new Array<Buffer>(idx.length);
    for (let k = 0; k < idx.length; k++) {
      const tag = tags[idx[k]!]!;
      let vb = this.#encoded.get(tag);
      if (vb === undefined) {
        try {
          vb = encodeGetVarbind(tag.props.oid ?? '');
        } catch {
          vb = null;
        }
        this.#encoded.set(tag, vb);
      }
      if (vb === null) return undefined;
      out[k] = vb;
    }
    return out;
  }

  async #walk(session: Session, oid: string): Promise<TagValue> {
    const values: Record<string, TagValue> = {};
    let n = 0;
    await call<void>((cb) =>
      session.subtree(
        oid,
        this.#maxRep,
        (vbs: Varbind[]) => {
          for (const vb of vbs) {
            if (netSnmp().isVarbindError(vb)) continue;
            values[vb.oid.startsWith(`${oid}.`) ? vb.oid.slice(oid.length + 1) : vb.oid] = varbindValue(vb);
            if (++n >= MAX_WALK) return true;
          }
          return undefined;
        },
        (err: Error | null) => cb(err),
      ),
    );
    return values;
  }

  async #table(session: Session, oid: string): Promise<TagValue> {
    const table = await call<Record<string, Record<string, unknown>>>((cb) =>
      session.table(oid, this.#maxRep, cb as never),
    );
    const rows: Record<string, Record<string, TagValue>> = {};
    for (const [index, cols] of Object.entries(table ?? {})) {
      const row: Record<string, TagValue> = {};
      for (const [col, v] of Object.entries(cols)) row[col] = varbindValue({ oid: '', value: v as never });
      rows[index] = row;
    }
    return rows;
  }

  async write(tag: TagSpec, value: unknown): Promise<void> {
    const session = this.#session;
    if (!session) throw new Error('not connected');
    if (tag.register !== 'OID') throw new Error(`register ${tag.register} is read-only; write to OID`);
    const type = setType(tag);
    const v =
      type === netSnmp().ObjectType.OctetString ||
      type === netSnmp().ObjectType.IpAddress ||
      type === netSnmp().ObjectType.OID
        ? String(value)
        : typeof value === 'boolean'
          ? Number(value)
          : value;
    try {
      const vbs = await call<Varbind[]>((cb) =>
        session.set([{ oid: tag.props.oid ?? '', type, value: v as never }], cb),
      );
      if (vbs[0] && netSnmp().isVarbindError(vbs[0])) throw new Error(netSnmp().varbindError(vbs[0]));
    } catch (err) {
      this.#lostOn(err);
      throw new Error(`set ${tag.props.oid}: ${errorText(err)}`);
    }
  }
}

let store: { translate(oid: string, format: string): string } | undefined;
/** The MIB name of an OID (`SNMPv2-MIB::sysDescr`), from the MIBs net-snmp ships; null if unknown. */
function mibName(oid: string): string | null {
  try {
    store ??= netSnmp().createModuleStore() as typeof store;
    const name = store!.translate(oid, netSnmp().OidFormat.module);
    return name && name !== oid ? name : null;
  } catch {
    return null;
  }
}

/** Walks `browseRoot`: a folder per object (the OID without its instance), a leaf per instance. */
export async function browseSnmp(p: Record<string, string>): Promise<BrowseNode[]> {
  const session = openSession(p);
  const root = p.browseRoot || '1.3.6.1.2.1';
  const found: Varbind[] = [];
  try {
    await call<void>((cb) =>
      session.subtree(
        root,
        Number(p.maxRepetitions ?? 20) || 20,
        (vbs: Varbind[]) => {
          for (const vb of vbs) if (!netSnmp().isVarbindError(vb)) found.push(vb);
          return found.length >= MAX_BROWSE ? true : undefined;
        },
        (err: Error | null) => cb(err),
      ),
    );
  } finally {
    session.close();
  }
  const folders = new Map<string, BrowseNode>();
  for (const vb of found) {
    // Scalars end in .0; table cells in .<column>.<index>: the folder is the object or the column.
    const arcs = vb.oid.split('.');
    const object = arcs.slice(0, -1).join('.');
    const objName = mibName(object);
    let folder = folders.get(object);
    if (!folder) {
      folder = { Name: objName ? objName.replace(/^.*::/, '') : object, Description: object, Children: [] };
      folders.set(object, folder);
    }
    const v = varbindValue(vb);
    const numeric = typeof v === 'number';
    const instance = arcs[arcs.length - 1]!;
    folder.Children!.push({
      Name: objName ? `${objName.replace(/^.*::/, '')}.${instance}` : vb.oid,
      Description: `${vb.oid}: ${String(v).slice(0, 80)}`,
      RegisterName: 'OID',
      ValueType: numeric ? (vb.type === netSnmp().ObjectType.Integer ? 'int32' : 'uint64') : 'string',
      Properties: [{ Name: 'oid', Value: vb.oid }],
    });
  }
  // Folder names repeat when the MIB is unknown for some: keep them apart by the OID.
  const seen = new Set<string>();
  for (const [oid, f] of folders) {
    if (seen.has(f.Name)) f.Name = oid;
    seen.add(f.Name);
  }
  return [...folders.values()];
}

export const snmpDriver: DriverFactory = {
  key: 'snmp',
  create: (device, ctx) => new SnmpSession(device, ctx),
  browse: async (device) => browseSnmp(device.properties),
};
