/**
 * Shared subscriptions (`$share/<group>/<filter>`, MQTT 5 section 4.8.2, offered to MQTT 3.1.1
 * clients too): each message matching a group's filter goes to one member of the group.
 *
 * aedes 2.0.0-beta.1 refuses `$share/` (SUBACK 0x9E); wire.ts renames it to `$shared/<group>/
 * <filter>`, a subscription that aedes keeps for the client (in its session too) but that no
 * PUBLISH matches (client publishes to `$` topics are refused). This class subscribes once per
 * group to the underlying filter and hands each message to the next connected member (round
 * robin, skipping members that are not connected), through that member's own aedes subscription
 * (its QoS, subscription identifier, retain-as-published; a persistent member's copy is queued in
 * its session first, as aedes does for its own deliveries).
 *
 * QoS 1/2 messages handed to a member are followed until the member acknowledges them (wire.ts
 * reports PUBACK/PUBCOMP); when a member whose session ends with its connection (clean session,
 * MQTT 5 session expiry 0) goes away, what it had not acknowledged is handed to another member.
 * A persistent member keeps its unacknowledged messages in its session and gets them again when
 * it reconnects (MQTT-4.8.2: the server MAY wait for it). A QoS 1/2 message for a group without a
 * connected member is queued in the session of one of its persistent members, or dropped when it
 * has none; a QoS 0 one is dropped.
 */
import type { Aedes, Client } from 'aedes';
import { parseShared, wireOf, type Wire, type WirePacket } from './wire.js';
import type { AsyncPersistence } from './sql-persistence.js';

interface Member {
  id: string;
  /** Whether the member's session outlives its connection (it can be queued for offline). */
  persistent: boolean;
}

interface Group {
  internal: string;
  filter: string;
  members: Member[];
  next: number;
  listener: (packet: WirePacket, cb: () => void) => void;
}

interface Pending {
  internal: string;
  packet: WirePacket;
  messageId?: number;
}

type AedesClient = Client & {
  clean: boolean;
  closed: boolean;
  connected: boolean;
  subscriptions: Record<string, { qos: number; func: (packet: unknown, cb: () => void) => void }>;
};

/** The parts of aedes this class uses beyond its typings (instance fields). */
type AedesInternals = Aedes & {
  mq: {
    on: (topic: string, listener: never) => void;
    removeListener: (topic: string, listener: never) => void;
  };
  clients: Record<string, AedesClient | undefined>;
};

export class SharedSubscriptions {
  readonly #aedes: AedesInternals;
  readonly #persistence: AsyncPersistence;
  readonly #groups = new Map<string, Group>();
  readonly #ofClient = new Map<string, Set<string>>();
  readonly #pending = new WeakMap<Wire, { byKey: Map<string, Pending>; byId: Map<number, string> }>();
  readonly #brokerId: string;
  #seq = 0;
  /** Messages handed to members, redelivered after a member left, dropped without a member. */
  readonly counters = { delivered: 0, redelivered: 0, dropped: 0 };

  constructor(aedes: Aedes, persistence: AsyncPersistence) {
    this.#aedes = aedes as AedesInternals;
    this.#persistence = persistence;
    this.#brokerId = `${aedes.id}/$share`;
  }

  /** Adds a member (called when the account rules allowed its `$shared/` subscription). */
  join(client: Client, internal: string): void {
    const parsed = parseShared(internal);
    if (!parsed || !parsed.filter) return;
    const c = client as AedesClient;
    let group = this.#groups.get(internal);
    if (!group) {
      const g: Group = {
        internal,
        filter: parsed.filter,
        members: [],
        next: 0,
        listener: (packet, cb) => {
          this.#dispatch(g, packet);
          cb();
        },
      };
      group = g;
      this.#groups.set(internal, g);
      this.#aedes.mq.on(g.filter, g.listener as never);
    }
    const existing = group.members.find((m) => m.id === c.id);
    if (existing) existing.persistent = !c.clean;
    else group.members.push({ id: c.id, persistent: !c.clean });
    let mine = this.#ofClient.get(c.id);
    if (!mine) this.#ofClient.set(c.id, (mine = new Set()));
    mine.add(internal);
  }

