/**
 * The byte parser of the NATS client protocol: works on the socket's Buffers (no line strings, no
 * per-message string building), finds control lines and message payloads and hands them to the
 * op handlers (`handlers/`). It keeps what a chunk left unfinished and, while the connection waits
 * for an access key to be checked, holds what arrives.
 */
import type { Connection } from './connection.js';
import { dispatchOp } from './handlers/index.js';
import { deliverPub } from './handlers/pub.js';
import { ERR } from './protocol.js';

export const CR = 13;
export const LF = 10;
export const SP = 32;
export const TAB = 9;

export class Parser {
  readonly #conn: Connection;
  readonly #maxLine: number;
  #rest: Buffer | undefined;
  #chunks: Buffer[] | undefined;
  #chunksLen = 0;
  #want = 0;
  /** While true, what arrives is held (an access key is being checked). */
  paused = false;

  // The PUB or HPUB whose payload comes next (set by the PUB handlers).
  pubPending = false;
  pubSubject = '';
  pubReply = '';
  /** Header bytes of an HPUB; -1 for a PUB. */
  pubHdr = -1;
  pubSize = 0;

  /** Arguments of the current control line: start and end offsets, in pairs (see `split`). */
  readonly args = new Int32Array(16);

  constructor(conn: Connection, maxLine: number) {
    this.#conn = conn;
    this.#maxLine = maxLine;
  }

  onData(chunk: Buffer): void {
    if (this.paused && this.#chunks === undefined) {
      this.#chunks = this.#rest ? [this.#rest, chunk] : [chunk];
      this.#chunksLen = (this.#rest?.length ?? 0) + chunk.length;
      this.#rest = undefined;
      return;
    }
    if (this.#chunks !== undefined) {
      this.#chunks.push(chunk);
      this.#chunksLen += chunk.length;
      if (this.#chunksLen < this.#want || this.paused) return;
      chunk = Buffer.concat(this.#chunks, this.#chunksLen);
      this.#chunks = undefined;
      this.#chunksLen = 0;
    } else if (this.#rest !== undefined) {
      const rest = this.#rest;
      this.#rest = undefined;
      if (this.#want > rest.length + chunk.length || this.paused) {
        this.#chunks = [rest, chunk];
        this.#chunksLen = rest.length + chunk.length;
        return;
      }
      chunk = Buffer.concat([rest, chunk]);
    }
    this.parse(chunk, 0);
  }

  /** Ends a pause: parses what arrived meanwhile. */
  resume(): void {
    this.paused = false;
    let rest: Buffer | undefined = this.#rest;
    this.#rest = undefined;
    if (this.#chunks) {
      rest = Buffer.concat(this.#chunks, this.#chunksLen);
      this.#chunks = undefined;
      this.#chunksLen = 0;
    }
    if (rest) this.parse(rest, 0);
  }

  #keep(buf: Buffer, pos: number, want: number): void {
    this.#want = want;
    if (pos < buf.length) this.#rest = buf.subarray(pos);
  }

  parse(buf: Buffer, pos: number): void {
    const conn = this.#conn;
    const len = buf.length;
    const maxLine = this.#maxLine;
    while (pos < len) {
      if (this.pubPending) {
        const size = this.pubSize;
        if (len - pos < size + 2) {
          this.#keep(buf, pos, size + 2);
          return;
        }
        if (buf[pos + size] !== CR || buf[pos + size + 1] !== LF) {
          conn.fail(ERR.unknownOp);
          return;
        }
        this.pubPending = false;
        deliverPub(conn, this, buf, pos, size);
        if (conn.closed) return;
        pos += size + 2;
        continue;
      }
      const nl = buf.indexOf(LF, pos);
      if (nl < 0) {
        if (len - pos > maxLine) {
          conn.fail(ERR.maxControlLine);
          return;
        }
        this.#keep(buf, pos, 0);
        return;
      }
      let end = nl;
      if (end > pos && buf[end - 1] === CR) end--;
      if (end - pos > maxLine) {
        conn.fail(ERR.maxControlLine);
        return;
      }
      const go = dispatchOp(conn, this, buf, pos, end);
      pos = nl + 1;
      if (!go) {
        if (!conn.closed) this.#keep(buf, pos, 0);
        return;
      }
    }
    this.#want = 0;
  }

  /** Splits the arguments after the op word into `args` (start, end pairs); answers their count. */
  split(buf: Buffer, pos: number, end: number): number {
    const a = this.args;
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

  /** Argument `k` as a non-negative integer, or -1. */
  int(buf: Buffer, k: number): number {
    const a = this.args;
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

  /** Argument `k` as a string. */
  str(buf: Buffer, k: number): string {
    return buf.toString('utf8', this.args[k * 2], this.args[k * 2 + 1]);
  }
}

/** Whether position `i` ends the op word: end of line, space or tab. */
export function ws(buf: Buffer, i: number, end: number): boolean {
  return i === end || buf[i] === SP || buf[i] === TAB;
}

/** Whether the op word at `pos` is `word` (lower case), ignoring case. */
export function matchWord(buf: Buffer, pos: number, word: string): boolean {
  for (let i = 0; i < word.length; i++) {
    if (((buf[pos + i] ?? 0) | 0x20) !== word.charCodeAt(i)) return false;
  }
  return true;
}
