/**
 * Access rules of an account, compiled for the broker's hot path. A rule is `{ path, perm }`: `path`
 * an MQTT topic filter (`+` one level, `#` the rest), `perm` `Sub`, `Pub` or `PubSub`.
 * - A publish to topic T is allowed when a `Pub`/`PubSub` rule's filter matches T.
 * - A subscription to filter F is allowed when a `Sub`/`PubSub` rule's filter covers F, that is,
 *   every topic F can match is matched by the rule (`a/#` covers `a/+/b`; `a/+` does not cover `a/#`).
 * Following MQTT (4.7.2), a filter starting with a wildcard never matches a topic starting with `$`.
 */
export type Perm = 'Sub' | 'Pub' | 'PubSub';
export const PERMS: readonly Perm[] = ['Sub', 'Pub', 'PubSub'];

export interface RuleSpec {
  path: string;
  perm: Perm;
}

/** Why a topic filter is not valid, or null when it is. */
export function filterProblem(path: string): string | null {
  if (path.length === 0) return 'a topic filter cannot be empty';
  if (Buffer.byteLength(path) > 65535) return 'a topic filter has at most 65535 bytes';
  if (path.includes('\u0000')) return 'a topic filter cannot contain NUL';
  const levels = path.split('/');
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i]!;
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) {
      return `"#" must be a whole level and the last one (in "${path}")`;
    }
    if (level.includes('+') && level !== '+') return `"+" must be a whole level (in "${path}")`;
  }
  return null;
}

const isWild = (path: string) => path.includes('+') || path.includes('#');

/** Whether filter levels `f` match topic levels `t` (no wildcards in `t`). */
export function matchLevels(f: readonly string[], t: readonly string[]): boolean {
  if (t.length > 0 && t[0]!.startsWith('$') && (f[0] === '+' || f[0] === '#')) return false;
  const n = f.length;
  for (let i = 0; i < n; i++) {
    const level = f[i]!;
    if (level === '#') return true; // also matches the parent level itself (`a/#` matches `a`)
    if (i >= t.length) return false;
    if (level !== '+' && level !== t[i]) return false;
  }
  return n === t.length;
}

/** Whether rule filter levels `r` cover subscription filter levels `f`. */
export function coverLevels(r: readonly string[], f: readonly string[]): boolean {
  if (f.length > 0 && f[0]!.startsWith('$') && (r[0] === '+' || r[0] === '#')) return false;
  for (let i = 0; i < r.length; i++) {
    const rl = r[i]!;
    if (rl === '#') return true;
    if (i >= f.length) return false;
    const fl = f[i]!;
    if (fl === '#') return false; // the subscription reaches deeper than a non-`#` rule
    if (rl === '+') continue;
    if (fl === '+' || fl !== rl) return false;
  }
  return r.length === f.length;
}

export function topicMatches(filter: string, topic: string): boolean {
  return matchLevels(filter.split('/'), topic.split('/'));
}

const CACHE_SIZE = 1024;

/** The rules of one account, split by permission and by whether they have wildcards. */
export class CompiledRules {
  readonly #pubExact = new Set<string>();
  readonly #pubWild: string[][] = [];
  readonly #subExact = new Set<string>();
  readonly #subWild: string[][] = [];

  constructor(rules: readonly RuleSpec[]) {
    for (const rule of rules) {
      const pub = rule.perm === 'Pub' || rule.perm === 'PubSub';
      const sub = rule.perm === 'Sub' || rule.perm === 'PubSub';
      if (isWild(rule.path)) {
        const levels = rule.path.split('/');
        if (pub) this.#pubWild.push(levels);
        if (sub) this.#subWild.push(levels);
      } else {
        if (pub) this.#pubExact.add(rule.path);
        if (sub) this.#subExact.add(rule.path);
      }
    }
  }

  canPublish(topic: string): boolean {
    if (this.#pubExact.has(topic)) return true;
    if (this.#pubWild.length === 0) return false;
    const levels = topic.split('/');
    for (const rule of this.#pubWild) if (matchLevels(rule, levels)) return true;
    return false;
  }

  canSubscribe(filter: string): boolean {
    if (this.#subExact.has(filter)) return true;
    if (this.#subWild.length === 0) return false;
    const levels = filter.split('/');
    for (const rule of this.#subWild) if (coverLevels(rule, levels)) return true;
    return false;
  }
}

/**
 * One connection's view of its account's rules, with the answers for topics it published to
 * before kept in a bounded map: a device publishing to a few topics is checked by one lookup.
 */
export class ConnectionRules {
  #rules: CompiledRules;
  readonly #published = new Map<string, boolean>();

  constructor(rules: CompiledRules) {
    this.#rules = rules;
  }

  /** New rules for a live connection: later checks use them. */
  replace(rules: CompiledRules): void {
    this.#rules = rules;
    this.#published.clear();
  }

  get rules(): CompiledRules {
    return this.#rules;
  }

  canPublish(topic: string): boolean {
    let ok = this.#published.get(topic);
    if (ok === undefined) {
      ok = this.#rules.canPublish(topic);
      if (this.#published.size >= CACHE_SIZE) this.#published.clear();
      this.#published.set(topic, ok);
    }
    return ok;
  }

  canSubscribe(filter: string): boolean {
    return this.#rules.canSubscribe(filter);
  }
}
