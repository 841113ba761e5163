/**
 * The floor of `bench/uns`'s plain pub/sub cases (issue 34): the least a broker in Node does to
 * relay MQTT messages, with no Millwright code and no broker library around it. A bare Node
 * process (plain JavaScript, no loader), started by bench/uns.ts like the brokers and driven by
 * the same load workers (mqtt.js):
 *
 *   node bench/uns-floor.mjs <receive maximum> <username> <password>
 *
 * It prints one line `floor-ready {"port":N}` and runs until killed. What it does:
 * - a `net` server on 127.0.0.1 (no Nagle delay on its sockets, as the brokers), hand-rolled frame
 *   parsing (fixed header, variable-length integers, MQTT 3.1.1 and 5);
 * - CONNECT: the username and password compared with the bench's as plain strings (Mosquitto
 *   hashes the password once per connection, which the bench does not time; no per-message cost
 *   either way); CONNACK with the Receive Maximum the bench tells both brokers (MQTT 5); the same
 *   number (or the client's own Receive Maximum, when lower) as its outbound in-flight limit per
 *   client, as Mosquitto's `max_inflight_messages`, which the bench sets to it (without it, a QoS 2 fan-out to 50 put up to 65,535
 *   unfinished flows per subscriber on the bench's workers, whose counting then stalled);
 * - SUBSCRIBE: SUBACK with the granted QoS; exact topic match only (the bench's topics have no
 *   wildcards) and `$share/<group>/<topic>` delivered round robin among the group's members; the
 *   topic checked against the bench's one rule, a `bench/` prefix, on every SUBSCRIBE and PUBLISH
 *   (Mosquitto checks its ACL on both; the UNS its account's rules);
 * - PUBLISH at QoS 0/1/2 both ways: QoS 1 answered with PUBACK after the deliveries are queued;
 *   QoS 2 kept by packet id, PUBREC, delivered on PUBREL, then PUBCOMP (as Mosquitto and aedes
 *   deliver an incoming QoS 2 message on PUBREL); deliveries at min(publish QoS, subscription QoS)
 *   with the subscriber's own packet ids (QoS 1: freed on PUBACK; QoS 2: PUBREC answered with
 *   PUBREL, freed on PUBCOMP), no more in flight than the subscriber's Receive Maximum (the rest
 *   queued in memory, in order);
 * - PINGREQ (PINGRESP), UNSUBSCRIBE (UNSUBACK), DISCONNECT; a socket's subscriptions and state
 *   dropped when it closes.
 * - Writes: a socket's frames of one turn of the event loop are copied into one buffer and leave
 *   in one `write` (flushed in `setImmediate`). Backpressure: while a subscriber's socket holds
 *   more than 1 MiB unwritten, or its queue is not empty, the relay stops reading from publishers
 *   (what keeps a broker's memory bounded without dropping; the bench checks that every message
 *   sent arrived).
 * What it leaves out: persistence (none: Mosquitto, as the bench runs it, keeps in-flight state in
 * memory too), retained messages, wills, wildcards, sessions that outlive a connection, keep-alive
 * timeouts, property parsing beyond Receive Maximum, malformed-packet handling beyond closing.
 */
import { createServer } from 'node:net';
import { setImmediate } from 'node:timers';

const [receiveMaximum, username, password] = [
  Number(process.argv[2] ?? 100),
  process.argv[3] ?? '',
  process.argv[4] ?? '',
];
const HIGH_WATER = 1 << 20;

/** topic → subscribers (plain); topic → groups (shared) */
const plain = new Map();
const shared = new Map();
/** Clients with frames to flush this turn. */
const dirty = [];
let flushScheduled = false;
/** Subscribers whose socket or queue is full: publishers are paused while any is. */
const congested = new Set();
const paused = new Set();

