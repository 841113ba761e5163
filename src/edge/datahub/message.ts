/**
 * A message of the DataHub's in-process bus (bus.ts) and what it carries: the counters of its
 * subject's prefix and the publisher's own encoder of its payload.
 */
import { decodeHeaders, encodePayload, type HeaderMap } from './payload.js';

/** Where a message's answer goes (the bus that carried it). */
interface Publisher {
  publish(subject: string, data: unknown, options?: { headers?: HeaderMap }): void;
}

/**
 * A publisher's own encoding of its payloads: the same bytes as JSON of the value would be, made
 * faster (the acquisition engine's values keep their per-tag parts encoded once).
 */
export interface PayloadEncoder {
  encode(data: unknown): Buffer;
  /**
   * The same payload as JSON text, when the encoder makes text: a gateway connection writes it
   * straight into its outgoing buffer (no Buffer per message, one copy fewer).
   */
  text?(data: unknown): string;
  /**
   * A slot for an in-process subscriber of the encoder's messages (the history's recorder): what
   * it keeps of the publisher's subject, found by a property read instead of a look-up among every
   * subject (100,000 a second at 100,000 tags). A subscriber checks that what it finds is its own
   * and of the message's subject (one encoder may publish on two subjects) before using it.
   */
  subscriberMemo?: unknown;
}

/** Counters of one subject prefix (the first tokens of a subject, e.g. `devicehub.raw`). */
export interface PrefixCounters {
  prefix: string;
  msgsIn: number;
  bytesIn: number;
  msgsOut: number;
  bytesOut: number;
  drops: number;
  slowConsumers: number;
}

/** What only some messages have: a reply subject, headers, an origin. */
interface MessageExtra {
  readonly hub: Publisher;
  readonly reply: string;
  readonly headers: Buffer | undefined;
  readonly origin: object | undefined;
}

/**
 * One published message, shared by every subscriber that receives it. An in-process publish
 * without reply, headers or origin (the common case: every value of the acquisition engine, every
 * analytics output) makes a message of six fields; the rare parts live in one object of their own.
 */
export class Message<T = unknown> {
  readonly subject: string;
  /** The value as published: the same object for in-process publishers, bytes from the wire. */
  readonly data: T;
  /** Counters of the subject's prefix. */
  counters: PrefixCounters;
  /**
   * The publisher's encoder of the payload, when it gave one: a field of its own, not in the rare
   * parts, since every value of the acquisition engine has one (an object fewer per value).
   */
  readonly encoder: PayloadEncoder | undefined;
  readonly #extra: MessageExtra | undefined;
  /** The payload encoded: the bytes, or the JSON text before bytes were asked for. */
  #encoded: Buffer | string | undefined;

  constructor(
    hub: Publisher,
    subject: string,
    data: T,
    reply: string,
    headers: Buffer | undefined,
    origin: object | undefined,
    counters: PrefixCounters,
    encoder?: PayloadEncoder,
  ) {
    this.subject = subject;
    this.data = data;
    this.counters = counters;
    this.encoder = encoder;
    this.#extra =
      reply === '' && headers === undefined && origin === undefined
        ? undefined
        : { hub, reply, headers, origin };
    this.#encoded = undefined;
  }

  /** Reply subject ('' when none). */
  get reply(): string {
    return this.#extra?.reply ?? '';
  }

  /** Raw NATS header block (`NATS/1.0\r\n...\r\n\r\n`), when the message has headers. */
  get headers(): Buffer | undefined {
    return this.#extra?.headers;
  }

  /** Who published it (a gateway connection, the external cluster); for echo suppression. */
  get origin(): object | undefined {
    return this.#extra?.origin;
  }

  /** The payload as bytes (serialised once, on first use). */
  bytes(): Buffer {
    const e = this.#encoded;
    if (e instanceof Uint8Array) return e;
    const encoder = this.encoder;
    const bytes =
      e !== undefined
        ? Buffer.from(e, 'utf8')
        : encoder === undefined
          ? encodePayload(this.data)
          : encoder.encode(this.data);
    this.#encoded = bytes;
    return bytes;
  }

  /**
   * The payload as JSON text, made once, when the publisher's encoder makes text and the bytes were
   * not made yet (the gateway writes it into its buffer); undefined otherwise (use `bytes()`).
   */
  encodedText(): string | undefined {
    const e = this.#encoded;
    if (typeof e === 'string') return e;
    const encoder = this.encoder;
    if (e !== undefined || encoder?.text === undefined) return undefined;
    return (this.#encoded = encoder.text(this.data));
  }

  /** The payload as a value: the published object itself, or parsed from JSON bytes or text. */
  json<U = unknown>(): U {
    const d: unknown = this.data;
    if (d instanceof Uint8Array) return JSON.parse(this.bytes().toString('utf8')) as U;
    if (typeof d === 'string') return JSON.parse(d) as U;
    return d as U;
  }

  /** The payload as text. */
  string(): string {
    return typeof this.data === 'string' ? this.data : this.bytes().toString('utf8');
  }

  /** Headers as a map, with the status of the first line (`503` for no responders). */
  header(): { status: string | undefined; headers: HeaderMap } {
    return this.headers ? decodeHeaders(this.headers) : { status: undefined, headers: {} };
  }

  /** Publishes an answer on the reply subject; answers false when the message has none. */
  respond(data: unknown, options: { headers?: HeaderMap } = {}): boolean {
    const extra = this.#extra;
    if (extra === undefined || !extra.reply) return false;
    extra.hub.publish(extra.reply, data, options);
    return true;
  }
}
