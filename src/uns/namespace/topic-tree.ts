/**
 * Every topic seen (published to) or declared, as a tree for browsing: per topic the last value,
 * whether it is retained, the last publish time, a message count and rate, and its children,
 * paged in name order. Held in memory, bounded by `maxTopics`; recording a publish to a known
 * topic is one map lookup and a few counter updates.
 */
export interface TopicNode {
  path: string;
  name: string;
  parent: TopicNode | null;
  children: Map<string, TopicNode>;
  /** Child names in order, rebuilt when a child is added. */
  sorted: string[] | null;
  description: string | null;
  declared: boolean;
  /** Whether a message has been published to exactly this topic. */
  seen: boolean;
  retained: boolean;
  lastValue: Buffer | null;
  lastPublish: number;
  count: number;
  windowStart: number;
  windowCount: number;
  previousCount: number;
}

/** Width of the rate window: `messageRate` is messages per second over the last full window. */
export const RATE_WINDOW_MS = 10_000;
const MAX_VALUE_BYTES = 1024;

export class TopicTree {
  readonly root: TopicNode = node('', '', null);
  readonly #byPath = new Map<string, TopicNode>();
  readonly #max: number;
  #dropped = 0;

  constructor(maxTopics: number) {
    this.#max = maxTopics;
  }

  get size(): number {
    return this.#byPath.size;
  }

  /** Topics not recorded because the tree was full. */
  get dropped(): number {
    return this.#dropped;
  }

  get(path: string): TopicNode | undefined {
    return path === '' ? this.root : this.#byPath.get(path);
  }

  /** Records one message published to `topic`. */
  record(topic: string, payload: Buffer, retain: boolean, now = Date.now()): void {
    let n = this.#byPath.get(topic);
    if (!n) {
      n = this.#ensure(topic);
      if (!n) return;
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
    n.lastValue = payload.length > MAX_VALUE_BYTES ? payload.subarray(0, MAX_VALUE_BYTES) : payload;
    if (retain) n.retained = payload.length > 0;
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
    let parent = this.root;
    let prefix = '';
    for (let i = 0; i < levels.length; i++) {
      const name = levels[i]!;
      prefix = i === 0 ? name : `${prefix}/${name}`;
      let child = parent.children.get(name);
      if (!child) {
        if (this.#byPath.size >= this.#max) {
          this.#dropped++;
          return undefined;
        }
        child = node(prefix, name, parent);
        parent.children.set(name, child);
        parent.sorted = null;
        this.#byPath.set(prefix, child);
      }
      parent = child;
    }
    return parent;
  }
}

function node(path: string, name: string, parent: TopicNode | null): TopicNode {
  return {
    path,
    name,
    parent,
    children: new Map(),
    sorted: null,
    description: null,
    declared: false,
    seen: false,
    retained: false,
    lastValue: null,
    lastPublish: 0,
    count: 0,
    windowStart: 0,
    windowCount: 0,
    previousCount: 0,
  };
}
