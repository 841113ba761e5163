/**
 * One client connection of the NATS gateway: a byte parser of the client protocol working on the
 * socket's Buffers (no line strings, no per-message string building), and a writer that gathers
 * every outgoing MSG of one tick into one buffer and writes it once.
 */
import type { Socket } from 'node:net';
import type { Message, Subscription } from '../bus.js';
import { EMPTY, knownLength } from '../payload.js';
import { isValidPattern, isValidSubject, patternCovers, patternMatches } from '../subject.js';
import { InvalidSubjectError } from '../errors.js';
import {
  ERR,
  NO_RESPONDERS,
  OK,
  PING,
  PONG,
  errLine,
  pubViolation,
  subViolation,
  type ConnectOptions,
} from './protocol.js';
import type { AccessGrant, GatewayCore } from './server.js';

const OUT_SIZE = 64 * 1024;
const CR = 13;
const LF = 10;
const SP = 32;
const TAB = 9;
const RESPONSES_KEPT = 4096;
const PERMISSION_CACHE = 1024;

interface SubContext {
  sid: string;
  sidBytes: Buffer;
}

export interface ConnectionInfo {
  cid: number;
  name: string;
  lang: string;
  version: string;
  address: string;
  local: boolean;
  tls: boolean;
  accessKey: { id: string; name: string } | null;
  connectedAt: string;
  subscriptions: { sid: string; subject: string; queue?: string; received: number }[];
  msgsIn: number;
  bytesIn: number;
  msgsOut: number;
  bytesOut: number;
  pendingBytes: number;
}

export class Connection {
  readonly cid: number;
  readonly socket: Socket;
  readonly address: string;
  readonly local: boolean;
  readonly tls: boolean;
  readonly connectedAt = Date.now();
  readonly #core: GatewayCore;
  readonly #subs = new Map<string, Subscription>();
  readonly #onMsg: (msg: Message, sub: Subscription) => void;

  // CONNECT state
  #connected = false;
  #verbose = false;
  #pedantic = false;
  #echo = true;
  #headers = false;
  #noResponders = false;
  name = '';
  lang = '';
  version = '';
  grant: AccessGrant | null = null;
  #needsAuth: boolean;
  #authTimer: NodeJS.Timeout | undefined;

  // counters
  msgsIn = 0;
  bytesIn = 0;
  msgsOut = 0;
  bytesOut = 0;
  pingsOut = 0;

  // parser
  #rest: Buffer | undefined;
  #chunks: Buffer[] | undefined;
  #chunksLen = 0;
  #want = 0;
  #paused = false;
  #pubPending = false;
  #pubSubject = '';
  #pubReply = '';
  #pubHdr = -1;
  #pubSize = 0;
  readonly #args = new Int32Array(16);

  // writer
  #out: Buffer = Buffer.allocUnsafe(OUT_SIZE);
  #outLen = 0;
  #dirty = false;
  closed = false;

  // permissions
  readonly #responses = new Set<string>();
  readonly #pubAllowed = new Map<string, boolean>();

  constructor(core: GatewayCore, socket: Socket, cid: number, address: string, local: boolean, tls: boolean) {
    this.#core = core;
    this.socket = socket;
    this.cid = cid;
    this.address = address;
    this.local = local;
    this.tls = tls;
    this.#needsAuth = !local;
    this.#onMsg = (msg, sub) => this.#writeMsg(sub, msg);
    if (this.#needsAuth && core.authTimeout > 0) {
      this.#authTimer = setTimeout(() => this.fail(ERR.authTimeout), core.authTimeout);
      this.#authTimer.unref();
    }
  }

  // --- reading -------------------------------------------------------------------------------