  /** Removes a member from a group (UNSUBSCRIBE, or its session ended). */
  leave(clientId: string, internal: string): void {
    const group = this.#groups.get(internal);
    this.#ofClient.get(clientId)?.delete(internal);
    if (this.#ofClient.get(clientId)?.size === 0) this.#ofClient.delete(clientId);
    if (!group) return;
    group.members = group.members.filter((m) => m.id !== clientId);
    if (group.members.length === 0) {
      this.#groups.delete(internal);
      this.#aedes.mq.removeListener(group.filter, group.listener as never);
    }
  }

  /** A client connected: a clean one starts without the memberships of its old session. */
  connected(client: Client): void {
    const c = client as AedesClient;
    if (!c.clean) return;
    for (const internal of [...(this.#ofClient.get(c.id) ?? [])]) {
      if (!c.subscriptions[internal]) this.leave(c.id, internal);
    }
  }

  /** A client's connection ended: hand on what it had not acknowledged; forget a clean one. */
  disconnected(client: Client): void {
    const c = client as AedesClient;
    const wire = wireOf(c);
    const pending = wire ? this.#pending.get(wire) : undefined;
    const sessionEnds = c.clean;
    if (sessionEnds) {
      for (const internal of [...(this.#ofClient.get(c.id) ?? [])]) this.leave(c.id, internal);
    }
    if (!pending || !sessionEnds) return;
    for (const p of pending.byKey.values()) {
      const group = this.#groups.get(p.internal);
      this.counters.redelivered++;
      if (group) this.#dispatch(group, p.packet, c.id);
      else this.counters.dropped++;
    }
    pending.byKey.clear();
    pending.byId.clear();
  }

  /** A session expired (MQTT 5): it is no member any more. */
  expired(clientId: string): void {
    for (const internal of [...(this.#ofClient.get(clientId) ?? [])]) this.leave(clientId, internal);
  }

  /** wire.ts: a PUBLISH goes out; a shared one's message id is noted for its acknowledgement. */
  onPublishOut(wire: Wire, packet: WirePacket): void {
    if (packet.brokerId !== this.#brokerId || packet.qos === 0) return;
    const pending = this.#pending.get(wire);
    const key = String(packet.brokerCounter);
    const p = pending?.byKey.get(key);
    if (!p || typeof packet.messageId !== 'number') return;
    p.messageId = packet.messageId;
    pending!.byId.set(packet.messageId, key);
  }

  /** wire.ts: the client acknowledged a QoS 1/2 message. */
  onAcked(wire: Wire, messageId: number): void {
    const pending = this.#pending.get(wire);
    const key = pending?.byId.get(messageId);
    if (key === undefined) return;
    pending!.byId.delete(messageId);
    pending!.byKey.delete(key);
  }

  #dispatch(group: Group, packet: WirePacket, exclude?: string): void {
    const topic = packet.topic as string;
    // Wildcards do not match `$` topics (MQTT-4.7.2-1); the broker's own `$SYS` never goes here.
    if (topic.charCodeAt(0) === 36) return;
    if (typeof packet.messageExpiry === 'number' && packet.messageExpiry <= Date.now()) return;
    const member = this.#pick(group, exclude);
    if (member) {
      this.#deliver(member, group, packet);
      return;
    }
    if ((packet.qos ?? 0) > 0) {
      const offline = group.members.filter((m) => m.persistent && m.id !== exclude);
      if (offline.length > 0) {
        const m = offline[group.next++ % offline.length]!;
        const copy = this.#copy(packet, packet.qos as number);
        this.#persistence.outgoingEnqueue({ clientId: m.id }, copy as never).catch(() => {});
        this.counters.delivered++;
        return;
      }
    }
    this.counters.dropped++;
  }

  #pick(group: Group, exclude?: string): AedesClient | undefined {
    const n = group.members.length;
    const clients = this.#aedes.clients;
    for (let i = 0; i < n; i++) {
      const index = (group.next + i) % n;
      const m = group.members[index]!;
      if (m.id === exclude) continue;
      const c = clients[m.id];
      if (!c || !c.connected || c.closed || !c.subscriptions[group.internal]) continue;
      group.next = (index + 1) % n;
      return c;
    }
    return undefined;
  }

  #copy(packet: WirePacket, qos: number): WirePacket {
    const copy: WirePacket = {
      cmd: 'publish',
      topic: packet.topic,
      payload: packet.payload,
      qos,
      retain: packet.retain ?? false,
      dup: false,
      brokerId: this.#brokerId,
      brokerCounter: ++this.#seq,
    };
    if (packet.properties !== undefined) copy.properties = packet.properties;
    if (packet.messageExpiry !== undefined) copy.messageExpiry = packet.messageExpiry;
    if (packet.clientId !== undefined) copy.clientId = packet.clientId;
    return copy;
  }

  #deliver(client: AedesClient, group: Group, packet: WirePacket): void {
    const sub = client.subscriptions[group.internal]!;
    const qos = Math.min(packet.qos ?? 0, sub.qos);
    const copy = this.#copy(packet, qos);
    this.counters.delivered++;
    if (qos > 0) {
      const wire = wireOf(client);
      if (wire) {
        let pending = this.#pending.get(wire);
        if (!pending) this.#pending.set(wire, (pending = { byKey: new Map(), byId: new Map() }));
        // Kept as published (with its own QoS), for a redelivery to another member.
        pending.byKey.set(String(copy.brokerCounter), { internal: group.internal, packet });
      }
    }
    if (qos > 0 && !client.clean) {
      this.#persistence.outgoingEnqueue({ clientId: client.id }, copy as never).then(
        () => sub.func(copy, noop),
        () => {},
      );
    } else {
      sub.func(copy, noop);
    }
  }
}

function noop(): void {}