class Client {
  constructor(socket) {
    this.socket = socket;
    this.version = 4;
    this.connected = false;
    this.buf = null; // unparsed bytes
    this.out = Buffer.allocUnsafe(64 * 1024);
    this.outLen = 0;
    this.isDirty = false;
    this.nextId = 0;
    this.inflight = 0;
    this.maxInflight = receiveMaximum; // the client's Receive Maximum if lower
    this.outState = new Uint8Array(65536); // 0 free, 1 QoS 1 awaiting PUBACK, 2 QoS 2 awaiting PUBREC, 3 awaiting PUBCOMP
    this.queue = []; // [frameParts, qos] waiting for a free in-flight slot
    this.incoming = new Map(); // QoS 2 packet id → [topic, payload]
    this.subs = []; // [topic, group or null]
  }

  reserve(n) {
    if (this.outLen + n > this.out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.outLen + n));
      this.out.copy(bigger, 0, 0, this.outLen);
      this.out = bigger;
    }
    if (!this.isDirty) {
      this.isDirty = true;
      dirty.push(this);
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    }
  }

  /** A frame of fixed bytes (acks). */
  ack(type, id) {
    this.reserve(4);
    const o = this.out;
    let p = this.outLen;
    o[p++] = type;
    o[p++] = 2;
    o[p++] = id >> 8;
    o[p++] = id & 255;
    this.outLen = p;
  }

  raw(bytes) {
    this.reserve(bytes.length);
    bytes.copy(this.out, this.outLen);
    this.outLen += bytes.length;
  }

  /** A PUBLISH to this client: `topic` is the encoded topic with its length prefix. */
  publish(topic, payload, qos) {
    if (qos > 0 && this.inflight >= this.maxInflight) {
      this.queue.push([topic, payload, qos]);
      congested.add(this);
      return;
    }
    let id = 0;
    if (qos > 0) {
      do id = this.nextId = this.nextId === 65535 ? 1 : this.nextId + 1;
      while (this.outState[id] !== 0);
      this.outState[id] = qos;
      this.inflight++;
    }
    const rem = topic.length + (qos > 0 ? 2 : 0) + (this.version === 5 ? 1 : 0) + payload.length;
    this.reserve(rem + 5);
    const o = this.out;
    let p = this.outLen;
    o[p++] = 0x30 | (qos << 1);
    let r = rem;
    do {
      let b = r & 127;
      r >>>= 7;
      if (r > 0) b |= 128;
      o[p++] = b;
    } while (r > 0);
    topic.copy(o, p);
    p += topic.length;
    if (qos > 0) {
      o[p++] = id >> 8;
      o[p++] = id & 255;
    }
    if (this.version === 5) o[p++] = 0; // no properties
    payload.copy(o, p);
    this.outLen = p + payload.length;
  }

  /** An outbound QoS 1/2 message done: its slot to the next queued one. */
  release(id) {
    if (this.outState[id] === 0) return;
    this.outState[id] = 0;
    this.inflight--;
    if (this.queue.length > 0) {
      const [topic, payload, qos] = this.queue.shift();
      this.publish(topic, payload, qos);
      if (this.queue.length === 0) uncongest(this);
    }
  }
}

function flush() {
  flushScheduled = false;
  for (const c of dirty) {
    c.isDirty = false;
    if (c.outLen === 0 || c.socket.destroyed) continue;
    c.socket.write(c.out.subarray(0, c.outLen));
    // The socket took it at once: the buffer is free again; else a new one (the socket holds it).
    if (c.socket.writableLength !== 0) {
      c.out = Buffer.allocUnsafe(c.out.length);
      if (c.socket.writableLength > HIGH_WATER && !congested.has(c)) {
        congested.add(c);
        c.socket.once('drain', () => c.queue.length === 0 && uncongest(c));
      }
    }
    c.outLen = 0;
  }
  dirty.length = 0;
  if (congested.size > 0) for (const c of allClients) if (!c.subs.length && !paused.has(c)) pause(c);
}

function pause(c) {
  paused.add(c);
  c.socket.pause();
}

function uncongest(c) {
  if (!congested.delete(c) || congested.size > 0) return;
  for (const p of paused) p.socket.resume();
  paused.clear();
}

const allClients = new Set();

function readVarint(b, p) {
  let value = 0;
  let mul = 1;
  for (let i = 0; i < 4; i++) {
    if (p >= b.length) return [-1, p];
    const x = b[p++];
    value += (x & 127) * mul;
    if ((x & 128) === 0) return [value, p];
    mul *= 128;
  }
  throw new Error('malformed remaining length');
}

