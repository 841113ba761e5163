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
 *
 * Several nodes (Redis mode): every message reaches every node through mqemitter-redis; only the
 * node where it was published (its `brokerId`) hands it to a group, so that a group gets it once.
 * Each node tells the others which of its connected clients are members of which group (on every
 * change and every `ANNOUNCE_MS`; a node silent for `EXPIRE_MS` is forgotten), and the publishing
 * node chooses round robin among the members of all nodes: a member on another node gets the
 * message forwarded to its node (`$SYS/<node>/uns/shared/deliver`), which delivers it, or chooses
 * again (without that member) when the member has gone meanwhile.
 */
import type { Aedes, Client } from 'aedes';
import { parseShared, wireOf, type Wire, type WirePacket } from './wire.js';
import type { AsyncPersistence } from './sql-persistence.js';

/** How often a node tells the others its group members (Redis mode). */
const ANNOUNCE_MS = 2000;
/** A node that said nothing for this long has no members any more. */
const EXPIRE_MS = 3 * ANNOUNCE_MS;

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

/** A member on another node (Redis mode). */
interface RemoteNode {
  at: number;
  groups: Map<string, string[]>;
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
    on: (topic: string, listener: never, done?: () => void) => void;
    removeListener: (topic: string, listener: never) => void;
    emit: (packet: object, done?: (err?: Error) => void) => void;
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
  readonly counters = { delivered: 0, redelivered: 0, dropped: 0, forwarded: 0 };
  readonly #clustered: boolean;
  readonly #remote = new Map<string, RemoteNode>();
  #announceTimer: NodeJS.Timeout | undefined;
  #announcePending = false;
  #closed = false;

  constructor(aedes: Aedes, persistence: AsyncPersistence, clustered = false) {
    this.#aedes = aedes as AedesInternals;
    this.#persistence = persistence;
    this.#brokerId = `${aedes.id}/$share`;
    this.#clustered = clustered;
  }

