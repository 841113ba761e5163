/**
 * The in-process bus of the DataHub: NATS subject semantics, queue groups, request/reply and
 * bounded per-subscription buffers. A published value reaches in-process subscribers as the very
 * object that was published (no serialisation, no copy); bytes are produced only when a NATS
 * connection needs them, once per message however many connections receive it.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ClosedError, InvalidSubjectError, NoRespondersError, RequestTimeoutError } from './errors.js';
import { Message, type PayloadEncoder, type PrefixCounters } from './message.js';
import { encodeHeaders, knownLength, type HeaderMap } from './payload.js';
import { Sublist, type MatchResult } from './sublist.js';
import { internal, isValidPattern, isValidSubject, subjectPrefix, type Outlet } from './subject.js';

export { Message, type PayloadEncoder, type PrefixCounters } from './message.js';

export type MessageHandler = (msg: Message, sub: Subscription) => void;

export interface SubscribeOptions {
  /** Queue group: each message goes to one member of the group. */
  queue?: string;
  /** Unsubscribe after this many messages. */
  max?: number;
  /** Called synchronously for each message; without it the subscription is an async iterable. */
  callback?: MessageHandler;
  /** Messages an iterable subscription buffers at most; past it new messages are dropped and counted. */
  maxPending?: number;
  /** Messages from this origin are not delivered (CONNECT `echo: false` of a gateway client). */
  skipOrigin?: object;
  /** Free for the owner (the gateway keeps the connection and the sid here). */
  owner?: unknown;
}

let nextSubscriptionId = 1;

/**
 * Where a publisher keeps its one subject's subscriptions between publishes (`DataHub.dispatchRouted`):
 * two fields of an object it holds anyway (the device runner's entry of a tag), so a publish
 * finds them without a lookup in the bus's cache of every subject (a `Map` of 100,000 subjects on a
 * large site: about 0.4 µs a lookup, 4% of a core at 100,000 values/s). Valid while no
 * subscription came or went on the bus that filled it; a holder serves one subject on one bus.
 */
export interface RouteHolder {
  route: MatchResult<Subscription> | undefined;
  /** The bus's subscription generation when `route` was looked up. */
  routeGeneration: number;
}

export class Subscription implements AsyncIterable<Message> {
  readonly id = nextSubscriptionId++;
  readonly pattern: string;
  readonly queue: string | undefined;
  readonly owner: unknown;
  /** Messages handed over. */
  received = 0;
  /** Messages lost because the buffer was full. */
  dropped = 0;
  max: number;
  closed = false;
  readonly #hub: DataHub;
  readonly #callback: MessageHandler | undefined;
  readonly #skipOrigin: object | undefined;
  readonly #maxPending: number;
  #buffer: Message[] = [];
  #head = 0;
  #waiter: ((r: IteratorResult<Message>) => void) | undefined;
  #slow = false;

  constructor(hub: DataHub, pattern: string, options: SubscribeOptions, maxPending: number) {
    this.#hub = hub;
    this.pattern = pattern;
    this.queue = options.queue;
    this.owner = options.owner;
    this.max = options.max ?? Infinity;
    this.#callback = options.callback;
    this.#skipOrigin = options.skipOrigin;
    this.#maxPending = options.maxPending ?? maxPending;
  }