function deliver(topicStr, topic, payload, qos) {
  const subs = plain.get(topicStr);
  if (subs !== undefined) for (const [c, sq] of subs) c.publish(topic, payload, qos < sq ? qos : sq);
  const groups = shared.get(topicStr);
  if (groups !== undefined)
    for (const g of groups.values()) {
      if (g.members.length === 0) continue;
      g.next = (g.next + 1) % g.members.length;
      const [c, sq] = g.members[g.next];
      c.publish(topic, payload, qos < sq ? qos : sq);
    }
}

function onConnect(c, b, p, end) {
  const nameLen = b.readUInt16BE(p);
  p += 2 + nameLen;
  c.version = b[p++];
  const flags = b[p++];
  p += 2; // keep alive
  if (c.version === 5) {
    const [len, q] = readVarint(b, p);
    for (let i = q; i < q + len;) {
      const id = b[i++];
      if (id === 0x21) c.maxInflight = Math.min(b.readUInt16BE(i), receiveMaximum);
      // Skip a property: the bench's clients send none but Receive Maximum; any other known
      // fixed-size one is skipped by its size.
      i += id === 0x21 || id === 0x22 || id === 0x23 ? 2 : id === 0x11 || id === 0x27 ? 4 : 1;
    }
    p = q + len;
  }
  const idLen = b.readUInt16BE(p);
  p += 2 + idLen;
  if (flags & 4) throw new Error('wills are not relayed by the floor');
  let user = '';
  let pass = '';
  if (flags & 128) {
    const n = b.readUInt16BE(p);
    user = b.toString('utf8', p + 2, p + 2 + n);
    p += 2 + n;
  }
  if (flags & 64) {
    const n = b.readUInt16BE(p);
    pass = b.toString('utf8', p + 2, p + 2 + n);
    p += 2 + n;
  }
  const ok = user === username && pass === password && p <= end;
  if (c.version === 5)
    c.raw(Buffer.from([0x20, 6, 0, ok ? 0 : 0x86, 3, 0x21, receiveMaximum >> 8, receiveMaximum & 255]));
  else c.raw(Buffer.from([0x20, 2, 0, ok ? 0 : 4]));
  if (!ok) {
    flush();
    c.socket.end();
    return;
  }
  c.connected = true;
}

function onSubscribe(c, b, p, end, unsubscribe) {
  const id = b.readUInt16BE(p);
  p += 2;
  if (c.version === 5) {
    const [len, q] = readVarint(b, p);
    p = q + len;
  }
  const codes = [];
  while (p < end) {
    const n = b.readUInt16BE(p);
    let filter = b.toString('utf8', p + 2, p + 2 + n);
    p += 2 + n;
    const qos = unsubscribe ? 0 : b[p++] & 3;
    let group = null;
    if (filter.startsWith('$share/')) {
      const slash = filter.indexOf('/', 7);
      group = filter.slice(7, slash);
      filter = filter.slice(slash + 1);
    }
    if (!filter.startsWith('bench/')) {
      codes.push(c.version === 5 ? 0x87 : 0x80);
      continue;
    }
    removeSub(c, filter, group);
    if (unsubscribe) {
      codes.push(0);
      continue;
    }
    if (group === null) {
      let subs = plain.get(filter);
      if (subs === undefined) plain.set(filter, (subs = []));
      subs.push([c, qos]);
    } else {
      let groups = shared.get(filter);
      if (groups === undefined) shared.set(filter, (groups = new Map()));
      let g = groups.get(group);
      if (g === undefined) groups.set(group, (g = { members: [], next: -1 }));
      g.members.push([c, qos]);
    }
    c.subs.push([filter, group]);
    codes.push(qos);
  }
  const head = c.version === 5 ? [id >> 8, id & 255, 0] : [id >> 8, id & 255];
  const body = c.version === 4 && unsubscribe ? head : [...head, ...codes];
  c.raw(Buffer.from([unsubscribe ? 0xb0 : 0x90, body.length, ...body]));
}

