/**
 * What the broker adds around aedes's connections and emitter: writes gathered per turn of the
 * event loop, a bound on the emitter's recursion, the packet size hook's parts, the topic checks
 * of the limits, and how a client is kicked and described in the log.
 */
import type { Duplex } from 'node:stream';
import type { Client } from 'aedes';
import type { BrokerLimits } from './options.js';
import { matchLevels } from '../accounts/index.js';
import { SHARE_PREFIX, SHARED_PREFIX, wireOf, type WirePacket } from './wire.js';

/** The parts of aedes's Client this layer hooks (instance fields, not its source). */
export interface ClientInternals {
  _parser: {
    packet: { length: number; cmd?: string };
    _parseLength: () => boolean;
    _emitError: (err: Error) => unknown;
  };
  conn: Duplex;
  connected: boolean;
  clean: boolean;
  rejectPacketTooLarge: (size: number) => void;
}

/** Messages the emitter hands on one inside the other before it goes on from a fresh stack. */
const MAX_SYNC_DEPTH = 32;

/** Why a topic or filter is refused by the limits, or null. Cheap: one pass over the string. */
export function topicProblem(topic: string, limits: BrokerLimits): string | null {
  const { maxTopicLength, maxTopicLevels } = limits;
  let levels = 1;
  for (let i = 0; i < topic.length; i++) {
    const c = topic.charCodeAt(i);
    if (c === 47) levels++;
    else if (c === 0) return 'a topic cannot contain NUL (U+0000)';
  }
  if (levels > maxTopicLevels)
    return `topic has ${levels} levels; at most ${maxTopicLevels} (--max-topic-levels)`;
  if (topic.length * 3 > maxTopicLength) {
    const bytes = Buffer.byteLength(topic);
    if (bytes > maxTopicLength)
      return `topic has ${bytes} bytes; at most ${maxTopicLength} (--max-topic-length)`;
  }
  return null;
}

/** A chunk at least this big is not copied into a turn's buffer: it goes to the stream as it is. */
const GATHER_MAX_CHUNK = 16 * 1024;

type WriteCallback = (err?: Error | null) => void;

/**
 * Gathers what is written to a connection during one turn of the event loop into one buffer and
 * one system call: the first write of a turn corks the stream and keeps the chunks (mqtt-packet
 * writes a PUBLISH as five to seven small ones); the end of the turn (`setImmediate`) writes them
 * as one buffer and uncorks. A fan-out writes a packet to each subscriber in its own tick; without
 * this, each becomes its own `writev`; with the stream's own cork, each packet is still five to
 * seven buffered writes and one `writev` of as many pieces (issue 34: `writev` was 16% of the
 * UNS's profile in QoS 0 1→1 beside a bare relay's one `write` per turn).
 * - Order: a big chunk (`GATHER_MAX_CHUNK`) or anything that is not a Buffer or string goes to the
 *   stream after the chunks gathered before it; an `uncork` that would end the stream's last cork
 *   (a caller flushing before it destroys the socket) and `end` write the gathered chunks first.
 *   `destroy` drops them, as it dropped the corked chunks before.
 * - Backpressure as the stream's own: `write` answers false once the stream's buffer and the
 *   gathered bytes reach its high-water mark; when that answer was false and the gathered write
 *   itself is taken without one, `drain` is emitted (the writer that got false waits for it).
 */
export function coalesceWrites(stream: Duplex): void {
  const write = stream.write.bind(stream) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const uncork = stream.uncork.bind(stream);
  let chunks: Buffer[] = [];
  let bytes = 0;
  let callbacks: WriteCallback[] | null = null;
  let scheduled = false;
  let owesDrain = false;
  const flush = () => {
    if (chunks.length === 0) return;
    const out = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes);
    const cbs = callbacks;
    chunks = [];
    bytes = 0;
    callbacks = null;
    const ok = cbs ? write(out, (err?: Error | null) => cbs.forEach((cb) => cb(err))) : write(out);
    if (owesDrain && ok) process.nextTick(() => stream.emit('drain'));
    owesDrain = false;
  };
  const endOfTurn = () => {
    scheduled = false;
    flush();
    uncork();
  };
  stream.write = ((chunk: unknown, encoding?: unknown, cb?: unknown) => {
    if (!scheduled) {
      scheduled = true;
      stream.cork();
      setImmediate(endOfTurn);
    }
    const callback = (typeof encoding === 'function' ? encoding : cb) as WriteCallback | undefined;
    let buf: Buffer | undefined;
    if (Buffer.isBuffer(chunk)) buf = chunk;
    else if (typeof chunk === 'string')
      buf = Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    if (buf === undefined || buf.length >= GATHER_MAX_CHUNK || stream.destroyed || stream.writableEnded) {
      flush();
      return buf === undefined ? write(chunk, encoding, cb) : write(buf, callback);
    }
    chunks.push(buf);
    bytes += buf.length;
    if (callback) (callbacks ??= []).push(callback);
    if (stream.writableLength + bytes < stream.writableHighWaterMark) return true;
    owesDrain = true;
    return false;
  }) as typeof stream.write;
  stream.uncork = () => {
    if (stream.writableCorked === 1) flush();
    uncork();
  };
  const end = stream.end.bind(stream) as (...args: unknown[]) => Duplex;
  stream.end = ((...args: unknown[]) => {
    flush();
    return end(...args);
  }) as typeof stream.end;
}