  /** Redis mode: listens to the other nodes' members and forwards; answers when subscribed. */
  async start(): Promise<void> {
    if (!this.#clustered) return;
    const mq = this.#aedes.mq;
    const on = (topic: string, fn: (packet: WirePacket, cb: () => void) => void) =>
      new Promise<void>((resolve) => mq.on(topic, fn as never, () => resolve()));
    await on('$SYS/+/uns/shared/members', (packet, cb) => {
      this.#onMembers(packet);
      cb();
    });
    await on(`$SYS/${this.#aedes.id}/uns/shared/deliver`, (packet, cb) => {
      this.#onForward(packet);
      cb();
    });
    await on('$SYS/+/birth', (_packet, cb) => {
      this.#announce();
      cb();
    });
    this.#announceTimer = setInterval(() => {
      this.#expireNodes();
      this.#announceNow();
    }, ANNOUNCE_MS);
    this.#announceTimer.unref();
    this.#announceNow();
  }

  /** A subscription changed somewhere (aedes's `subscribe`/`unsubscribe`): tell the other nodes. */
  changed(): void {
    this.#announce();
  }

  stop(): void {
    this.#closed = true;
    if (this.#announceTimer) clearInterval(this.#announceTimer);
  }

  /** Adds a member (called when the account rules allowed its `$shared/` subscription). */
  join(client: Client, internal: string): void {
    const parsed = parseShared(internal);
    if (!parsed || !parsed.filter) return;
    const c = client as AedesClient;
    const group = this.#group(internal)!;
    const existing = group.members.find((m) => m.id === c.id);
    if (existing) existing.persistent = !c.clean;
    else group.members.push({ id: c.id, persistent: !c.clean });
    let mine = this.#ofClient.get(c.id);
    if (!mine) this.#ofClient.set(c.id, (mine = new Set()));
    mine.add(internal);
    this.#announce();
  }

  /** The group of an internal `$shared/` topic, made (and subscribed to its filter) if new. */
  #group(internal: string): Group | undefined {
    const existing = this.#groups.get(internal);
    if (existing) return existing;
    const parsed = parseShared(internal);
    if (!parsed || !parsed.filter) return undefined;
    const g: Group = {
      internal,
      filter: parsed.filter,
      members: [],
      next: 0,
      listener: (packet, cb) => {
        // Several nodes: the node the message was published on hands it to the group.
        // The member's delivery completes the message (as aedes's own subscriptions do), so
        // that a slow group slows its publishers down rather than filling the broker's memory.
        if (!this.#clustered || packet.brokerId === this.#aedes.id) this.#dispatch(g, packet, NONE, cb);
        else cb();
      },
    };
    this.#groups.set(internal, g);
    this.#aedes.mq.on(g.filter, g.listener as never);
    return g;
  }

  /** Drops a group nobody (here or on another node) is a member of. */
  #maybeDrop(group: Group): void {
    if (group.members.length > 0) return;
    for (const node of this.#remote.values()) if (node.groups.get(group.internal)?.length) return;
    this.#groups.delete(group.internal);
    this.#aedes.mq.removeListener(group.filter, group.listener as never);
  }

  /** Removes a member from a group (UNSUBSCRIBE, or its session ended). */
  leave(clientId: string, internal: string): void {
    const group = this.#groups.get(internal);
    this.#ofClient.get(clientId)?.delete(internal);
    if (this.#ofClient.get(clientId)?.size === 0) this.#ofClient.delete(clientId);
    if (!group) return;
    group.members = group.members.filter((m) => m.id !== clientId);
    this.#maybeDrop(group);
    this.#announce();
  }

  /** A client connected: a clean one starts without the memberships of its old session. */
  connected(client: Client): void {
    const c = client as AedesClient;
    this.#announce();
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
    this.#announce();
    if (sessionEnds) {
      for (const internal of [...(this.#ofClient.get(c.id) ?? [])]) this.leave(c.id, internal);
    }
    if (!pending || !sessionEnds) return;
    for (const p of pending.byKey.values()) {
      const group = this.#group(p.internal);
      this.counters.redelivered++;
      if (group) this.#dispatch(group, p.packet, new Set([c.id]));
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

  #dispatch(group: Group, packet: WirePacket, exclude: Set<string> = NONE, cb: () => void = noop): void {
    const topic = packet.topic as string;
    // Wildcards do not match `$` topics (MQTT-4.7.2-1); the broker's own `$SYS` never goes here.
    if (topic.charCodeAt(0) === 36) return cb();
    if (typeof packet.messageExpiry === 'number' && packet.messageExpiry <= Date.now()) return cb();
    const member = this.#pick(group, exclude);
    if (member && member.node === undefined) {
      this.#deliver(member.client!, group, packet, cb);
      return;
    }
    cb();
    if (member) {
      this.#forward(member.node!, member.id, group, packet, exclude);
      return;
    }
    if ((packet.qos ?? 0) > 0) {
      const offline = group.members.filter((m) => m.persistent && !exclude.has(m.id));
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

  /** The next member round robin: a connected client here, or a member on another node. */
  #pick(group: Group, exclude: Set<string>): { id: string; client?: AedesClient; node?: string } | undefined {
    const candidates: { id: string; node?: string }[] = group.members.map((m) => ({ id: m.id }));
    if (this.#clustered) {
      const now = Date.now();
      for (const [node, r] of [...this.#remote].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
        if (now - r.at > EXPIRE_MS) continue;
        for (const id of r.groups.get(group.internal) ?? []) candidates.push({ id, node });
      }
    }
    const n = candidates.length;
    const clients = this.#aedes.clients;
    for (let i = 0; i < n; i++) {
      const index = (group.next + i) % n;
      const m = candidates[index]!;
      if (exclude.has(m.id)) continue;
      if (m.node !== undefined) {
        if (clients[m.id]) continue; // it has moved here since its node spoke
        group.next = (index + 1) % n;
        return m;
      }
      const c = clients[m.id];
      if (!c || !c.connected || c.closed || !c.subscriptions[group.internal]) continue;
      group.next = (index + 1) % n;
      return { id: m.id, client: c };
    }
    return undefined;
  }

  // --- several nodes (Redis mode) -------------------------------------------------------------

  /** Tells the other nodes this node's members, soon (changes of one tick are told once). */
  #announce(): void {
    if (!this.#clustered || this.#announcePending || this.#closed) return;
    this.#announcePending = true;
    setImmediate(() => this.#announceNow());
  }

  #announceNow(): void {
    this.#announcePending = false;
    if (!this.#clustered || this.#closed) return;
    const groups: Record<string, string[]> = {};
    const clients = this.#aedes.clients;
    for (const g of this.#groups.values()) {
      const ids = g.members
        .map((m) => m.id)
        .filter((id) => {
          const c = clients[id];
          return c && c.connected && !c.closed && c.subscriptions[g.internal];
        });
      if (ids.length > 0) groups[g.internal] = ids;
    }
    this.#aedes.mq.emit(
      {
        topic: `$SYS/${this.#aedes.id}/uns/shared/members`,
        payload: Buffer.from(JSON.stringify({ groups })),
      },
      () => {},
    );
  }

  #onMembers(packet: WirePacket): void {
    const node = String(packet.topic).split('/')[1]!;
    if (node === this.#aedes.id) return;
    let parsed: { groups?: Record<string, string[]> };
    try {
      parsed = JSON.parse(Buffer.from(packet.payload as Buffer).toString('utf8'));
    } catch {
      return;
    }
    const before = this.#remote.get(node);
    const groups = new Map<string, string[]>();
    for (const [internal, ids] of Object.entries(parsed.groups ?? {})) {
      if (!parseShared(internal) || !Array.isArray(ids)) continue;
      groups.set(
        internal,
        ids.filter((x) => typeof x === 'string'),
      );
      this.#group(internal);
    }
    this.#remote.set(node, { at: Date.now(), groups });
    for (const internal of before?.groups.keys() ?? []) {
      const g = this.#groups.get(internal);
      if (g && !groups.has(internal)) this.#maybeDrop(g);
    }
  }

  #expireNodes(): void {
    const now = Date.now();
    for (const [node, r] of this.#remote) {
      if (now - r.at <= EXPIRE_MS) continue;
      this.#remote.delete(node);
      for (const internal of r.groups.keys()) {
        const g = this.#groups.get(internal);
        if (g) this.#maybeDrop(g);
      }
    }
  }

  #forward(node: string, clientId: string, group: Group, packet: WirePacket, exclude: Set<string>): void {
    this.counters.forwarded++;
    const body = {
      clientId,
      internal: group.internal,
      exclude: [...exclude],
      packet: {
        topic: packet.topic,
        payload: Buffer.from(packet.payload as Buffer).toString('base64'),
        qos: packet.qos ?? 0,
        retain: packet.retain ?? false,
        properties: packet.properties,
        messageExpiry: packet.messageExpiry,
        clientId: packet.clientId,
      },
    };
    this.#aedes.mq.emit(
      { topic: `$SYS/${node}/uns/shared/deliver`, payload: Buffer.from(JSON.stringify(body)) },
      () => {},
    );
  }

  #onForward(message: WirePacket): void {
    let body: {
      clientId: string;
      internal: string;
      exclude: string[];
      packet: WirePacket & { payload: string };
    };
    try {
      body = JSON.parse(Buffer.from(message.payload as Buffer).toString('utf8'), reviveBuffers);
    } catch {
      return;
    }
    const group = this.#group(body.internal);
    if (!group) return;
    const packet: WirePacket = {
      ...body.packet,
      cmd: 'publish',
      payload: Buffer.from(body.packet.payload, 'base64'),
    };
    const c = this.#aedes.clients[body.clientId];
    if (c && c.connected && !c.closed && c.subscriptions[group.internal]) {
      this.#deliver(c, group, packet);
      return;
    }
    // The member went meanwhile: choose again, without it.
    this.#dispatch(group, packet, new Set([...body.exclude, body.clientId]));
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

  #deliver(client: AedesClient, group: Group, packet: WirePacket, cb: () => void = noop): void {
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
        () => sub.func(copy, cb),
        () => cb(),
      );
    } else {
      sub.func(copy, cb);
    }
  }
}

function noop(): void {}

const NONE = new Set<string>();

/** JSON.parse reviver for Buffers as JSON.stringify writes them (correlation data). */
function reviveBuffers(_key: string, value: unknown): unknown {
  const v = value as { type?: string; data?: unknown };
  if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data as number[]);
  return value;
}
