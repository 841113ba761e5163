/**
 * The subscription index: a trie of subject tokens (`*` and `>` nodes beside the literal ones)
 * with a cache of match results for hot subjects. A match result lists the plain subscriptions
 * and, per queue group, the members of the group; it is shared by every publish of that subject
 * until a subscription that could match it comes or goes.
 */
import { patternMatches } from './subject.js';

export interface Indexed {
  readonly pattern: string;
  readonly queue: string | undefined;
}

export interface MatchResult<S extends Indexed> {
  /** Subscriptions without a queue group: each gets the message. */
  readonly plain: readonly S[];
  /** One array per queue group: one member of each gets the message. */
  readonly groups: readonly (readonly S[])[];
  /** Free for the owner of the index (the bus keeps the subject's counters here). */
  tag: unknown;
}

interface Node<S> {
  literal: Map<string, Node<S>> | undefined;
  star: Node<S> | undefined;
  full: Node<S> | undefined;
  plain: Set<S> | undefined;
  groups: Map<string, Set<S>> | undefined;
  parent: Node<S> | undefined;
  token: string;
}

function newNode<S>(parent: Node<S> | undefined, token: string): Node<S> {
  return {
    literal: undefined,
    star: undefined,
    full: undefined,
    plain: undefined,
    groups: undefined,
    parent,
    token,
  };
}

export interface SublistOptions {
  /** Most subjects whose match result is kept (default 262,144: a site with 100,000 tags publishes on 100,000 subjects, and a miss costs a trie walk). */
  cacheSize?: number;
}

const NONE: readonly never[] = Object.freeze([]);
/** Tags (the bus's prefix counters) whose results are shared per list (`#share`). */
const MAX_SHARED_TAGS = 1024;
/** Distinct lists of subscriptions kept per first subscription (`#list`). */
const MAX_LISTS_PER_SUB = 64;

