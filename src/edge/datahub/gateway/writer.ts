/**
 * The writer of one connection: every outgoing line and MSG of one event-loop turn is gathered in
 * one buffer and written once (the gateway flushes its dirty connections in a microtask). Past
 * `maxPending` bytes not yet taken by the peer, the connection is cut as a slow consumer.
 */
import type { Message, Subscription } from '../bus.js';
import { knownLength } from '../payload.js';
import type { Connection, SubContext } from './connection.js';
import { CR, LF, SP } from './parser.js';

const OUT_SIZE = 64 * 1024;

export class Writer {
  readonly #conn: Connection;
  #out: Buffer = Buffer.allocUnsafe(OUT_SIZE);
  #outLen = 0;
  #dirty = false;

  constructor(conn: Connection) {
    this.#conn = conn;
  }

  #reserve(n: number): void {
    if (this.#outLen + n <= this.#out.length) return;
    if (this.#outLen > 0) this.flush();
    if (n > this.#out.length) this.#out = Buffer.allocUnsafe(Math.max(n, OUT_SIZE));
  }

  #markDirty(): void {
    if (!this.#dirty) {
      this.#dirty = true;
      this.#conn.core.scheduleFlush(this.#conn);
    }
  }

  /** Queues fixed bytes (`+OK`, `PONG`, `-ERR ...`). */
  write(bytes: Buffer): void {
    if (this.#conn.closed) return;
    this.#reserve(bytes.length);
    bytes.copy(this.#out, this.#outLen);
    this.#outLen += bytes.length;
    this.#markDirty();
  }

  /** Queues `MSG` (or `HMSG`) for a message of the bus that matched a subscription. */
  writeMsg(sub: Subscription, msg: Message): void {
    const conn = this.#conn;
    if (conn.closed) return;
    const hdr = conn.headers ? msg.headers : undefined;
    // A payload its publisher makes as text (the acquisition's values) is written straight into
    // the buffer: no Buffer per message and one copy fewer.
    const text = hdr === undefined ? msg.encodedText() : undefined;
    const payload = text === undefined ? msg.bytes() : undefined;
    const ctx = sub.owner as SubContext;
    const subject = msg.subject;
    const reply = msg.reply;
    const hlen = hdr === undefined ? 0 : hdr.length;
    const room = payload !== undefined ? payload.length : 3 * text!.length;
    this.#reserve(48 + 3 * (subject.length + reply.length) + ctx.sidBytes.length + room + hlen);
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
      if (conn.grant?.publish) conn.permissions.rememberResponse(reply);
    }
    let plen: number;
    if (payload === undefined) {
      // The length comes before the payload: the text is written where a length of as many digits
      // as its characters puts it (its UTF-8 bytes when it is ASCII), moved if the bytes differ.
      const guess = digits(text!.length);
      const start = p + guess + 2;
      plen = utf8Write.call(o, text!, start);
      const d = digits(plen);
      if (d !== guess) o.copyWithin(start + d - guess, start, start + plen);
      p = writeInt(o, p, plen);
      o[p++] = CR;
      o[p++] = LF;
      p += plen;
    } else {
      plen = payload.length;
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
    }
    o[p++] = CR;
    o[p++] = LF;
    this.#outLen = p;
    conn.msgsOut++;
    conn.bytesOut += plen + hlen;
    if (knownLength(msg.data) === 0) msg.counters.bytesOut += plen;
    if (sub.received >= sub.max) conn.subs.delete(ctx.sid);
    this.#markDirty();
    if (p + conn.socket.writableLength > conn.core.maxPending) conn.slowConsumer(msg);
  }

  /** Writes what was gathered since the last flush. */
  flush(): void {
    this.#dirty = false;
    const conn = this.#conn;
    if (this.#outLen === 0 || conn.closed) return;
    const out = this.#out;
    const chunk = out.subarray(0, this.#outLen);
    this.#outLen = 0;
    conn.socket.write(chunk);
    const held = conn.socket.writableLength;
    // Nothing held: the socket wrote the chunk at once (into the kernel), so the buffer is free
    // again; otherwise the stream keeps the chunk until it is written and the next turn gathers
    // into a new buffer.
    if (held !== 0) this.#out = Buffer.allocUnsafe(OUT_SIZE);
    else if (out.length > OUT_SIZE) this.#out = Buffer.allocUnsafe(OUT_SIZE);
    if (held > conn.core.maxPending) conn.slowConsumer(undefined);
  }

  /** Forgets what was gathered and not yet written (a slow consumer is cut). */
  drop(): void {
    this.#outLen = 0;
  }

  /** Bytes gathered but not yet written to the socket. */
  get gathered(): number {
    return this.#outLen;
  }
}

type Utf8Write = (this: Buffer, s: string, offset: number) => number;
/** Buffer's native UTF-8 writer (what `buf.write` calls after checking its arguments). */
const nativeUtf8Write = (Buffer.prototype as unknown as { utf8Write?: Utf8Write }).utf8Write;
const utf8Write: Utf8Write =
  nativeUtf8Write ??
  function (this: Buffer, s: string, offset: number) {
    return this.write(s, offset);
  };

/** Decimal digits of a length (as `writeInt` writes it). */
function digits(v: number): number {
  let n = 1;
  for (let x = v; x >= 10; x = Math.floor(x / 10)) n++;
  return n;
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