  onData(chunk: Buffer): void {
    if (this.closed) return;
    this.pingsOut = 0;
    if (this.#paused && this.#chunks === undefined) {
      this.#chunks = this.#rest ? [this.#rest, chunk] : [chunk];
      this.#chunksLen = (this.#rest?.length ?? 0) + chunk.length;
      this.#rest = undefined;
      return;
    }
    if (this.#chunks !== undefined) {
      this.#chunks.push(chunk);
      this.#chunksLen += chunk.length;
      if (this.#chunksLen < this.#want || this.#paused) return;
      chunk = Buffer.concat(this.#chunks, this.#chunksLen);
      this.#chunks = undefined;
      this.#chunksLen = 0;
    } else if (this.#rest !== undefined) {
      const rest = this.#rest;
      this.#rest = undefined;
      if (this.#want > rest.length + chunk.length || this.#paused) {
        this.#chunks = [rest, chunk];
        this.#chunksLen = rest.length + chunk.length;
        return;
      }
      chunk = Buffer.concat([rest, chunk]);
    }
    this.#parse(chunk, 0);
  }

  #keep(buf: Buffer, pos: number, want: number): void {
    this.#want = want;
    if (pos < buf.length) this.#rest = buf.subarray(pos);
  }

  #parse(buf: Buffer, pos: number): void {
    const len = buf.length;
    const maxLine = this.#core.maxControlLine;
    while (pos < len) {
      if (this.#pubPending) {
        const size = this.#pubSize;
        if (len - pos < size + 2) {
          this.#keep(buf, pos, size + 2);
          return;
        }
        if (buf[pos + size] !== CR || buf[pos + size + 1] !== LF) {
          this.fail(ERR.unknownOp);
          return;
        }
        this.#pubPending = false;
        this.#publish(buf, pos, size);
        if (this.closed) return;
        pos += size + 2;
        continue;
      }
      const nl = buf.indexOf(LF, pos);
      if (nl < 0) {
        if (len - pos > maxLine) {
          this.fail(ERR.maxControlLine);
          return;
        }
        this.#keep(buf, pos, 0);
        return;
      }
      let end = nl;
      if (end > pos && buf[end - 1] === CR) end--;
      if (end - pos > maxLine) {
        this.fail(ERR.maxControlLine);
        return;
      }
      const go = this.#op(buf, pos, end);
      pos = nl + 1;
      if (!go) {
        if (!this.closed) this.#keep(buf, pos, 0);
        return;
      }
    }
    this.#want = 0;
  }

