/**
 * GETs of v1/v2c `OID` tags on a UDP socket of the driver's own, encoded and decoded by
 * `snmp-ber.ts` (net-snmp's session stays for the rest). As net-snmp's session: a request id per
 * request (answers matched by it, whoever sends them), the request sent again on each timeout
 * `retries` times then failed with `RequestTimedOutError`, an answer whose version or community
 * differs from the request's, or whose count of varbinds differs, failed as net-snmp fails it, an
 * error status failed with net-snmp's message (`NoSuchName: <oid>` names the varbind), and a
 * datagram that cannot be decoded dropped (the request then times out).
 */
import { createSocket, type Socket } from 'node:dgram';
import { netSnmp } from './snmp-lib.js';
import type { TagValue } from '../types.js';
import {
  BerError,
  encodeGetRequest,
  oidText,
  readResponseHead,
  readVarbinds,
  T,
  VARBIND_ERROR,
  type ResponseHead,
} from './snmp-ber.js';

/** A varbind the agent answered with noSuchObject, noSuchInstance or endOfMibView. */
export class VarbindError {
  constructor(readonly text: string) {}
}

/** net-snmp's RequestTimedOutError (not in its typings as a value): the driver tells it by name. */
function timedOut(): Error {
  const err = new Error('Request timed out');
  err.name = 'RequestTimedOutError';
  return err;
}

interface Pending {
  message: Buffer;
  count: number;
  retries: number;
  timer: NodeJS.Timeout | undefined;
  resolve: (values: (TagValue | VarbindError)[]) => void;
  reject: (err: Error) => void;
}

/** In flight at most: the driver's `maxConcurrentRequests` (16); this bound guards the id space. */
const MAX_PENDING = 1024;

export class SnmpGetter {
  readonly #socket: Socket;
  readonly #pending = new Map<number, Pending>();
  readonly #community: Buffer;
  #nextId = 1 + Math.floor(Math.random() * 0x3fffffff);
  #closed = false;

  constructor(
    readonly host: string,
    readonly port: number,
    readonly version: number,
    community: string,
    readonly timeoutMs: number,
    readonly retries: number,
  ) {
    this.#community = Buffer.from(community, 'utf8');
    this.#socket = createSocket('udp4');
    this.#socket.on('message', (buf: Buffer) => this.#onMessage(buf));
    this.#socket.on('error', () => undefined);
    this.#socket.unref();
  }

  /** GETs the varbinds (each from `encodeGetVarbind`): the values in order, or a VarbindError. */
  get(varbinds: readonly Buffer[]): Promise<(TagValue | VarbindError)[]> {
    if (this.#closed) return Promise.reject(new Error('session closed'));
    if (this.#pending.size >= MAX_PENDING) return Promise.reject(new Error('too many requests in flight'));
    const id = this.#nextId;
    this.#nextId = id >= 0x7fffffff ? 1 : id + 1;
    const message = encodeGetRequest(this.version, this.#community, id, varbinds);
    return new Promise((resolve, reject) => {
      const p: Pending = {
        message,
        count: varbinds.length,
        retries: this.retries,
        timer: undefined,
        resolve,
        reject,
      };
      this.#pending.set(id, p);
      this.#send(id, p);
    });
  }

  #send(id: number, p: Pending): void {
    this.#socket.send(p.message, this.port, this.host, (err) => {
      if (err) {
        this.#settle(id)?.reject(err);
        return;
      }
      if (!this.#pending.has(id)) return;
      p.timer = setTimeout(() => {
        if (!this.#pending.has(id)) return;
        if (p.retries-- > 0) this.#send(id, p);
        else this.#settle(id)?.reject(timedOut());
      }, this.timeoutMs);
    });
  }

  #settle(id: number): Pending | undefined {
    const p = this.#pending.get(id);
    if (!p) return undefined;
    this.#pending.delete(id);
    clearTimeout(p.timer);
    return p;
  }

  #onMessage(buf: Buffer): void {
    let head: ResponseHead;
    try {
      head = readResponseHead(buf);
    } catch {
      return; // not a message we can read: as net-snmp, dropped
    }
    const p = this.#pending.get(head.requestId);
    if (!p) return;
    let values: (TagValue | VarbindError)[];
    let oids: number[];
    try {
      ({ values, oids } = decode(buf, head));
    } catch (err) {
      if (err instanceof BerError) return; // dropped: the request times out, as with net-snmp
      throw err;
    }
    this.#settle(head.requestId);
    const err = this.#check(buf, head, p, values, oids);
    if (err) p.reject(err);
    else p.resolve(values);
  }

  #check(
    buf: Buffer,
    head: ResponseHead,
    p: Pending,
    values: readonly unknown[],
    oids: readonly number[],
  ): Error | undefined {
    const lib = netSnmp();
    const R = lib.ResponseInvalidCode;
    if (head.version !== this.version) {
      return new lib.ResponseInvalidError(
        `Version in request '${this.version}' does not match version in response '${head.version}'`,
        R.EVersionNoMatch,
      );
    }
    const community = buf.subarray(head.communityStart, head.communityEnd);
    if (!community.equals(this.#community)) {
      return new lib.ResponseInvalidError(
        `Community '${this.#community.toString()}' in request does not match community '${community.toString()}' in response`,
        R.ECommunityNoMatch,
      );
    }
    if (head.pduType !== T.GetResponse) {
      return new lib.ResponseInvalidError(
        `Unknown PDU type '${head.pduType}' in response`,
        R.EUnknownPduType,
      );
    }
    if (head.errorStatus > 0) {
      const status = lib.ErrorStatus as unknown as Record<number, string>;
      // As net-snmp: an unknown status is named by GeneralError's number.
      const text = status[head.errorStatus] ?? String(lib.ErrorStatus.GeneralError);
      const code = head.errorStatus in status ? head.errorStatus : lib.ErrorStatus.GeneralError;
      const at = head.errorIndex - 1;
      if (at < 0 || at >= values.length) return new lib.RequestFailedError(text, code);
      return new lib.RequestFailedError(`${text}: ${oidText(buf, oids[2 * at]!, oids[2 * at + 1]!)}`, code);
    }
    if (values.length !== p.count) {
      return new lib.ResponseInvalidError('Requested OIDs do not match response OIDs', R.EReqResOidNoMatch);
    }
    return undefined;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(new Error('Socket forcibly closed'));
    try {
      this.#socket.close();
    } catch {
      // closed already
    }
  }
}

/** The values of a response, varbind errors as net-snmp's `varbindError` names them. */
function decode(buf: Buffer, head: ResponseHead) {
  const values: (TagValue | VarbindError)[] = [];
  const oids: number[] = [];
  readVarbinds(buf, head, (_k, type, value, oidStart, oidEnd) => {
    oids.push(oidStart, oidEnd);
    values.push(
      type in VARBIND_ERROR
        ? new VarbindError(`${VARBIND_ERROR[type]}: ${oidText(buf, oidStart, oidEnd)}`)
        : value,
    );
  });
  return { values, oids };
}