/** Retained messages of one SUBSCRIBE handed to a connection before their writes are done, at most. */
export const RETAINED_WINDOW = 256;

/** The parts of aedes's Client that deliver a message at its QoS (instance fields). */
interface DeliverInternals {
  deliverQoS: (packet: WirePacket & { retain?: boolean; brokerId?: string | null }, cb: () => void) => void;
  subscriptions?: Record<string, { qos: number }>;
  connected: boolean;
  broker: { authorizeForward: (client: object, packet: WirePacket) => WirePacket | null | undefined };
  waitForDrain: (cb: () => void) => void;
  conn: Duplex;
}

/** Bytes a connection may hold unwritten from retained messages on SUBSCRIBE before they wait for `drain`. */
const RETAINED_BUFFERED = 1 << 20;

/**
 * A topic filter as a test of topics (MQTT matching: a filter starting with a wildcard does not
 * match a `$` topic). The common `a/b/#` and exact filters are a string comparison.
 */
export function filterTest(filter: string): (topic: string) => boolean {
  const levels = filter.split('/');
  if (!filter.includes('+')) {
    const hash = filter.indexOf('#');
    if (hash === -1) return (topic) => topic === filter;
    if (hash === 0 && filter.length === 1) return (topic) => topic.charCodeAt(0) !== 36;
    if (hash === filter.length - 1 && filter.charCodeAt(hash - 1) === 47) {
      const parent = filter.slice(0, hash - 1);
      const prefix = filter.slice(0, hash);
      return (topic) => topic.startsWith(prefix) || topic === parent;
    }
  }
  return (topic) => matchLevels(levels, topic.split('/'));
}

/** Tests of the connections' subscription filters, by subscription object (aedes keeps one per filter). */
const filterTests = new WeakMap<object, (topic: string) => boolean>();

/**
 * The QoS a message goes out at: at most the highest QoS granted to a subscription of the client
 * that matches its topic ([MQTT-3.8.4-8]). aedes looks the subscription up by the message's topic,
 * which finds no wildcard subscription: a QoS 0 subscriber of `a/#` got the QoS 1 retained
 * messages at QoS 1 (and had to acknowledge each), a QoS 1 subscriber of `a/#` live QoS 2 messages
 * at QoS 2. Linear in the client's subscriptions (at most `--max-subscriptions`), and it stops at
 * the first that grants `qos`: one test for the common single subscription.
 */
function grantedQos(subs: Record<string, { qos: number }> | undefined, topic: string, qos: number): number {
  if (qos === 0 || subs === undefined) return qos;
  let best = -1;
  for (const filter in subs) {
    const sub = subs[filter]!;
    if (sub.qos <= best) continue;
    let test = filterTests.get(sub);
    if (test === undefined) filterTests.set(sub, (test = filterTest(filter)));
    if (test(topic) && (best = sub.qos) >= qos) break;
  }
  return best < 0 ? qos : Math.min(qos, best);
}

/**
 * aedes sends the retained messages of a SUBSCRIBE one after the other through a stream, each
 * only when the one before is written: `deliverQoS` (and `deliver0`) write on the next turn of the
 * event loop and call back on the turn after that (`write.js`: `setImmediate(done)`), so each
 * retained message cost two turns and a system call of its own.
 *
 * Here, first, such a message's QoS is cut to the subscription's (`grantedQos`). One at QoS 0
 * (most: a dashboard subscribes at QoS 0) is written at once as one frame by the connection's
 * Wire (`sendRetained`, in order with everything else written to the connection) and the stream
 * is called back at once: a SUBSCRIBE's retained messages leave in one corked write per turn of
 * `RETAINED_WINDOW` messages (or 16 KiB), and wait for `drain` only when the connection holds
 * `RETAINED_BUFFERED` bytes unwritten. One at QoS 1/2 goes through aedes, and the stream is told
 * at once (on the next tick) for up to `RETAINED_WINDOW` such messages whose writes are not done:
 * they are written in the same turn, in order, into one corked write; beyond the window (a full
 * socket: aedes waits for `drain` before it calls back) the stream waits as before. aedes's
 * callback never waited for an acknowledgement (QoS 1/2 beyond the client's Receive Maximum are
 * held by wire.ts either way). A retained message sent on SUBSCRIBE is the one packet aedes marks
 * with `brokerId = null` (it is not deduplicated).
 */
