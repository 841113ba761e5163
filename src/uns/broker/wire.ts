/**
 * The per-connection MQTT layer around aedes 2 (MQTT 3.1, 3.1.1 and 5): what aedes leaves to the
 * application, done on each connection's packets as they come in and go out.
 *
 * In (before aedes sees a packet):
 * - QoS 2 PUBLISHes awaiting PUBREL are counted against `maxInflightInbound` (advertised to MQTT 5
 *   clients as the Receive Maximum); one more closes the connection (MQTT 5: DISCONNECT 0x93).
 * - SUBSCRIBE/UNSUBSCRIBE of `$share/<group>/<filter>` are renamed to the internal
 *   `$shared/<group>/<filter>` that aedes accepts (it refuses `$share/` itself), for the shared
 *   subscriptions of shared.ts; refusals decided here (topic filter, subscription quota) are
 *   remembered for the SUBACK.
 * - PUBACK/PUBCOMP of the client end an outbound QoS 1/2 flow (Receive Maximum of the client).
 * - A retained QoS 1 PUBLISH is remembered until the broker has stored it (`retainedStored`).
 * Out (every packet aedes writes goes through `writeToStream` of mqtt-packet, hooked here per
 * connection):
 * - SUBACK and PUBACK/PUBREC reason codes this layer decided (0x8F, 0x90, 0x97) replace aedes's
 *   generic ones; the CONNACK advertises shared subscriptions.
 * - The PUBACK of a retained QoS 1 PUBLISH waits until the retained message is stored (committed
 *   to the database: aedes writes the PUBACK before it stores the message), and the PUBACKs and
 *   PUBRECs after it wait behind it (they leave in the order of their PUBLISHes). At most one
 *   read batch of the connection waits: aedes reads no more until the batch's publishes are done.
 * - to an MQTT 5 client: a PUBLISH bigger than the client's Maximum Packet Size is not sent (and
 *   counts as delivered, MQTT-3.1.2-25); QoS 1/2 PUBLISHes beyond the client's Receive Maximum
 *   wait for an acknowledgement; topic aliases are assigned up to the client's Topic Alias Maximum.
 */
import { createRequire } from 'node:module';
import type { Duplex } from 'node:stream';
import { filterProblem } from '../accounts/index.js';
import { ackFrame, publishFrame, VERSION_OPTS, writeNow } from './frames.js';

const require = createRequire(import.meta.url);

interface MqttPacketModule {
  writeToStream: (packet: WirePacket, stream: Duplex, opts?: { protocolVersion?: number }) => boolean;
  generate: (packet: WirePacket, opts?: { protocolVersion?: number }) => Buffer;
}
export const mqttPacket = require('mqtt-packet') as MqttPacketModule;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- mqtt-packet's packets of every command, read field by field by command (to do: mqtt-packet's Packet union)
export type WirePacket = Record<string, any> & { cmd: string };

/** MQTT 5 reason codes used by this layer. */
export const RC = {
  UNSPECIFIED: 0x80,
  NOT_AUTHORIZED: 0x87,
  KEEP_ALIVE_TIMEOUT: 0x8d,
  TOPIC_FILTER_INVALID: 0x8f,
  TOPIC_NAME_INVALID: 0x90,
  RECEIVE_MAXIMUM_EXCEEDED: 0x93,
  PACKET_TOO_LARGE: 0x95,
  QUOTA_EXCEEDED: 0x97,
} as const;

export const SHARE_PREFIX = '$share/';
/** What `$share/` is renamed to inside the broker (aedes refuses `$share/` with 0x9E). */
export const SHARED_PREFIX = '$shared/';