function sameList<S>(a: readonly S[], b: readonly S[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class Sublist<S extends Indexed> {
  readonly #root: Node<S> = newNode<S>(undefined, '');
  readonly #cache = new Map<string, MatchResult<S>>();
  readonly #cacheSize: number;
  #count = 0;
  #generation = 0;
  /** Called for each result as it is created (the bus attaches counters). */
  onResult: ((subject: string, result: MatchResult<S>) => void) | undefined;

  constructor(options: SublistOptions = {}) {
    this.#cacheSize = options.cacheSize ?? 262_144;
  }

  get size(): number {
    return this.#count;
  }

  get cacheEntries(): number {
    return this.#cache.size;
  }

  /** Changes whenever a subscription comes or goes: a match result kept outside stays valid until then. */
  get generation(): number {
    return this.#generation;
  }

  insert(sub: S): void {
    let node = this.#root;
    for (const token of sub.pattern.split('.')) {
      let next: Node<S> | undefined;
      if (token === '*') next = node.star ??= newNode(node, token);
      else if (token === '>') next = node.full ??= newNode(node, token);
      else {
        node.literal ??= new Map();
        next = node.literal.get(token);
        if (!next) {
          next = newNode(node, token);
          node.literal.set(token, next);
        }
      }
      node = next;
    }
    if (sub.queue === undefined) (node.plain ??= new Set()).add(sub);
    else {
      node.groups ??= new Map();
      let members = node.groups.get(sub.queue);
      if (!members) {
        members = new Set();
        node.groups.set(sub.queue, members);
      }
      members.add(sub);
    }
    this.#count++;
    this.#generation++;
    this.#invalidate(sub.pattern);
  }

  /** Removes a subscription; answers whether it was there. */
  remove(sub: S): boolean {
    let node: Node<S> | undefined = this.#root;
    for (const token of sub.pattern.split('.')) {
      if (token === '*') node = node.star;
      else if (token === '>') node = node.full;
      else node = node.literal?.get(token);
      if (!node) return false;
    }
    let removed = false;
    if (sub.queue === undefined) removed = node.plain?.delete(sub) ?? false;
    else {
      const members = node.groups?.get(sub.queue);
      if (members) {
        removed = members.delete(sub);
        if (members.size === 0) node.groups!.delete(sub.queue);
      }
    }
    if (!removed) return false;
    this.#count--;
    this.#generation++;
    this.#prune(node);
    this.#invalidate(sub.pattern);
    return true;
  }

  /** The cached result for a subject, if any (no work on a miss). */
  cached(subject: string): MatchResult<S> | undefined {
    return this.#cache.get(subject);
  }

  /** The subscriptions matching a literal subject. */
  match(subject: string): MatchResult<S> {
    const cached = this.#cache.get(subject);
    if (cached !== undefined) return cached;
    const plain: S[] = [];
    let groups: Map<string, S[]> | undefined;
    const collect = (node: Node<S>) => {
      if (node.plain) for (const s of node.plain) plain.push(s);
      if (node.groups) {
        groups ??= new Map();
        for (const [name, members] of node.groups) {
          let list = groups.get(name);
          if (!list) {
            list = [];
            groups.set(name, list);
          }
          for (const s of members) list.push(s);
        }
      }
    };
    const tokens = subject.split('.');
    const walk = (node: Node<S>, i: number) => {
      if (node.full && i < tokens.length) collect(node.full);
      if (i === tokens.length) return;
      const last = i + 1 === tokens.length;
      const lit = node.literal?.get(tokens[i]!);
      if (lit) {
        if (last) collect(lit);
        else walk(lit, i + 1);
      }
      if (node.star) {
        if (last) collect(node.star);
        else walk(node.star, i + 1);
      }
    };
    walk(this.#root, 0);
    // Most subjects of a large site have no subscriber: their results share one empty list.
    const result: MatchResult<S> = {
      plain: plain.length === 0 ? NONE : this.#list(plain),
      groups: groups ? [...groups.values()] : NONE,
      tag: undefined,
    };
    this.onResult?.(subject, result);
    const shared = this.#share(result);
    if (this.#cache.size >= this.#cacheSize) this.#evict();
    this.#cache.set(subject, shared);
    return shared;
  }

  /**
   * Results of no queue group with the same list of subscriptions and the same tag are one object
   * (the 100,000 subjects of a large site under `devicehub.raw.>`: one result, not 100,000 of 48
   * bytes). At most `MAX_SHARED_TAGS` tags per list.
   */
  readonly #shared = new WeakMap<readonly S[], Map<unknown, MatchResult<S>>>();
  #share(result: MatchResult<S>): MatchResult<S> {
    if (result.groups !== NONE) return result;
    let byTag = this.#shared.get(result.plain);
    if (!byTag) {
      byTag = new Map();
      this.#shared.set(result.plain, byTag);
    }
    const known = byTag.get(result.tag);
    if (known !== undefined) return known;
    if (byTag.size < MAX_SHARED_TAGS) byTag.set(result.tag, result);
    return result;
  }

  /**
   * Lists of subscriptions, one per content: subjects matched by the same subscriptions share one
   * frozen list (kept by its first subscription, `MAX_LISTS_PER_SUB` at most). Two subscriptions on
   * `devicehub.raw.>` (the history and a NATS client) made a list of its own per subject: an array
   * and its backing store of 17 slots, about 190 bytes for each of a site's 100,000 subjects.
   */
  readonly #lists = new WeakMap<S, (readonly S[])[]>();
  #list(plain: S[]): readonly S[] {
    const first = plain[0]!;
    let known = this.#lists.get(first);
    if (!known) {
      known = [];
      this.#lists.set(first, known);
    }
    for (const list of known) if (sameList(list, plain)) return list;
    const list = Object.freeze(plain.slice());
    if (known.length < MAX_LISTS_PER_SUB) known.push(list);
    return list;
  }

  /** Every subscription, in no particular order. */
  *all(): IterableIterator<S> {
    const stack: Node<S>[] = [this.#root];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.plain) yield* node.plain;
      if (node.groups) for (const members of node.groups.values()) yield* members;
      if (node.literal) stack.push(...node.literal.values());
      if (node.star) stack.push(node.star);
      if (node.full) stack.push(node.full);
    }
  }

  #invalidate(pattern: string): void {
    if (this.#cache.size === 0) return;
    if (!/(^|\.)[*>](\.|$)/.test(pattern)) {
      this.#cache.delete(pattern);
      return;
    }
    for (const subject of this.#cache.keys()) {
      if (patternMatches(pattern, subject)) this.#cache.delete(subject);
    }
  }

  /** Drops the oldest quarter of the cache. */
  #evict(): void {
    let n = Math.max(1, this.#cacheSize >> 2);
    for (const key of this.#cache.keys()) {
      this.#cache.delete(key);
      if (--n === 0) break;
    }
  }

  /** Removes empty nodes on the way up. */
  #prune(node: Node<S>): void {
    let n: Node<S> | undefined = node;
    while (n && n.parent) {
      const empty =
        (n.plain === undefined || n.plain.size === 0) &&
        (n.groups === undefined || n.groups.size === 0) &&
        (n.literal === undefined || n.literal.size === 0) &&
        n.star === undefined &&
        n.full === undefined;
      if (!empty) return;
      const parent: Node<S> = n.parent;
      if (n.token === '*') parent.star = undefined;
      else if (n.token === '>') parent.full = undefined;
      else parent.literal?.delete(n.token);
      n = parent;
    }
  }
}