export function windowRetainedDelivery(client: object): void {
  const c = client as DeliverInternals;
  const deliverQoS = c.deliverQoS;
  let pending = 0;
  let sent = 0;
  const written = () => void pending--;
  c.deliverQoS = (packet, cb) => {
    if (packet.brokerId !== null || packet.retain !== true) {
      // A live message reaches this function through a subscription granted QoS 1 or 2, so only
      // a QoS 2 message can be above its subscription's QoS; aedes cuts it only for a subscription
      // to the exact topic. Each delivery is a copy of its own (aedes's per-subscription `Packet`).
      if (packet.qos === 2) packet.qos = grantedQos(c.subscriptions, packet.topic as string, 2);
      deliverQoS(packet, cb);
      return;
    }
    const qos = grantedQos(c.subscriptions, packet.topic as string, (packet.qos as number) ?? 0);
    if (qos < packet.qos) packet.qos = qos;
    const wire = qos === 0 && c.connected ? wireOf(client) : undefined;
    if (wire !== undefined) {
      const forward = c.broker.authorizeForward(client, packet);
      const room = forward ? wire.sendRetained(forward) : true;
      if (!room && c.conn.writableLength > RETAINED_BUFFERED) c.waitForDrain(cb);
      else if (!room || ++sent % RETAINED_WINDOW === 0) setImmediate(cb);
      else cb();
      return;
    }
    if (pending >= RETAINED_WINDOW) {
      deliverQoS(packet, cb);
      return;
    }
    pending++;
    deliverQoS(packet, written);
    process.nextTick(cb);
  };
}

/** The part of mqemitter this layer hooks: its per-message step (an instance field). */
export interface EmitterInternals {
  _do?: (message: unknown, callback: unknown) => unknown;
  current?: number;
}

/**
 * mqemitter hands at most `concurrency` (100) messages to subscribers at once and queues the
 * rest; when one is done, the next queued one is handed on from inside that completion. A message
 * nobody is subscribed to completes at once, inside the call, so a long queue whose subscriber has
 * just gone (a slow QoS 0 subscriber of a fast publisher disconnecting: `npm run bench -- uns`,
 * QoS 0 1→1) was drained one stack frame deeper per message, through each publisher's read loop
 * (`nextBatch → PublishState → published → nextBatch`), until `RangeError: Maximum call stack
 * size exceeded` killed the process. This bounds the depth: past `MAX_SYNC_DEPTH` nested hand-ons,
 * the next one starts from a fresh stack on the next turn of the event loop (letting I/O in).
 */
export function breakEmitterRecursion(mq: EmitterInternals): void {
  const step = mq._do;
  if (typeof step !== 'function') return;
  let depth = 0;
  const guarded = function (this: unknown, message: unknown, callback: unknown): unknown {
    if (depth >= MAX_SYNC_DEPTH) {
      // Hold the message's slot meanwhile, so that a newer message queues behind it (order kept).
      if (typeof mq.current === 'number') mq.current++;
      setImmediate(() => {
        if (typeof mq.current === 'number') mq.current--;
        guarded.call(mq, message, callback);
      });
      return mq;
    }
    depth++;
    try {
      return step.call(mq, message, callback);
    } finally {
      depth--;
    }
  };
  mq._do = guarded;
}

/** Closes a connection; an MQTT 5 client is told why with a DISCONNECT first. */
export function kick(client: Client, reasonCode: number): void {
  const c = client as unknown as { disconnect: (o: { reasonCode: number }) => void };
  c.disconnect({ reasonCode });
}

/** Topics no client publishes to: the internal names of shared subscriptions. */
export function reservedProblem(topic: string): string | null {
  if (topic.startsWith(SHARE_PREFIX) || topic.startsWith(SHARED_PREFIX))
    return `a topic cannot start with ${SHARE_PREFIX} or ${SHARED_PREFIX}`;
  return null;
}

export function varintBytes(n: number): number {
  return n < 128 ? 1 : n < 16_384 ? 2 : n < 2_097_152 ? 3 : 4;
}

export function shortTopic(topic: string): string {
  return topic.length > 200 ? `${topic.slice(0, 200)}... (${topic.length} characters)` : topic;
}

/** The peer's address without its port: the unit of the CONNECT failure limit. */
export function addressOf(client: Client): string {
  const req = client.req;
  const socket = (req?.socket ?? (client.conn as { remoteAddress?: string })) as { remoteAddress?: string };
  return socket.remoteAddress ?? 'unknown';
}

export function remoteOf(client: Client): string {
  const req = client.req;
  const socket = (req?.socket ?? (client.conn as { remoteAddress?: string; remotePort?: number })) as {
    remoteAddress?: string;
    remotePort?: number;
  };
  const addr = socket.remoteAddress ?? 'unknown';
  return `${addr.includes(':') ? `[${addr}]` : addr}:${socket.remotePort ?? 0}`;
}