/** `$share/g/f` or `$shared/g/f` → its group and filter; null when not shared. */
export function parseShared(topic: string): { group: string; filter: string } | null {
  const prefix = topic.startsWith(SHARE_PREFIX)
    ? SHARE_PREFIX
    : topic.startsWith(SHARED_PREFIX)
      ? SHARED_PREFIX
      : null;
  if (!prefix) return null;
  const rest = topic.slice(prefix.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return { group: '', filter: '' };
  return { group: rest.slice(0, slash), filter: rest.slice(slash + 1) };
}

/** The topic filter the account rules and the limits judge: a shared one's underlying filter. */
export function underlyingFilter(topic: string): string {
  const shared = parseShared(topic);
  return shared ? shared.filter : topic;
}

/** Whether `$share/g/f` is well formed: a group without wildcards and a non-empty filter. */
export function sharedProblem(topic: string): string | null {
  const shared = parseShared(topic);
  if (!shared) return null;
  if (!shared.group || !shared.filter) return 'a shared subscription is $share/<group>/<filter>';
  if (/[+#]/.test(shared.group)) return 'a shared subscription group cannot contain + or #';
  return null;
}

const HOOK = Symbol('millwright.uns.write');
let installed = false;

/** Routes mqtt-packet's `writeToStream` to a stream's own hook when it has one (our connections). */
function installWriteHook(): void {
  if (installed) return;
  installed = true;
  const original = mqttPacket.writeToStream;
  mqttPacket.writeToStream = function writeToStream(packet, stream, opts) {
    const hook = (stream as unknown as Record<symbol, unknown>)[HOOK] as
      ((packet: WirePacket, opts: { protocolVersion?: number } | undefined) => boolean) | undefined;
    return hook ? hook(packet, opts) : original(packet, stream, opts);
  };
  originalWrite = original;
}
let originalWrite: MqttPacketModule['writeToStream'];

/** The parts of aedes's Client this layer reads (instance fields). */
export interface WireClient {
  id: string | null;
  version: number | null;
  clean: boolean;
  connected: boolean;
  closed: boolean;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- aedes' internal delivery function, called with the packet of any command
  subscriptions: Record<string, { qos: number; func: (packet: any, cb: () => void) => void }>;
  maximumPacketSize?: number | undefined;
  receiveMaximum?: number | undefined;
  _parser: { listeners: (event: string) => ((...args: unknown[]) => void)[] } & NodeJS.EventEmitter;
  conn: Duplex;
  emit: (event: string, ...args: unknown[]) => boolean;
  disconnect: (opts: { reasonCode: number; properties?: object }, done?: () => void) => void;
}

export interface WireOptions {
  maxInflightInbound: number;
  maxSubscriptions: number;
  /** Topic aliases assigned towards one client at most (whatever its own Topic Alias Maximum). */
  maxOutboundAliases: number;
  /** Held outbound QoS 1/2 messages beyond the client's Receive Maximum, at most. */
  maxHeld: number;
  /** A refusal of a topic or filter by the limits, or null. */
  topicProblem: (topic: string) => string | null;
  /** A too big outbound message was not sent to the client (QoS 1/2: forget it in its session). */
  onOversized: (client: WireClient, packet: WirePacket) => void;
  /** One QoS 2 message too many awaiting PUBREL (the connection is closed). */
  onInflightExceeded: (client: WireClient, err: Error) => void;
  /** Outbound messages dropped because the held queue was full. */
  onHeldDropped: (client: WireClient, packet: WirePacket) => void;
  /** The client has (or refused) a QoS 1/2 message it was sent: PUBACK or PUBREC. */
  onDelivered?: (wire: Wire, messageId: number) => void;
  /** An outbound PUBLISH about to be written (after flow control). */
  onPublishOut?: (wire: Wire, packet: WirePacket) => void;
  /** Called for every inbound SUBSCRIBE/UNSUBSCRIBE topic after renaming (shared membership). */
  onUnsubscribe?: (wire: Wire, topic: string) => void;
}

const wires = new WeakMap<object, Wire>();

export function wireOf(client: object): Wire | undefined {
  return wires.get(client);
}

/** One connection's state of this layer. */
export class Wire {
  readonly client: WireClient;
  readonly #opts: WireOptions;
  /** Protocol level of the CONNECT (known before aedes's connect completes). */
  version = 4;
  // The collections below are made on first use: an idle connection (most of them, in a plant)
  // holds none of them (memory per connection, `npm run bench -- uns-idle-heap`).
  #awaitingRel: Set<number> | undefined;
  #inflightOut: Set<number> | undefined;
  #held: { packet: WirePacket; opts: { protocolVersion?: number } | undefined }[] | undefined;
  #aliases: Map<string, number> | undefined;
  #subackCodes: Map<number, (number | undefined)[]> | undefined;
  #pubackCodes: Map<number, number> | undefined;
  #refused: WeakSet<object> | undefined;
  #admitted: Set<string> | undefined;
  /** Inbound QoS 2 message ids awaiting PUBREL. */
  get awaitingRel(): Set<number> {
    return (this.#awaitingRel ??= new Set());
  }
  /** Outbound QoS 1/2 message ids not yet acknowledged. */
  get inflightOut(): Set<number> {
    return (this.#inflightOut ??= new Set());
  }
  /** Outbound QoS 1/2 PUBLISHes waiting for room under the client's Receive Maximum. */
  get held(): { packet: WirePacket; opts: { protocolVersion?: number } | undefined }[] {
    return (this.#held ??= []);
  }
  /** Topic → alias assigned for this connection (MQTT 5, outbound). */
  get aliases(): Map<string, number> {
    return (this.#aliases ??= new Map());
  }
  /** SUBACK codes decided here, by SUBSCRIBE message id (index → code). */
  get subackCodes(): Map<number, (number | undefined)[]> {
    return (this.#subackCodes ??= new Map());
  }
  /** PUBACK/PUBREC codes decided here, by PUBLISH message id. */
  get pubackCodes(): Map<number, number> {
    return (this.#pubackCodes ??= new Map());
  }
  /** Subscription objects refused here (aedes asks authorizeSubscribe; it answers no). */
  get refused(): WeakSet<object> {
    return (this.#refused ??= new WeakSet());
  }
  /** Whether this layer refused the subscription object (without making the set). */
  wasRefused(sub: object): boolean {
    return this.#refused?.has(sub) === true;
  }
  /** Topics admitted by the subscription quota (until the rules refuse them or they are unsubscribed). */
  get admitted(): Set<string> {
    return (this.#admitted ??= new Set());
  }
  /** The client's Topic Alias Maximum (from its CONNECT): aliases this layer may assign. */
  clientAliasMax = 0;
  /**
   * Inbound retained QoS 1 PUBLISHes not yet stored, by message id → whether their PUBACK is
   * written and waits (made on first use).
   */
  #unstored: Map<number, HeldAck | null> | undefined;
  /** PUBACKs/PUBRECs written behind a PUBACK that waits for its retained message's store. */
  #acks: HeldAck[] = [];
  /** Whether a release of the ready PUBACKs is queued (one per commit, not one per message). */
  #releasing = false;

  constructor(client: WireClient, opts: WireOptions) {
    installWriteHook();
    this.client = client;
    this.#opts = opts;
    wires.set(client, this);
    (client.conn as unknown as Record<symbol, unknown>)[HOOK] = (
      packet: WirePacket,
      o: { protocolVersion?: number } | undefined,
    ) => this.#out(packet, o);
    const parser = client._parser;
    const listeners = parser.listeners('packet');
    parser.removeAllListeners('packet');
    parser.on('packet', (packet: WirePacket) => {
      if (!this.#in(packet)) return;
      for (const l of listeners) l.call(parser, packet);
    });
  }

  get v5(): boolean {
    return this.version === 5;
  }

  // --- in ------------------------------------------------------------------------------------

  /** Whether aedes gets the packet. */
  #in(packet: WirePacket): boolean {
    switch (packet.cmd) {
      case 'connect':
        this.version = Number(packet.protocolVersion) || 4;
        // Aliases this layer assigns: the client's maximum, bounded by ours (memory per connection).
        if (this.version === 5)
          this.clientAliasMax = Math.min(
            Number(packet.properties?.topicAliasMaximum ?? 0),
            this.#opts.maxOutboundAliases,
          );
        return true;
      case 'publish':
        if (packet.qos === 1 && packet.retain && typeof packet.messageId === 'number') {
          const unstored = (this.#unstored ??= new Map());
          if (!unstored.has(packet.messageId)) unstored.set(packet.messageId, null);
        }
        if (packet.qos === 2 && typeof packet.messageId === 'number') {
          if (!this.awaitingRel.has(packet.messageId)) {
            if (this.awaitingRel.size >= this.#opts.maxInflightInbound) {
              const limit = this.#opts.maxInflightInbound;
              const err = Object.assign(
                new Error(
                  `maxInflightInbound exceeded: ${limit} inbound QoS 2 messages already awaiting PUBREL`,
                ),
                { logged: true },
              );
              this.#opts.onInflightExceeded(this.client, err);
              if (this.v5 && this.client.connected) {
                this.client.disconnect({ reasonCode: RC.RECEIVE_MAXIMUM_EXCEEDED });
              } else {
                this.client.emit('error', err);
              }
              return false;
            }
            this.awaitingRel.add(packet.messageId);
          }
        }
        return true;
      case 'pubrel':
        this.#awaitingRel?.delete(packet.messageId as number);
        return true;
      case 'puback':
        this.#opts.onDelivered?.(this, packet.messageId as number);
        this.#acked(packet.messageId as number);
        return true;
      case 'pubcomp':
        this.#acked(packet.messageId as number);
        return true;
      case 'pubrec':
        // The client has the QoS 2 message (or refused it): it is not to be sent to another.
        this.#opts.onDelivered?.(this, packet.messageId as number);
        if ((packet.reasonCode ?? 0) >= 0x80) this.#acked(packet.messageId as number);
        return true;
      case 'subscribe':
        this.#subscribe(packet);
        return true;
      case 'unsubscribe':
        if (Array.isArray(packet.unsubscriptions)) {
          packet.unsubscriptions = (packet.unsubscriptions as string[]).map((t) => {
            const internal = toInternal(t);
            this.#admitted?.delete(internal);
            this.#opts.onUnsubscribe?.(this, internal);
            return internal;
          });
        }
        return true;
      default:
        return true;
    }
  }

  #subscribe(packet: WirePacket): void {
    const subs = packet.subscriptions as { topic: string; qos: number }[] | undefined;
    if (!Array.isArray(subs)) return;
    for (const s of subs) s.topic = toInternal(s.topic);
    // aedes answers the deduplicated list (the last of equal topics, in first-seen order).
    const order: string[] = [];
    const last = new Map<string, { topic: string; qos: number }>();
    for (const s of subs) {
      if (!last.has(s.topic)) order.push(s.topic);
      last.set(s.topic, s);
    }
    const codes: (number | undefined)[] = [];
    // What the connection holds: aedes's subscriptions and those admitted here that aedes may not
    // have added yet (SUBSCRIBEs read in one batch).
    const existing = new Set([...Object.keys(this.client.subscriptions ?? {}), ...(this.#admitted ?? [])]);
    let count = existing.size;
    let any = false;
    order.forEach((topic, i) => {
      const s = last.get(topic)!;
      // A filter with NUL closes the connection (1.5.3-2): authorizeSubscribe does it.
      if (topic.includes('\u0000')) return;
      const shared = sharedProblem(topic);
      const wildcards = filterProblem(underlyingFilter(topic));
      const problem = shared ?? this.#opts.topicProblem(underlyingFilter(topic)) ?? wildcards;
      if (problem === wildcards && wildcards && !this.v5) return; // MQTT 3.1.1: aedes closes
      if (problem) {
        this.refused.add(s);
        // aedes would close the connection for a malformed filter: it gets a placeholder.
        if (shared || wildcards) s.topic = `${REFUSED_PREFIX}${i}`;
        codes[i] = this.v5 ? RC.TOPIC_FILTER_INVALID : 0x80;
        any = true;
        return;
      }
      if (!existing.has(topic)) {
        if (count >= this.#opts.maxSubscriptions) {
          this.refused.add(s);
          codes[i] = this.v5 ? RC.QUOTA_EXCEEDED : 0x80;
          any = true;
          return;
        }
        count++;
        this.admitted.add(topic);
      }
    });
    if (any && typeof packet.messageId === 'number') this.subackCodes.set(packet.messageId, codes);
  }

  #acked(messageId: number): void {
    if (this.#inflightOut?.delete(messageId) !== true) return;
    this.#drainHeld();
  }

  #drainHeld(): void {
    const max = this.client.receiveMaximum ?? 65535;
    if (this.#held === undefined) return;
    while (this.held.length > 0 && this.inflightOut.size < max) {
      const { packet, opts } = this.held.shift()!;
      if (this.client.closed) return;
      this.#send(packet, opts);
    }
  }

  // --- out -----------------------------------------------------------------------------------

  #out(packet: WirePacket, opts: { protocolVersion?: number } | undefined): boolean {
    switch (packet.cmd) {
      case 'connack':
        if (this.v5 && packet.reasonCode === 0) {
          packet.properties = { ...packet.properties, sharedSubscriptionAvailable: true };
        }
        break;
      case 'suback': {
        const codes = this.#subackCodes?.get(packet.messageId as number);
        if (codes) {
          this.subackCodes.delete(packet.messageId as number);
          packet.granted = (packet.granted as number[]).map((g, i) => codes[i] ?? g);
        }
        break;
      }
      case 'puback':
      case 'pubrec': {
        const code = this.#pubackCodes?.get(packet.messageId as number);
        if (code !== undefined) {
          this.pubackCodes.delete(packet.messageId as number);
          if (this.v5) packet.reasonCode = code;
        }
        if (packet.cmd === 'pubrec' && (packet.reasonCode ?? 0) >= 0x80) {
          this.#awaitingRel?.delete(packet.messageId as number);
        }
        return this.#ack(packet, opts);
      }
      case 'publish':
        return this.#publish(packet, opts);
      default:
        break;
    }
    return originalWrite(packet, this.client.conn, opts);
  }

  /** A PUBACK/PUBREC: written now, or after the store of a retained message before it. */
  #ack(packet: WirePacket, opts: { protocolVersion?: number } | undefined): boolean {
    const unstored = this.#unstored;
    const id = packet.messageId as number;
    let wait = false;
    if (packet.cmd === 'puback' && unstored?.has(id) === true) {
      // A refused PUBLISH (0x87, 0x90) is not stored: its PUBACK need not wait.
      wait = (packet.reasonCode ?? 0) < 0x80;
      if (!wait) unstored.delete(id);
    }
    if (!wait && this.#acks.length === 0) return originalWrite(packet, this.client.conn, opts);
    const held: HeldAck = { packet, opts, ready: !wait };
    if (wait) unstored!.set(id, held);
    this.#acks.push(held);
    return true;
  }

  /** Whether one more retained PUBLISH's publish may finish before its commit (see releaseRetainedAcks). */
  mayDeferStore(): boolean {
    return (this.#unstored?.size ?? 0) <= this.#opts.maxInflightInbound;
  }

  /**
   * The retained QoS 1 message of `messageId` is stored (or its publish failed): its PUBACK, and
   * those waiting behind it, leave.
   */
  retainedStored(messageId: number | undefined): void {
    const unstored = this.#unstored;
    if (messageId === undefined || unstored === undefined) return;
    const waiting = unstored.get(messageId);
    if (waiting === undefined) return;
    unstored.delete(messageId);
    if (waiting !== null) waiting.ready = true;
    // The PUBACKs of one commit are told one after the other (a microtask each): they leave
    // together, after the last of them, in one pass over the queue.
    if (this.#releasing || this.#acks.length === 0 || !this.#acks[0]!.ready) return;
    this.#releasing = true;
    queueMicrotask(() => this.#releaseAcks());
  }

  #releaseAcks(): void {
    this.#releasing = false;
    const acks = this.#acks;
    let sent = 0;
    while (sent < acks.length && acks[sent]!.ready) sent++;
    if (sent === 0) return;
    const ready = sent === acks.length ? acks : acks.slice(0, sent);
    this.#acks = sent === acks.length ? [] : acks.slice(sent);
    if (this.client.closed) return;
    // The acknowledgements of a commit leave as one buffer, now (not at the end of the turn: the
    // publisher works on them while the broker goes on with the rest of its read; issue 34).
    const frames = ready.map((a) => ackFrame(a.packet, a.opts));
    this.client.conn.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
    writeNow(this.client.conn);
  }

  /**
   * A retained message sent on SUBSCRIBE at QoS 0 (aedes-support.ts, `windowRetainedDelivery`):
   * the same rules as any PUBLISH to this client, written now as one frame (not mqtt-packet's
   * several writes), in order with the rest of the connection's writes. Answers whether the
   * connection's buffer has room (`write`'s answer).
   */
  sendRetained(packet: WirePacket): boolean {
    return this.#publish(packet, VERSION_OPTS[this.version] ?? VERSION_OPTS[4], true);
  }

  #publish(packet: WirePacket, opts: { protocolVersion?: number } | undefined, frame = false): boolean {
    if (!this.v5) {
      this.#opts.onPublishOut?.(this, packet);
      return frame
        ? this.client.conn.write(publishFrame(packet, opts))
        : originalWrite(packet, this.client.conn, opts);
    }
    const max = this.client.maximumPacketSize;
    if (max !== undefined && max > 0 && estimate(packet) > max) {
      const size = mqttPacket.generate(packet, opts).length;
      if (size > max) {
        this.#opts.onOversized(this.client, packet);
        return true;
      }
    }
    if (packet.qos > 0 && typeof packet.messageId === 'number') {
      const id = packet.messageId;
      if (!this.inflightOut.has(id)) {
        if (this.inflightOut.size >= (this.client.receiveMaximum ?? 65535)) {
          if (this.held.length >= this.#opts.maxHeld) {
            this.#opts.onHeldDropped(this.client, packet);
            return true;
          }
          this.held.push({ packet, opts });
          return true;
        }
      }
    }
    return this.#send(packet, opts, frame);
  }

  #send(packet: WirePacket, opts: { protocolVersion?: number } | undefined, frame = false): boolean {
    if (packet.qos > 0 && typeof packet.messageId === 'number') this.inflightOut.add(packet.messageId);
    this.#opts.onPublishOut?.(this, packet);
    const aliasMax = this.clientAliasMax;
    if (aliasMax > 0 && packet.topic) {
      const topic = packet.topic as string;
      const alias = this.aliases.get(topic);
      if (alias !== undefined) {
        packet = { ...packet, topic: '', properties: { ...packet.properties, topicAlias: alias } };
      } else if (this.aliases.size < aliasMax) {
        const next = this.aliases.size + 1;
        this.aliases.set(topic, next);
        packet = { ...packet, properties: { ...packet.properties, topicAlias: next } };
      }
    }
    if (frame) return this.client.conn.write(publishFrame(packet, opts));
    return originalWrite(packet, this.client.conn, opts);
  }
}

/** A PUBACK/PUBREC held behind a retained message's store. */
interface HeldAck {
  packet: WirePacket;
  opts: { protocolVersion?: number } | undefined;
  ready: boolean;
}

type PublishFn = (packet: WirePacket, client: object | null, done: (err?: Error) => void) => void;

/** A store whose retained write may be committed after the publish is done (`SqlPersistence`). */
export interface RetainedCommits {
  deferRetainedCommit(payload: Buffer): void;
  retainedCommit(payload: Buffer): Promise<void> | undefined;
}

/**
 * aedes writes the PUBACK of a QoS 1 PUBLISH before it publishes the message (storing a retained
 * one); the connection's Wire holds a retained message's PUBACK until this says the message is
 * committed, so that a PUBACKed retained message survives a crash.
 *
 * With `commits` (the SQL store), the publish itself does not wait for the commit: the message is
 * in memory (delivered, and seen by new subscribers) and the commit follows, so aedes reads the
 * connection's next PUBLISHes meanwhile and their retained writes join the same or the next
 * transaction, instead of one read batch per commit; the PUBACK still leaves after the commit.
 * At most `maxInflightInbound` retained PUBLISHes of a connection wait so; past that, the publish
 * waits for its commit again (and aedes reads no more), which bounds what a client that does not
 * wait for its PUBACKs makes the broker hold. A failed commit closes the connection (no PUBACK).
 */
export function releaseRetainedAcks(aedes: object, commits?: RetainedCommits): void {
  const target = aedes as { publish: PublishFn };
  const publish = target.publish.bind(aedes);
  target.publish = (packet, client, done) => {
    // publish(packet, done) is aedes's form without a client (the broker's own messages).
    if (!client || typeof client === 'function' || packet.qos !== 1 || !packet.retain)
      return publish(packet, client, done);
    const wire = wireOf(client);
    const payload = packet.payload as unknown;
    const defer =
      commits !== undefined &&
      wire !== undefined &&
      wire.mayDeferStore() &&
      Buffer.isBuffer(payload) &&
      payload.length > 0;
    if (defer) commits.deferRetainedCommit(payload);
    publish(packet, client, (err) => {
      const committed = defer && !err ? commits.retainedCommit(payload) : undefined;
      if (!committed || !wire) {
        wire?.retainedStored(packet.messageId as number | undefined);
        return done(err);
      }
      committed.then(
        () => wire.retainedStored(packet.messageId as number | undefined),
        (e: unknown) => {
          if (!wire.client.closed) wire.client.emit('error', e);
        },
      );
      done();
    });
  };
}

/** What a malformed filter refused here is renamed to before aedes sees it. */
export const REFUSED_PREFIX = '$refused/';

function toInternal(topic: string): string {
  return topic.startsWith(SHARE_PREFIX) ? SHARED_PREFIX + topic.slice(SHARE_PREFIX.length) : topic;
}

/** An upper estimate of a PUBLISH's bytes, to skip the exact count for small ones. */
function estimate(packet: WirePacket): number {
  const payload = packet.payload as Buffer | string | undefined;
  const payloadBytes = payload ? (Buffer.isBuffer(payload) ? payload.length : payload.length * 3) : 0;
  const props = packet.properties ? JSON.stringify(packet.properties).length * 3 : 0;
  return 16 + ((packet.topic as string)?.length ?? 0) * 3 + payloadBytes + props;
}