  /** Splits the arguments after the op word into #args (start, end pairs); answers their count. */
  #split(buf: Buffer, pos: number, end: number): number {
    const a = this.#args;
    let n = 0;
    let i = pos;
    while (i < end) {
      let c = buf[i]!;
      while ((c === SP || c === TAB) && i < end) c = buf[++i]!;
      if (i >= end) break;
      const s = i;
      while (i < end && c !== SP && c !== TAB) c = buf[++i]!;
      if (n < 8) {
        a[n * 2] = s;
        a[n * 2 + 1] = i;
      }
      n++;
    }
    return n;
  }

  #int(buf: Buffer, k: number): number {
    const a = this.#args;
    const s = a[k * 2]!;
    const e = a[k * 2 + 1]!;
    if (e - s > 15 || e === s) return -1;
    let v = 0;
    for (let i = s; i < e; i++) {
      const d = buf[i]! - 48;
      if (d < 0 || d > 9) return -1;
      v = v * 10 + d;
    }
    return v;
  }

  #str(buf: Buffer, k: number): string {
    return buf.toString('utf8', this.#args[k * 2], this.#args[k * 2 + 1]);
  }

  /** Handles one control line; false stops the parser (closed, or waiting for authentication). */
  #op(buf: Buffer, pos: number, end: number): boolean {
    const c0 = buf[pos]! | 0x20;
    const c1 = (buf[pos + 1] ?? 0) | 0x20;
    if (c0 === 0x70 /* p */) {
      const c2 = (buf[pos + 2] ?? 0) | 0x20;
      const c3 = (buf[pos + 3] ?? 0) | 0x20;
      if (c1 === 0x75 && c2 === 0x62 && ws(buf, pos + 3, end) && end > pos + 3)
        return this.#pub(buf, pos + 3, end, false);
      if (c1 === 0x69 && c2 === 0x6e && c3 === 0x67 && ws(buf, pos + 4, end)) {
        if (!this.#authorised()) return false;
        this.#write(PONG);
        return true;
      }
      if (c1 === 0x6f && c2 === 0x6e && c3 === 0x67 && ws(buf, pos + 4, end)) {
        this.pingsOut = 0;
        return true;
      }
    } else if (c0 === 0x68 /* h */) {
      if (matchWord(buf, pos, 'hpub') && ws(buf, pos + 4, end) && end > pos + 4) {
        // HPUB from a client that did not announce headers in CONNECT: closed, as nats-server does.
        if (!this.#headers && this.#connected) return this.#protocolError();
        return this.#pub(buf, pos + 4, end, true);
      }
    } else if (c0 === 0x73 /* s */) {
      if (c1 === 0x75 && ((buf[pos + 2] ?? 0) | 0x20) === 0x62 && ws(buf, pos + 3, end))
        return this.#sub(buf, pos + 3, end);
    } else if (c0 === 0x75 /* u */) {
      if (matchWord(buf, pos, 'unsub') && ws(buf, pos + 5, end)) return this.#unsub(buf, pos + 5, end);
    } else if (c0 === 0x63 /* c */) {
      if (matchWord(buf, pos, 'connect') && ws(buf, pos + 7, end))
        return this.#connect(buf.toString('utf8', pos + 7, end));
    }
    this.fail(ERR.unknownOp);
    return false;
  }

  #authorised(): boolean {
    if (this.#needsAuth && !this.#connected) {
      this.#core.authFailed(this, 'protocol before CONNECT');
      this.fail(ERR.authViolation);
      return false;
    }
    return true;
  }

  #pub(buf: Buffer, pos: number, end: number, withHeaders: boolean): boolean {
    if (!this.#authorised()) return false;
    const n = this.#split(buf, pos, end);
    let hdr = -1;
    let size: number;
    let reply = '';
    if (withHeaders) {
      if (n !== 3 && n !== 4) return this.#protocolError();
      hdr = this.#int(buf, n - 2);
      size = this.#int(buf, n - 1);
      if (hdr < 0 || size < 0 || hdr > size) return this.#protocolError();
    } else {
      if (n !== 2 && n !== 3) return this.#protocolError();
      size = this.#int(buf, n - 1);
      if (size < 0) return this.#protocolError();
    }
    if (size > this.#core.maxPayload) {
      this.fail(ERR.maxPayload);
      return false;
    }
    if ((withHeaders && n === 4) || (!withHeaders && n === 3)) reply = this.#str(buf, 1);
    this.#pubSubject = this.#str(buf, 0);
    this.#pubReply = reply;
    this.#pubHdr = hdr;
    this.#pubSize = size;
    this.#pubPending = true;
    return true;
  }

  /** Malformed arguments: nats-server closes such a connection without a word, and so do we. */
  #protocolError(): boolean {
    this.#core.protocolError(this, 'malformed arguments');
    this.close('malformed arguments', true);
    return false;
  }

  #publish(buf: Buffer, pos: number, size: number): void {
    const subject = this.#pubSubject;
    const reply = this.#pubReply;
    this.msgsIn++;
    this.bytesIn += size;
    if (this.#pedantic && (!isValidSubject(subject) || (reply !== '' && !isValidSubject(reply)))) {
      this.#write(errLine(ERR.invalidPublishSubject));
      return;
    }
    if (this.grant !== null && this.grant.publish !== null && !this.#mayPublish(subject)) {
      this.#core.permissionDenied(this, 'publish', subject);
      this.#write(errLine(pubViolation(subject)));
      return;
    }
    let headers: Buffer | undefined;
    let data: Buffer;
    const hdr = this.#pubHdr;
    if (hdr >= 0) {
      headers = hdr > 0 ? buf.subarray(pos, pos + hdr) : undefined;
      data = buf.subarray(pos + hdr, pos + size);
    } else {
      data = size === 0 ? EMPTY : buf.subarray(pos, pos + size);
    }
    // +OK goes before the message reaches this connection's own subscriptions, as in nats-server.
    if (this.#verbose) this.#write(OK);
    let delivered: number;
    try {
      delivered = this.#core.hub.dispatch(subject, data, reply, headers, this, true);
    } catch (err) {
      // Not pedantic: a subject that is not valid reaches nobody, silently (as in nats-server).
      if (err instanceof InvalidSubjectError) return;
      throw err;
    }
    if (delivered === 0 && reply !== '' && this.#noResponders && !this.#core.external) {
      this.#core.hub.dispatch(reply, EMPTY, '', NO_RESPONDERS, undefined, false);
    }
  }

  #mayPublish(subject: string): boolean {
    if (this.#responses.delete(subject)) return true;
    let ok = this.#pubAllowed.get(subject);
    if (ok === undefined) {
      ok = this.grant!.publish!.some((p) => patternMatches(p, subject));
      if (this.#pubAllowed.size >= PERMISSION_CACHE) this.#pubAllowed.clear();
      this.#pubAllowed.set(subject, ok);
    }
    return ok;
  }

  #sub(buf: Buffer, pos: number, end: number): boolean {
    if (!this.#authorised()) return false;
    const n = this.#split(buf, pos, end);
    if (n !== 2 && n !== 3) return this.#protocolError();
    const subject = this.#str(buf, 0);
    const queue = n === 3 ? this.#str(buf, 1) : undefined;
    const sid = this.#str(buf, n - 1);
    if (!isValidPattern(subject)) {
      this.#write(errLine(ERR.invalidSubject));
      return true;
    }
    const sub = this.grant?.subscribe;
    if (sub && !subject.startsWith('_INBOX.') && !sub.some((allowed) => patternCovers(allowed, subject))) {
      this.#core.permissionDenied(this, 'subscribe', subject);
      this.#write(errLine(subViolation(subject, queue)));
      return true;
    }
    if (this.#subs.has(sid)) {
      if (this.#verbose) this.#write(OK);
      return true;
    }
    const ctx: SubContext = { sid, sidBytes: Buffer.from(sid, 'utf8') };
    const s = this.#core.hub.subscribe(subject, {
      ...(queue === undefined ? {} : { queue }),
      callback: this.#onMsg,
      owner: ctx,
      ...(this.#echo ? {} : { skipOrigin: this }),
    });
    this.#subs.set(sid, s);
    if (this.#verbose) this.#write(OK);
    return true;
  }

  #unsub(buf: Buffer, pos: number, end: number): boolean {
    if (!this.#authorised()) return false;
    const n = this.#split(buf, pos, end);
    if (n !== 1 && n !== 2) return this.#protocolError();
    const sid = this.#str(buf, 0);
    const max = n === 2 ? this.#int(buf, 1) : 0;
    if (max < 0) return this.#protocolError();
    const s = this.#subs.get(sid);
    if (s) {
      if (max > 0) s.autoUnsubscribe(max);
      else s.unsubscribe();
      if (s.closed) this.#subs.delete(sid);
    }
    if (this.#verbose) this.#write(OK);
    return true;
  }

  #connect(json: string): boolean {
    let opts: ConnectOptions;
    try {
      const parsed: unknown = JSON.parse(json);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      opts = parsed as ConnectOptions;
    } catch {
      // nats-server closes the socket without a word on a CONNECT it cannot read.
      this.close('unparsable CONNECT');
      return false;
    }
    // nats-server's defaults when CONNECT does not say: verbose, pedantic and echo on.
    this.#verbose = opts.verbose ?? true;
    this.#pedantic = opts.pedantic ?? true;
    this.#echo = opts.echo ?? true;
    this.#headers = opts.headers === true;
    this.#noResponders = opts.no_responders === true;
    this.name = typeof opts.name === 'string' ? opts.name : '';
    this.lang = typeof opts.lang === 'string' ? opts.lang : '';
    this.version = typeof opts.version === 'string' ? opts.version : '';
    if (opts.protocol !== undefined && (opts.protocol < 0 || opts.protocol > 1)) {
      this.fail(ERR.invalidProtocol);
      return false;
    }
    if (this.#noResponders && !this.#headers) {
      this.fail(ERR.noRespondersNeedsHeaders);
      return false;
    }
    if (!this.#echo) for (const s of this.#subs.values()) this.#resubscribe(s);
    if (!this.#needsAuth || this.#connected) return this.#connectDone();
    const key =
      (typeof opts.pass === 'string' && opts.pass) ||
      (typeof opts.auth_token === 'string' && opts.auth_token);
    if (!key) {
      this.#core.authFailed(this, 'no access key');
      this.fail(ERR.authViolation);
      return false;
    }
    const grant = this.#core.authenticate(key);
    if (grant instanceof Promise) {
      this.#paused = true;
      this.socket.pause();
      grant.then(
        (g) => this.#authenticated(g),
        () => this.#authenticated(null),
      );
      return false;
    }
    this.#authenticated(grant, false);
    return !this.closed;
  }

  #authenticated(grant: AccessGrant | null, resume = true): void {
    if (this.closed) return;
    if (!grant) {
      this.#core.authFailed(this, 'unknown or revoked access key');
      this.fail(ERR.authViolation);
      return;
    }
    this.grant = grant;
    this.#connectDone();
    if (!resume) return;
    this.#paused = false;
    this.socket.resume();
    let rest: Buffer | undefined = this.#rest;
    this.#rest = undefined;
    if (this.#chunks) {
      rest = Buffer.concat(this.#chunks, this.#chunksLen);
      this.#chunks = undefined;
      this.#chunksLen = 0;
    }
    if (rest) this.#parse(rest, 0);
  }

  #connectDone(): boolean {
    this.#connected = true;
    if (this.#authTimer) clearTimeout(this.#authTimer);
    this.#authTimer = undefined;
    if (this.#verbose) this.#write(OK);
    return true;
  }

  /** CONNECT may switch echo off after SUBs were sent (rare): re-create those subscriptions. */
  #resubscribe(old: Subscription): void {
    const ctx = old.owner as SubContext;
    old.unsubscribe();
    const s = this.#core.hub.subscribe(old.pattern, {
      ...(old.queue === undefined ? {} : { queue: old.queue }),
      callback: this.#onMsg,
      owner: ctx,
      skipOrigin: this,
    });
    this.#subs.set(ctx.sid, s);
  }

  // --- writing -------------------------------------------------------------------------------

  #reserve(n: number): void {
    if (this.#outLen + n <= this.#out.length) return;
    if (this.#outLen > 0) this.flush();
    if (n > this.#out.length) this.#out = Buffer.allocUnsafe(Math.max(n, OUT_SIZE));
  }

  #markDirty(): void {
    if (!this.#dirty) {
      this.#dirty = true;
      this.#core.scheduleFlush(this);
    }
  }

  #write(bytes: Buffer): void {
    if (this.closed) return;
    this.#reserve(bytes.length);
    bytes.copy(this.#out, this.#outLen);
    this.#outLen += bytes.length;
    this.#markDirty();
  }

  #writeMsg(sub: Subscription, msg: Message): void {
    if (this.closed) return;
    const ctx = sub.owner as SubContext;
    const payload = msg.bytes();
    const subject = msg.subject;
    const reply = msg.reply;
    const hdr = this.#headers ? msg.headers : undefined;
    const plen = payload.length;
    const hlen = hdr === undefined ? 0 : hdr.length;
    this.#reserve(48 + 3 * (subject.length + reply.length) + ctx.sidBytes.length + plen + hlen);
    const o = this.#out;
    let p = this.#outLen;
    if (hdr !== undefined) o[p++] = 72; // H
    o[p++] = 77; // M
    o[p++] = 83; // S
    o[p++] = 71; // G
    o[p++] = SP;
    p += utf8Write.call(o, subject, p);
    o[p++] = SP;
    const sid = ctx.sidBytes;
    for (let i = 0; i < sid.length; i++) o[p++] = sid[i]!;
    o[p++] = SP;
    if (reply !== '') {
      p += utf8Write.call(o, reply, p);
      o[p++] = SP;
      if (this.grant?.publish) this.#rememberResponse(reply);
    }
    if (hdr !== undefined) {
      p = writeInt(o, p, hlen);
      o[p++] = SP;
      p = writeInt(o, p, hlen + plen);
    } else {
      p = writeInt(o, p, plen);
    }
    o[p++] = CR;
    o[p++] = LF;
    if (hdr !== undefined) {
      hdr.copy(o, p);
      p += hlen;
    }
    if (plen > 0) {
      payload.copy(o, p);
      p += plen;
    }
    o[p++] = CR;
    o[p++] = LF;
    this.#outLen = p;
    this.msgsOut++;
    this.bytesOut += plen + hlen;
    if (knownLength(msg.data) === 0) msg.counters.bytesOut += plen;
    if (sub.received >= sub.max) this.#subs.delete(ctx.sid);
    this.#markDirty();
    if (p + this.socket.writableLength > this.#core.maxPending) this.#slowConsumer(msg);
  }

  #rememberResponse(reply: string): void {
    if (this.#responses.size >= RESPONSES_KEPT) {
      const first = this.#responses.values().next().value;
      if (first !== undefined) this.#responses.delete(first);
    }
    this.#responses.add(reply);
  }

  /** Writes what was gathered since the last flush. */
  flush(): void {
    this.#dirty = false;
    if (this.#outLen === 0 || this.closed) return;
    const chunk = this.#out.subarray(0, this.#outLen);
    this.#out = Buffer.allocUnsafe(OUT_SIZE);
    this.#outLen = 0;
    this.socket.write(chunk);
    if (this.socket.writableLength > this.#core.maxPending) this.#slowConsumer(undefined);
  }

  /** Bytes written but not yet taken by the peer. */
  get pendingBytes(): number {
    return this.#outLen + (this.socket.writableLength ?? 0);
  }

  #slowConsumer(msg: Message | undefined): void {
    if (this.closed) return;
    // What is gathered but not written is dropped; the error goes behind what the socket holds.
    this.#outLen = 0;
    if (msg) {
      msg.counters.drops++;
      msg.counters.slowConsumers++;
    }
    this.#core.slowConsumer(this, msg?.subject);
    this.fail(ERR.slowConsumer);
  }

  /** Sends `-ERR '<text>'` and closes the connection. */
  fail(text: string): void {
    if (this.closed) return;
    this.#write(errLine(text));
    this.flush();
    this.#core.protocolError(this, text);
    this.close(text, true);
  }

  sendPing(): void {
    this.pingsOut++;
    this.#write(PING);
  }

  /** Closes the connection; `graceful` lets written bytes go out first (at most the grace time). */
  close(reason: string, graceful = false): void {
    if (this.closed) return;
    this.closed = true;
    if (this.#authTimer) clearTimeout(this.#authTimer);
    for (const s of this.#subs.values()) s.unsubscribe();
    this.#subs.clear();
    this.#core.closed(this, reason);
    if (graceful) {
      this.socket.end();
      setTimeout(() => this.socket.destroy(), this.#core.closeGrace).unref();
    } else {
      this.socket.destroy();
    }
  }

  info(): ConnectionInfo {
    return {
      cid: this.cid,
      name: this.name,
      lang: this.lang,
      version: this.version,
      address: this.address,
      local: this.local,
      tls: this.tls,
      accessKey: this.grant ? { id: this.grant.keyId, name: this.grant.name } : null,
      connectedAt: new Date(this.connectedAt).toISOString(),
      subscriptions: [...this.#subs.values()].map((s) => ({
        sid: (s.owner as SubContext).sid,
        subject: s.pattern,
        ...(s.queue === undefined ? {} : { queue: s.queue }),
        received: s.received,
      })),
      msgsIn: this.msgsIn,
      bytesIn: this.bytesIn,
      msgsOut: this.msgsOut,
      bytesOut: this.bytesOut,
      pendingBytes: this.pendingBytes,
    };
  }

  get subscriptionCount(): number {
    return this.#subs.size;
  }
}

/** Whether position `i` ends the op word: end of line, space or tab. */
function ws(buf: Buffer, i: number, end: number): boolean {
  return i === end || buf[i] === SP || buf[i] === TAB;
}

type Utf8Write = (this: Buffer, s: string, offset: number) => number;
/** Buffer's native UTF-8 writer (what `buf.write` calls after checking its arguments). */
const nativeUtf8Write = (Buffer.prototype as unknown as { utf8Write?: Utf8Write }).utf8Write;
const utf8Write: Utf8Write =
  nativeUtf8Write ??
  function (this: Buffer, s: string, offset: number) {
    return this.write(s, offset);
  };

function matchWord(buf: Buffer, pos: number, word: string): boolean {
  for (let i = 0; i < word.length; i++) {
    if (((buf[pos + i] ?? 0) | 0x20) !== word.charCodeAt(i)) return false;
  }
  return true;
}

function writeInt(o: Buffer, p: number, v: number): number {
  if (v < 10) {
    o[p] = 48 + v;
    return p + 1;
  }
  let digits = 0;
  for (let x = v; x > 0; x = Math.floor(x / 10)) digits++;
  let q = p + digits;
  for (let x = v; x > 0; x = Math.floor(x / 10)) o[--q] = 48 + (x % 10);
  return p + digits;
}
