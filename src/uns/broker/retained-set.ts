/**
 * The broker's retained messages in memory (what a SUBSCRIBE's retained messages are read
 * from), bounded: at most `maxRetained` topics and `maxRetainedBytes` of topics and payloads. A
 * retained message for a new topic that does not fit is not retained (it is still delivered to
 * the subscribers of the moment); replacing or deleting a topic's message always works, so a full
 * set can be emptied by its publishers. docs/security.md lists the bound.
 */
import type { Logger } from 'pino';
import type { Packet } from './async-persistence.js';

export interface RetainedLimits {
  /** Topics with a retained message at most. */
  maxRetained: number;
  /** Bytes of their topics and payloads at most. */
  maxRetainedBytes: number;
  /** Told of a retained message not kept (the set full). */
  onRefused?: ((topic: string, reason: string) => void) | undefined;
}

const sizeOf = (topic: string, packet: Packet) =>
  Buffer.byteLength(topic) +
  (Buffer.isBuffer(packet.payload) ? packet.payload.length : Buffer.byteLength(String(packet.payload ?? '')));

export class RetainedSet {
  readonly map = new Map<string, Packet>();
  #bytes = 0;
  readonly #limits: RetainedLimits;

  constructor(limits: Partial<RetainedLimits> = {}) {
    this.#limits = {
      maxRetained: limits.maxRetained ?? Number.POSITIVE_INFINITY,
      maxRetainedBytes: limits.maxRetainedBytes ?? Number.POSITIVE_INFINITY,
      onRefused: limits.onRefused,
    };
  }

  get size(): number {
    return this.map.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** A stored message at start: kept whatever the bounds (it is on disk already). */
  load(packet: Packet): void {
    this.#remove(packet.topic);
    this.map.set(packet.topic, packet);
    this.#bytes += sizeOf(packet.topic, packet);
  }

  /**
   * Sets a topic's retained message (null: deletes it). False, and nothing changed, when a new
   * topic (or a bigger message) does not fit the bounds.
   */
  put(topic: string, packet: Packet | null): boolean {
    if (packet === null) {
      this.#remove(topic);
      return true;
    }
    const old = this.map.get(topic);
    const size = sizeOf(topic, packet);
    const bytes = this.#bytes - (old ? sizeOf(topic, old) : 0) + size;
    const l = this.#limits;
    const full = !old && this.map.size >= l.maxRetained;
    if (full || bytes > l.maxRetainedBytes) {
      l.onRefused?.(topic, full ? `${l.maxRetained} topics` : `${l.maxRetainedBytes} bytes`);
      return false;
    }
    this.map.set(topic, packet);
    this.#bytes = bytes;
    return true;
  }

  #remove(topic: string): void {
    const old = this.map.get(topic);
    if (!old) return;
    this.map.delete(topic);
    this.#bytes -= sizeOf(topic, old);
  }
}

/** `onRefused` for a broker: a warning at most once a minute, with the count since the last. */
export function retainedRefusals(log: Logger): (topic: string, reason: string) => void {
  let last = 0;
  let refused = 0;
  return (topic, reason) => {
    refused++;
    const now = Date.now();
    if (now - last < 60_000) return;
    log.warn(
      { topic: topic.slice(0, 200), refused },
      `retained messages full (${reason}): retained message not kept, the message delivered`,
    );
    last = now;
    refused = 0;
  };
}
