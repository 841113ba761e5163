/**
 * NATS subject rules: tokens separated by `.`, none empty, no whitespace; in a subscription
 * pattern `*` stands for exactly one token and `>` (last token only) for one or more.
 */

const DOT = 46;
const STAR = 42;
const GT = 62;

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 10 || c === 12;
}

/** Whether `s` is a valid subject to publish to (no wildcards). */
export function isValidSubject(s: string): boolean {
  return checkSubject(s, false);
}

/** Whether `s` is a valid subscription pattern (wildcards allowed as whole tokens). */
export function isValidPattern(s: string): boolean {
  return checkSubject(s, true);
}

function checkSubject(s: string, wildcards: boolean): boolean {
  const n = s.length;
  if (n === 0) return false;
  let tokenStart = 0;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? s.charCodeAt(i) : DOT;
    if (c === DOT) {
      const len = i - tokenStart;
      if (len === 0) return false;
      if (len === 1) {
        const t = s.charCodeAt(tokenStart);
        if (t === GT) {
          if (!wildcards || i !== n) return false;
        } else if (t === STAR && !wildcards) {
          return false;
        }
      }
      tokenStart = i + 1;
    } else if (isSpace(c)) {
      // A wildcard character inside a longer token (`a*`) is a literal, as in nats-server.
      return false;
    }
  }
  return true;
}

/** Whether a subscription pattern contains a wildcard token. */
export function hasWildcard(pattern: string): boolean {
  if (pattern === '*' || pattern === '>') return true;
  if (pattern.startsWith('*.') || pattern.startsWith('>.')) return true;
  return pattern.includes('.*.') || pattern.endsWith('.*') || pattern.endsWith('.>');
}

/** Whether `pattern` matches the literal `subject` (plain token walk; the trie does the hot path). */
export function patternMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    const t = p[i];
    if (t === '>') return s.length > i;
    if (i >= s.length) return false;
    if (t !== '*' && t !== s[i]) return false;
  }
  return p.length === s.length;
}

/**
 * Whether every subject matched by `requested` is also matched by `allowed`: the check of a
 * subscription against an access key's subscribe patterns.
 */
export function patternCovers(allowed: string, requested: string): boolean {
  const a = allowed.split('.');
  const r = requested.split('.');
  for (let i = 0; i < a.length; i++) {
    const t = a[i];
    if (t === '>') return r.length > i;
    if (i >= r.length) return false;
    const u = r[i];
    if (u === '>') return false;
    if (t === '*') continue;
    if (u === '*' || t !== u) return false;
  }
  return a.length === r.length;
}

/** The first `depth` tokens of a subject: the key of the per-prefix counters. */
export function subjectPrefix(subject: string, depth: number): string {
  let i = -1;
  for (let d = 0; d < depth; d++) {
    i = subject.indexOf('.', i + 1);
    if (i < 0) return subject;
  }
  return subject.slice(0, i);
}

/**
 * Publishing on one subject again and again (an analytics instance's output): the subject's
 * subscriptions are looked up once per change of the bus's subscriptions instead of once per
 * message, and the publisher can ask whether anyone would receive a message before it builds one.
 */
export interface Outlet {
  /** The subject (internalized: hashed once). */
  readonly subject: string;
  /** Whether a message published now would reach a subscription of this process or the external cluster. */
  interested(): boolean;
  /** The same as `publish(subject, data)`: answers how many subscriptions of this process took it. */
  publish(data: unknown): number;
  /** Counts a message not built because nobody was interested, as a publish that nobody took. */
  skip(): void;
}

/**
 * `s` as an internalized (flat, hashed once) string: the bus looks every published subject up in
 * a map, and a concatenated string is flattened and hashed again on each lookup.
 */
export const internal = (s: string): string => Object.keys({ [s]: 0 })[0]!;
