/**
 * QoS 0 PUBLISH packets written straight to the MQTT connection's socket, batched per turn of the
 * event loop. mqtt.js's `publish` costs an options object, a packet object, five `write` calls
 * and a `cork` per message; at QoS 0 there is nothing it keeps (no packet id, no store), so the
 * connector encodes the packet itself: the topic's bytes once per topic, then header, topic and
 * payload copied into one slab, and the slab's new part handed to the socket once per turn (and
 * whenever a slab fills). The socket sees the same bytes mqtt.js would write.
 */
import type { Writable } from 'node:stream';

/** Bytes of one slab; packets larger than half of it are written on their own. */
const SLAB_BYTES = 64 * 1024;
/** Topics whose encoded prefix is kept; past this many the cache starts again. */
const MAX_TOPICS = 10_000;

export class QoS0Writer {
  readonly #stream: Writable;
  readonly #flags: number;
  readonly #v5: boolean;
  readonly #maxPacketBytes: number;
  readonly #topics = new Map<string, Buffer>();
  #slab = Buffer.allocUnsafe(SLAB_BYTES);
  /** Start of the slab's part not yet handed to the socket. */
  #start = 0;
  #used = 0;
  #scheduled = false;
  readonly #flushNow = () => {
    this.#scheduled = false;
    this.flush();
  };

  constructor(
    stream: Writable,
    options: { retain: boolean; protocolVersion: number; maxPacketBytes?: number | undefined },
  ) {
    this.#stream = stream;
    this.#maxPacketBytes = options.maxPacketBytes ?? Infinity;
    this.#flags = 0x30 | (options.retain ? 1 : 0);
    this.#v5 = options.protocolVersion === 5;
  }

  /** Bytes encoded and not yet handed to the socket, plus what the socket holds unsent. */
  get buffered(): number {
    return this.#used - this.#start + (this.#stream.writableLength ?? 0);
  }

  /** The topic's length and UTF-8 bytes (and MQTT 5's empty property block), as the packet carries them. */
  #prefix(topic: string): Buffer {
    let p = this.#topics.get(topic);
    if (p !== undefined) return p;
    const t = Buffer.from(topic, 'utf8');
    p = Buffer.allocUnsafe(2 + t.length + (this.#v5 ? 1 : 0));
    p.writeUInt16BE(t.length, 0);
    t.copy(p, 2);
    if (this.#v5) p[p.length - 1] = 0;
    if (this.#topics.size >= MAX_TOPICS) this.#topics.clear();
    this.#topics.set(topic, p);
    return p;
  }

  /** Encodes one PUBLISH; false (nothing written) when it is larger than the broker takes. */
  write(topic: string, payload: Buffer): boolean {
    const prefix = this.#prefix(topic);
    const remaining = prefix.length + payload.length;
    const total = 1 + varintBytes(remaining) + remaining;
    if (total > this.#maxPacketBytes) return false;
    if (total > SLAB_BYTES / 2) {
      this.flush();
      const header = Buffer.allocUnsafe(1 + varintBytes(remaining));
      this.#header(header, 0, remaining);
      if (!this.#stream.destroyed) this.#stream.write(Buffer.concat([header, prefix, payload]));
      return true;
    }
    if (this.#used + total > this.#slab.length) {
      this.flush();
      this.#slab = Buffer.allocUnsafe(SLAB_BYTES);
      this.#start = 0;
      this.#used = 0;
    }
    const slab = this.#slab;
    let o = this.#header(slab, this.#used, remaining);
    o += prefix.copy(slab, o);
    o += payload.copy(slab, o);
    this.#used = o;
    if (!this.#scheduled) {
      this.#scheduled = true;
      process.nextTick(this.#flushNow);
    }
    return true;
  }

  /** Writes the fixed header (type and flags, remaining length) at `at`; answers the offset after it. */
  #header(buf: Buffer, at: number, length: number): number {
    let o = at;
    buf[o++] = this.#flags;
    let remaining = length;
    do {
      let byte = remaining % 128;
      remaining = Math.floor(remaining / 128);
      if (remaining > 0) byte |= 0x80;
      buf[o++] = byte;
    } while (remaining > 0);
    return o;
  }

  /** Hands what was encoded to the socket (before anything else is written to it). */
  flush(): void {
    if (this.#used === this.#start) return;
    const chunk = this.#slab.subarray(this.#start, this.#used);
    this.#start = this.#used;
    if (!this.#stream.destroyed) this.#stream.write(chunk);
  }

  /** Forgets what was not handed over yet (the connection is gone). */
  discard(): void {
    this.#start = this.#used;
  }
}

/** Bytes of MQTT's variable-length encoding of `n`. */
function varintBytes(n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4;
}