  /** Hands a message over; false when this subscription does not take it (closed, own echo). */
  deliver(msg: Message): boolean {
    if (this.closed || (this.#skipOrigin !== undefined && msg.origin === this.#skipOrigin)) return false;
    this.received++;
    const cb = this.#callback;
    if (cb !== undefined) {
      try {
        cb(msg, this);
      } catch (err) {
        this.#hub.handlerFailed(this, err);
      }
    } else if (this.#waiter !== undefined) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w({ value: msg, done: false });
    } else if (this.#buffer.length - this.#head >= this.#maxPending) {
      this.received--;
      this.dropped++;
      msg.counters.drops++;
      if (!this.#slow) {
        this.#slow = true;
        msg.counters.slowConsumers++;
        this.#hub.slowSubscription(this, msg);
      }
      return true;
    } else {
      this.#buffer.push(msg);
    }
    if (this.received >= this.max) this.unsubscribe();
    return true;
  }

  /** Messages waiting in the buffer of an iterable subscription. */
  get pending(): number {
    return this.#buffer.length - this.#head;
  }

  unsubscribe(): void {
    if (this.closed) return;
    this.closed = true;
    this.#hub.removeSubscription(this);
    if (this.#waiter && this.pending === 0) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w({ value: undefined, done: true });
    }
  }

  /** Unsubscribe after `max` messages in all (at once when that many were received already). */
  autoUnsubscribe(max: number): void {
    this.max = max;
    if (this.received >= max) this.unsubscribe();
  }

  [Symbol.asyncIterator](): AsyncIterator<Message> {
    return {
      next: () => {
        if (this.#head < this.#buffer.length) {
          const value = this.#buffer[this.#head++]!;
          if (this.#head > 1024 && this.#head * 2 > this.#buffer.length) {
            this.#buffer = this.#buffer.slice(this.#head);
            this.#head = 0;
          }
          if (this.#head === this.#buffer.length) this.#slow = false;
          return Promise.resolve({ value, done: false });
        }
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.#waiter = resolve));
      },
      return: () => {
        this.unsubscribe();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}

/** A bridge to an external NATS cluster (external mode). */
export interface Uplink {
  /** A message published in this process, for the cluster. */
  publish(msg: Message): void;
  /** Interest of this process in a pattern (and queue group) began (+1) or ended (-1). */
  interest(pattern: string, queue: string | undefined, delta: 1 | -1): void;
}

export interface DataHubOptions {
  logger?: Logger | undefined;
  /** Tokens of a subject that name its counters (default 2: `devicehub.raw`). */
  prefixDepth?: number;
  /** Buffer of an iterable subscription, messages (default 65536). */
  maxPending?: number;
  /** Subjects whose match result is cached (default 262,144). */
  cacheSize?: number;
  /**
   * Subject prefixes that get counters of their own (default 1000); messages on further prefixes
   * are counted under `OTHER_PREFIX`, so that a client publishing on millions of distinct
   * subjects cannot grow the counters without bound.
   */
  maxPrefixes?: number;
}

/** The prefix under which the counters of prefixes past `maxPrefixes` are summed. */
export const OTHER_PREFIX = '_other';
export const DEFAULT_MAX_PREFIXES = 1000;

export interface PublishOptions {
  reply?: string;
  /** Headers as a map, or a raw `NATS/1.0` block. */
  headers?: HeaderMap | Buffer;
  origin?: object;
  /** Makes the bytes a NATS connection gets, when the publisher can do it faster than JSON. */
  encoder?: PayloadEncoder;
}

const INBOX_PREFIX = '_INBOX.';

const newCounters = (prefix: string): PrefixCounters => ({
  prefix,
  msgsIn: 0,
  bytesIn: 0,
  msgsOut: 0,
  bytesOut: 0,
  drops: 0,
  slowConsumers: 0,
});

export class DataHub {
  readonly #index: Sublist<Subscription>;
  readonly #prefixes = new Map<string, PrefixCounters>();
  readonly #prefixDepth: number;
  readonly #maxPrefixes: number;
  #other: PrefixCounters | undefined;
  readonly #maxPending: number;
  readonly #log: Logger | undefined;
  readonly #interest = new Map<string, number>();
  readonly #inboxBase = `${INBOX_PREFIX}${randomBytes(12).toString('base64url')}.`;
  #inboxSeq = 0;
  #rr = 0;
  #uplink: Uplink | undefined;
  #closed = false;
  /** Called when a subscription or connection falls behind (for logs and counters elsewhere). */
  onSlowConsumer: ((what: { subject: string; pattern?: string; connection?: string }) => void) | undefined;

  constructor(options: DataHubOptions = {}) {
    this.#index = new Sublist<Subscription>({ cacheSize: options.cacheSize });
    this.#prefixDepth = options.prefixDepth ?? 2;
    this.#maxPrefixes = options.maxPrefixes ?? DEFAULT_MAX_PREFIXES;
    this.#maxPending = options.maxPending ?? 65536;
    this.#log = options.logger;
    this.#index.onResult = (subject, result) => {
      result.tag = this.counters(subject);
    };
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Subscriptions in the index. */
  get subscriptionCount(): number {
    return this.#index.size;
  }

  /**
   * The counters of a subject's prefix (created on first use; past `maxPrefixes` prefixes, the
   * shared counters of `OTHER_PREFIX`).
   */
  counters(subject: string): PrefixCounters {
    const prefix = subjectPrefix(subject, this.#prefixDepth);
    let c = this.#prefixes.get(prefix);
    if (!c) {
      if (this.#prefixes.size >= this.#maxPrefixes) {
        this.#other ??= newCounters(OTHER_PREFIX);
        return this.#other;
      }
      c = newCounters(prefix);
      this.#prefixes.set(prefix, c);
    }
    return c;
  }

  /**
   * The counters of every prefix, sorted by prefix, and `OTHER_PREFIX` last when some prefixes
   * had no room: at most `maxPrefixes` + 1 entries.
   */
  prefixCounters(): PrefixCounters[] {
    const list = [...this.#prefixes.values()].sort((a, b) =>
      a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0,
    );
    if (this.#other) list.push(this.#other);
    return list;
  }

  /**
   * Publishes `data` on `subject`. In-process subscribers receive `data` itself. Answers how many
   * subscriptions in this process took the message.
   */
  publish(subject: string, data: unknown, options?: PublishOptions): number {
    if (this.#closed) throw new ClosedError();
    const reply = options?.reply ?? '';
    let headers: Buffer | undefined;
    const h = options?.headers;
    if (h !== undefined) headers = Buffer.isBuffer(h) ? h : encodeHeaders(h);
    return this.dispatch(subject, data, reply, headers, options?.origin, true, options?.encoder);
  }

  /**
   * The publish path shared with the gateway and the uplink: `forward` is false for messages that
   * came from the external cluster.
   */
  dispatch(
    subject: string,
    data: unknown,
    reply: string,
    headers: Buffer | undefined,
    origin: object | undefined,
    forward: boolean,
    encoder?: PayloadEncoder,
  ): number {
    return this.#send(this.#match(subject), subject, data, reply, headers, origin, forward, encoder);
  }

  /**
   * `dispatch` of a message with no reply and no headers, whose subject's subscriptions are kept by
   * `holder` (`RouteHolder`): looked up only after a subscription came or went.
   */
  dispatchRouted(holder: RouteHolder, subject: string, data: unknown, encoder?: PayloadEncoder): number {
    if (this.#closed) throw new ClosedError();
    let r = holder.route;
    const generation = this.#index.generation;
    if (r === undefined || holder.routeGeneration !== generation) {
      r = holder.route = this.#match(subject);
      holder.routeGeneration = generation;
    }
    return this.#send(r, subject, data, '', undefined, undefined, true, encoder);
  }

  /** Delivers a message to the subscriptions of its subject (`r`) and forwards it to the uplink. */
  #send(
    r: MatchResult<Subscription>,
    subject: string,
    data: unknown,
    reply: string,
    headers: Buffer | undefined,
    origin: object | undefined,
    forward: boolean,
    encoder: PayloadEncoder | undefined,
  ): number {
    const counters = r.tag as PrefixCounters;
    counters.msgsIn++;
    const len = knownLength(data);
    counters.bytesIn += len;
    const plain = r.plain;
    const groups = r.groups;
    const uplink = forward ? this.#uplink : undefined;
    // Nobody to hand it to: no `Message` either.
    if (plain.length === 0 && groups.length === 0 && uplink === undefined) return 0;
    const msg = new Message(this, subject, data, reply, headers, origin, counters, encoder);
    let delivered = 0;
    for (let i = 0; i < plain.length; i++) {
      if (plain[i]!.deliver(msg)) delivered++;
    }
    for (let g = 0; g < groups.length; g++) {
      const members = groups[g]!;
      const n = members.length;
      const start = this.#rr++ % n;
      for (let k = 0; k < n; k++) {
        if (members[(start + k) % n]!.deliver(msg)) {
          delivered++;
          break;
        }
      }
    }
    counters.msgsOut += delivered;
    if (len > 0) counters.bytesOut += len * delivered;
    if (uplink !== undefined) uplink.publish(msg);
    return delivered;
  }

  /**
   * A handle for publishing often on one subject (see `Outlet`): its subscriptions are looked up
   * again only after a subscription came or went.
   */
  outlet(subject: string): Outlet {
    if (!isValidSubject(subject)) throw new InvalidSubjectError(subject, 'subject');
    const key = internal(subject);
    let result: MatchResult<Subscription> | undefined;
    let generation = -1;
    const current = (): MatchResult<Subscription> => {
      if (this.#closed) throw new ClosedError();
      if (result === undefined || generation !== this.#index.generation) {
        result = this.#match(key);
        generation = this.#index.generation;
      }
      return result;
    };
    return {
      subject: key,
      interested: () => {
        const r = current();
        return r.plain.length > 0 || r.groups.length > 0 || this.#uplink !== undefined;
      },
      publish: (data) => this.#send(current(), key, data, '', undefined, undefined, true, undefined),
      skip: () => {
        (current().tag as PrefixCounters).msgsIn++;
      },
    };
  }

  #match(subject: string): MatchResult<Subscription> {
    const hit = this.#index.cached(subject);
    if (hit !== undefined) return hit;
    if (!isValidSubject(subject)) throw new InvalidSubjectError(subject, 'subject');
    return this.#index.match(subject);
  }

  /** Subscribes to a pattern (`*` one token, `>` the rest). */
  subscribe(pattern: string, options: SubscribeOptions | MessageHandler = {}): Subscription {
    if (this.#closed) throw new ClosedError();
    const opts = typeof options === 'function' ? { callback: options } : options;
    if (!isValidPattern(pattern)) throw new InvalidSubjectError(pattern, 'pattern');
    if (opts.queue !== undefined && (opts.queue === '' || /\s/.test(opts.queue))) {
      throw new InvalidSubjectError(opts.queue, 'pattern');
    }
    const sub = new Subscription(this, pattern, opts, this.#maxPending);
    this.#index.insert(sub);
    this.#changeInterest(pattern, opts.queue, 1);
    if (opts.max !== undefined && opts.max <= 0) sub.unsubscribe();
    return sub;
  }

  /** Called by `Subscription.unsubscribe`. */
  removeSubscription(sub: Subscription): void {
    if (this.#index.remove(sub)) this.#changeInterest(sub.pattern, sub.queue, -1);
  }

  /** A unique reply subject. */
  createInbox(): string {
    return `${this.#inboxBase}${(this.#inboxSeq++).toString(36)}`;
  }

  /**
   * Sends a request and answers the first reply. Fails with `NoRespondersError` when nobody in
   * this process subscribes (and no external cluster is joined), `RequestTimeoutError` after
   * `timeout` milliseconds (default 5000).
   */
  request(
    subject: string,
    data: unknown,
    options: { timeout?: number; headers?: HeaderMap | Buffer } = {},
  ): Promise<Message> {
    const timeout = options.timeout ?? 5000;
    const inbox = this.createInbox();
    return new Promise<Message>((resolve, reject) => {
      const timer = setTimeout(() => {
        sub.unsubscribe();
        reject(new RequestTimeoutError(subject, timeout));
      }, timeout);
      const sub = this.subscribe(inbox, {
        max: 1,
        callback: (m) => {
          clearTimeout(timer);
          const { status } = m.headers ? m.header() : { status: undefined };
          if (status === '503') reject(new NoRespondersError(subject));
          else resolve(m);
        },
      });
      let n: number;
      try {
        n = this.publish(subject, data, {
          reply: inbox,
          ...(options.headers ? { headers: options.headers } : {}),
        });
      } catch (err) {
        clearTimeout(timer);
        sub.unsubscribe();
        reject(err as Error);
        return;
      }
      if (n === 0 && this.#uplink === undefined && !sub.closed) {
        clearTimeout(timer);
        sub.unsubscribe();
        reject(new NoRespondersError(subject));
      }
    });
  }

  /** Joins an external cluster: present interest is announced, later publishes are forwarded. */
  setUplink(uplink: Uplink | undefined): void {
    this.#uplink = uplink;
    if (uplink) {
      for (const key of this.#interest.keys()) {
        const [pattern, queue] = splitKey(key);
        uplink.interest(pattern, queue, 1);
      }
    }
  }

  #changeInterest(pattern: string, queue: string | undefined, delta: 1 | -1): void {
    const key = queue === undefined ? pattern : `${pattern} ${queue}`;
    const n = (this.#interest.get(key) ?? 0) + delta;
    if (n <= 0) this.#interest.delete(key);
    else this.#interest.set(key, n);
    if (this.#uplink && ((delta === 1 && n === 1) || (delta === -1 && n === 0))) {
      this.#uplink.interest(pattern, queue, delta);
    }
  }

  /** Called when a callback throws: logged, the bus goes on. */
  handlerFailed(sub: Subscription, err: unknown): void {
    this.#log?.error({ err, pattern: sub.pattern }, 'datahub subscriber failed');
  }

  /** Called when an iterable subscription's buffer overflows (once until it catches up). */
  slowSubscription(sub: Subscription, msg: Message): void {
    this.#log?.warn(
      { pattern: sub.pattern, subject: msg.subject },
      'datahub slow consumer: subscription buffer full, dropping',
    );
    this.onSlowConsumer?.({ subject: msg.subject, pattern: sub.pattern });
  }

  /** Every subscription (for the operations view). */
  subscriptions(): Subscription[] {
    return [...this.#index.all()];
  }

  /** Ends every subscription. */
  close(): void {
    if (this.#closed) return;
    for (const sub of [...this.#index.all()]) sub.unsubscribe();
    this.#closed = true;
  }
}

function splitKey(key: string): [string, string | undefined] {
  const space = key.indexOf(' ');
  return space < 0 ? [key, undefined] : [key.slice(0, space), key.slice(space + 1)];
}
