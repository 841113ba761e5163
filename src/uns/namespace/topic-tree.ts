/**
 * Every topic seen (published to) or declared, as a tree for browsing: per topic the last value,
 * whether it is retained, the last publish time, a message count and rate, and its children,
 * paged in name order. Held in memory and bounded twice: by `maxTopics` nodes and by `maxBytes`,
 * an estimate of the tree's memory (node overhead, level names, the topic strings of recorded
 * topics, last values). A topic beyond either bound is not recorded (counted in `dropped`); the
 * tree never grows past them. Recording a publish to a known topic is one map lookup and a few
 * counter updates.
 *
 * Memory is linear in the bytes of the topics: a node keeps its level name only (its path is
 * rebuilt from its parents on demand), and only recorded or declared topics are keys of the path
 * index; intermediate levels are found by walking the tree. The last value is a copy of at most
 * 1 KiB, never a view that would keep the whole packet (or the socket's read buffer) alive.
 */
export class TopicNode {
  readonly name: string;
  readonly parent: TopicNode | null;
  readonly children = new Map<string, TopicNode>();
  /** Child names in order, rebuilt when a child is added. */
  sorted: string[] | null = null;
  description: string | null = null;
  declared = false;
  /** Whether a message has been published to exactly this topic. */
  seen = false;
  retained = false;
  /** MQTT 5 properties of the retained message (null when none or not retained). */
  retainedProperties: RetainedProperties | null = null;
  propertiesBytes = 0;
  lastValue: Buffer | null = null;
  lastPublish = 0;
  count = 0;
  windowStart = 0;
  windowCount = 0;
  previousCount = 0;

  constructor(name: string, parent: TopicNode | null) {
    this.name = name;
    this.parent = parent;
  }

  /** The topic of this node, `a/b/c` (the root's is ''). */
  get path(): string {
    if (!this.parent) return '';
    const names: string[] = [this.name];
    for (let n = this.parent; n.parent; n = n.parent) names.push(n.name);
    return names.reverse().join('/');
  }
}

/** The MQTT 5 properties of a retained message that the topic tree keeps (at most 1 KiB). */
export interface RetainedProperties {
  contentType?: string | undefined;
  payloadFormatIndicator?: boolean | undefined;
  responseTopic?: string | undefined;
  userProperties: { name: string; value: string }[];
}

/** Bytes of a retained message's properties kept at most (the rest of its user properties is not). */
const MAX_PROPERTIES_BYTES = 1024;

/** The properties of a PUBLISH worth showing, bounded by `MAX_PROPERTIES_BYTES`; null when none. */
export function retainedPropertiesOf(properties: Record<string, unknown> | undefined): {
  value: RetainedProperties | null;
  bytes: number;
} {
  if (!properties) return { value: null, bytes: 0 };
  const value: RetainedProperties = { userProperties: [] };
  let bytes = 0;
  const text = (v: unknown) => (typeof v === 'string' ? v.slice(0, 256) : undefined);
  value.contentType = text(properties.contentType);
  value.responseTopic = text(properties.responseTopic);
  if (typeof properties.payloadFormatIndicator === 'boolean')
    value.payloadFormatIndicator = properties.payloadFormatIndicator;
  bytes += (value.contentType?.length ?? 0) + (value.responseTopic?.length ?? 0);
  const user = properties.userProperties as Record<string, string | string[]> | undefined;
  if (user && typeof user === 'object') {
    for (const name of Object.keys(user)) {
      for (const v of [user[name]].flat()) {
        const size = name.length + String(v).length + 16;
        if (bytes + size > MAX_PROPERTIES_BYTES) break;
        bytes += size;
        value.userProperties.push({ name, value: String(v) });
      }
    }
  }
  const empty =
    value.contentType === undefined &&
    value.responseTopic === undefined &&
    value.payloadFormatIndicator === undefined &&
    value.userProperties.length === 0;
  return empty ? { value: null, bytes: 0 } : { value, bytes: bytes + 64 };
}

/** Width of the rate window: `messageRate` is messages per second over the last full window. */
export const RATE_WINDOW_MS = 10_000;
const MAX_VALUE_BYTES = 1024;
/**
 * Estimated bytes of one node beyond its name: the object and its fields, its empty children map,
 * its entry in its parent's map. Measured about 330 bytes on Node 20 (x64); rounded up.
 */
export const NODE_BYTES = 400;
/** Estimated bytes of one entry of the path index beyond the topic string. */
const INDEX_ENTRY_BYTES = 80;

export interface TopicTreeLimits {
  /** Nodes at most (every level of every topic is a node). */
  maxTopics: number;
  /** Estimated bytes at most. */
  maxBytes?: number | undefined;
  /** Told of each topic not recorded because the tree is full. */
  onDrop?: ((topic: string, reason: 'topics' | 'bytes') => void) | undefined;
}

export class TopicTree {
  readonly root: TopicNode = new TopicNode('', null);
  /** Recorded and declared topics by their path. */
  readonly #byPath = new Map<string, TopicNode>();
  readonly #max: number;
  readonly #maxBytes: number;
  #nodes = 0;
  #bytes = 0;
  #dropped = 0;
  readonly #onDrop: TopicTreeLimits['onDrop'];