function removeSub(c, filter, group) {
  if (group === null) {
    const subs = plain.get(filter);
    if (subs !== undefined) {
      const i = subs.findIndex((s) => s[0] === c);
      if (i >= 0) subs.splice(i, 1);
    }
  } else {
    const g = shared.get(filter)?.get(group);
    if (g !== undefined) {
      const i = g.members.findIndex((s) => s[0] === c);
      if (i >= 0) g.members.splice(i, 1);
    }
  }
  const i = c.subs.findIndex((s) => s[0] === filter && s[1] === group);
  if (i >= 0) c.subs.splice(i, 1);
}

function onPublish(c, b, first, p, end) {
  const qos = (first >> 1) & 3;
  const topicStart = p;
  const n = b.readUInt16BE(p);
  p += 2 + n;
  const topicStr = b.latin1Slice(topicStart + 2, p);
  let id = 0;
  if (qos > 0) {
    id = b.readUInt16BE(p);
    p += 2;
  }
  if (c.version === 5) {
    const [len, q] = readVarint(b, p);
    p = q + len;
  }
  const allowed = topicStr.startsWith('bench/');
  // The topic and payload are copied once (the read buffer is not kept), as a broker keeps a message.
  if (qos === 2) {
    if (allowed)
      c.incoming.set(id, [
        Buffer.from(b.subarray(topicStart, topicStart + 2 + n)),
        Buffer.from(b.subarray(p, end)),
        topicStr,
      ]);
    c.ack(0x50, id);
    return;
  }
  if (allowed) deliver(topicStr, b.subarray(topicStart, topicStart + 2 + n), b.subarray(p, end), qos);
  if (qos === 1) c.ack(0x40, id);
}

function onPacket(c, b, first, p, end) {
  const type = first >> 4;
  if (!c.connected && type !== 1) throw new Error('packet before CONNECT');
  switch (type) {
    case 1:
      return onConnect(c, b, p, end);
    case 3:
      return onPublish(c, b, first, p, end);
    case 4: // PUBACK from a subscriber
      return c.release(b.readUInt16BE(p));
    case 5: {
      // PUBREC from a subscriber: PUBREL
      const id = b.readUInt16BE(p);
      if (c.outState[id] === 2) c.outState[id] = 3;
      return c.ack(0x62, id);
    }
    case 6: {
      // PUBREL from a publisher: deliver, PUBCOMP
      const id = b.readUInt16BE(p);
      const m = c.incoming.get(id);
      if (m !== undefined) {
        c.incoming.delete(id);
        deliver(m[2], m[0], m[1], 2);
      }
      return c.ack(0x70, id);
    }
    case 7: // PUBCOMP from a subscriber
      return c.release(b.readUInt16BE(p));
    case 8:
      return onSubscribe(c, b, p, end, false);
    case 10:
      return onSubscribe(c, b, p, end, true);
    case 12:
      return c.raw(Buffer.from([0xd0, 0]));
    case 14:
      c.socket.end();
      return;
    default:
      throw new Error(`packet type ${type} not handled`);
  }
}

function onData(c, chunk) {
  let b = c.buf === null ? chunk : Buffer.concat([c.buf, chunk]);
  let p = 0;
  while (p + 2 <= b.length) {
    const first = b[p];
    const [rem, q] = readVarint(b, p + 1);
    if (rem < 0 || q + rem > b.length) break;
    onPacket(c, b, first, q, q + rem);
    p = q + rem;
  }
  c.buf = p === b.length ? null : Buffer.from(b.subarray(p));
}

function drop(c) {
  allClients.delete(c);
  for (const [filter, group] of [...c.subs]) removeSub(c, filter, group);
  c.queue.length = 0;
  uncongest(c);
  paused.delete(c);
}

const server = createServer((socket) => {
  socket.setNoDelay(true);
  const c = new Client(socket);
  allClients.add(c);
  socket.on('data', (chunk) => {
    try {
      onData(c, chunk);
    } catch (err) {
      process.stderr.write(`floor relay: ${err.message}; closing the connection\n`);
      socket.destroy();
    }
  });
  socket.on('error', () => {});
  socket.on('close', () => drop(c));
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`floor-ready ${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