  constructor(limits: number | TopicTreeLimits) {
    const l: TopicTreeLimits = typeof limits === 'number' ? { maxTopics: limits } : limits;
    this.#max = l.maxTopics;
    this.#maxBytes = l.maxBytes ?? Number.POSITIVE_INFINITY;
    this.#onDrop = l.onDrop;
  }

  /** The bounds: nodes and estimated bytes. */
  get limits(): { maxTopics: number; maxBytes: number } {
    return { maxTopics: this.#max, maxBytes: this.#maxBytes };
  }

  /** Nodes in the tree (every level of every topic). */
  get size(): number {
    return this.#nodes;
  }

  /** Estimated bytes held by the tree. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Topics not recorded because the tree was full (nodes or bytes). */
  get dropped(): number {
    return this.#dropped;
  }

  get(path: string): TopicNode | undefined {
    if (path === '') return this.root;
    const known = this.#byPath.get(path);
    if (known) return known;
    let n: TopicNode | undefined = this.root;
    for (const name of path.split('/')) {
      n = n.children.get(name);
      if (!n) return undefined;
    }
    return n;
  }

  /** Records one message published to `topic`; false when the tree is full and it was not. */
  record(
    topic: string,
    payload: Buffer,
    retain: boolean,
    now = Date.now(),
    properties?: Record<string, unknown>,
  ): boolean {
    let n = this.#byPath.get(topic);
    if (!n) {
      n = this.#ensure(topic);
      if (!n) return false;
    }
    n.seen = true;
    n.count++;
    n.lastPublish = now;
    if (now - n.windowStart >= RATE_WINDOW_MS) {
      n.previousCount = now - n.windowStart < 2 * RATE_WINDOW_MS ? n.windowCount : 0;
      n.windowStart = now - ((now - n.windowStart) % RATE_WINDOW_MS);
      n.windowCount = 0;
    }
    n.windowCount++;
    const size = Math.min(payload.length, MAX_VALUE_BYTES);
    const old = n.lastValue;
    if (old && old.length === size) {
      payload.copy(old, 0, 0, size);
    } else {
      this.#bytes += size - (old?.length ?? 0);
      // A copy: a view would keep the packet's whole buffer alive.
      n.lastValue = Buffer.from(payload.subarray(0, size));
    }
    if (retain) {
      n.retained = payload.length > 0;
      const kept = n.retained ? retainedPropertiesOf(properties) : { value: null, bytes: 0 };
      this.#bytes += kept.bytes - n.propertiesBytes;
      n.retainedProperties = kept.value;
      n.propertiesBytes = kept.bytes;
    }
    return true;
  }

  /** Declares a topic (a path of the namespace, with a description), seen or not. */
  declare(path: string, description: string | null): TopicNode | undefined {
    const n = this.#ensure(path);
    if (!n) return undefined;
    n.declared = true;
    n.description = description;
    return n;
  }

  undeclare(path: string): void {
    const n = this.#byPath.get(path);
    if (!n) return;
    n.declared = false;
    n.description = null;
  }

  /** Messages per second over the last full window. */
  rate(n: TopicNode, now = Date.now()): number {
    if (n.count === 0) return 0;
    const age = now - n.windowStart;
    if (age >= 2 * RATE_WINDOW_MS) return 0;
    if (age >= RATE_WINDOW_MS) return n.windowCount / (RATE_WINDOW_MS / 1000);
    return n.previousCount / (RATE_WINDOW_MS / 1000);
  }

  /** A page of `parent`'s children in name order, optionally those whose name contains `filter`. */
  children(
    parent: TopicNode,
    offset: number,
    limit: number,
    filter?: string | null,
  ): { items: TopicNode[]; total: number } {
    if (!parent.sorted) parent.sorted = [...parent.children.keys()].sort();
    let names = parent.sorted;
    if (filter) {
      const f = filter.toLowerCase();
      names = names.filter((name) => name.toLowerCase().includes(f));
    }
    const items = names.slice(offset, offset + limit).map((name) => parent.children.get(name)!);
    return { items, total: names.length };
  }

  #ensure(path: string): TopicNode | undefined {
    const existing = this.#byPath.get(path);
    if (existing) return existing;
    const levels = path.split('/');
    // What the new nodes and the index entry would cost, before anything is added.
    let parent = this.root;
    let i = 0;
    for (; i < levels.length; i++) {
      const child = parent.children.get(levels[i]!);
      if (!child) break;
      parent = child;
    }
    let cost = 2 * path.length + INDEX_ENTRY_BYTES;
    for (let j = i; j < levels.length; j++) cost += NODE_BYTES + 2 * levels[j]!.length;
    const added = levels.length - i;
    const full =
      this.#nodes + added > this.#max ? 'topics' : this.#bytes + cost > this.#maxBytes ? 'bytes' : null;
    if (full) {
      this.#dropped++;
      this.#onDrop?.(path, full);
      return undefined;
    }
    for (; i < levels.length; i++) {
      // A copy of the level name: a slice would keep the whole topic string alive.
      const name = copyString(levels[i]!);
      const child = new TopicNode(name, parent);
      parent.children.set(name, child);
      parent.sorted = null;
      parent = child;
    }
    this.#nodes += added;
    this.#bytes += cost;
    this.#byPath.set(path, parent);
    return parent;
  }
}

/** A flat copy of `s` that does not share the memory of the string it was cut from. */
function copyString(s: string): string {
  return s.length < 13 ? s : (' ' + s).slice(1);
}
