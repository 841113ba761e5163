/**
 * The throttle of credential checks (sign-in, client credentials, MQTT CONNECT): it slows the
 * guesser, not the user. Failures are counted per (client address, user name): after
 * `freeFailures` of them, that pair waits a delay that doubles with each further failure (from
 * `baseDelayMs` up to `maxDelayMs`) before its next attempt is checked; an attempt within the
 * delay is refused without being checked (and is not counted). A success clears the pair. Apart
 * from that, an address from which more than `maxUsersPerAddress` distinct user names failed
 * within `windowMs` (credential stuffing) is refused for every user name for `addressBlockMs`.
 *
 * So a wrong password typed 40 times from a plant's NAT address delays that user name from that
 * address only: another user behind the same address signs in at once, and the user whose name
 * was guessed waits at most `maxDelayMs` and then gets in with the right password.
 *
 * Bounded: at most `maxPairs` pairs and `maxAddresses` addresses are held (entries idle for
 * `windowMs` are swept first, then the oldest evicted), and at most `maxUsersPerAddress + 1`
 * user names per address.
 */

export interface AuthThrottleOptions {
  /** Failures of one (address, user) pair checked without a delay. */
  freeFailures: number;
  /** Delay after the first failure past the free ones; it doubles with each further failure. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Distinct user names failing from one address within `windowMs` before the address is refused. */
  maxUsersPerAddress: number;
  /** How long an address over `maxUsersPerAddress` is refused. */
  addressBlockMs: number;
  /** A pair or an address without a failure for this long is forgotten. */
  windowMs: number;
  maxPairs: number;
  maxAddresses: number;
}

export const AUTH_THROTTLE_DEFAULTS: AuthThrottleOptions = {
  freeFailures: 5,
  baseDelayMs: 250,
  maxDelayMs: 30_000,
  maxUsersPerAddress: 30,
  addressBlockMs: 5 * 60_000,
  windowMs: 15 * 60_000,
  maxPairs: 10_000,
  maxAddresses: 10_000,
};

/** What a check answers: go ahead, or wait `retryMs` (`reason`: the user's delay or the address's cap). */
export type ThrottleVerdict = { ok: true } | { ok: false; retryMs: number; reason: 'user' | 'address' };

interface PairEntry {
  failures: number;
  notBefore: number;
  last: number;
}

interface AddressEntry {
  users: Set<string>;
  blockedUntil: number;
  last: number;
}

const OK: ThrottleVerdict = Object.freeze({ ok: true });
const USER_MAX = 200;

export class AuthThrottle {
  readonly options: AuthThrottleOptions;
  readonly #pairs = new Map<string, PairEntry>();
  readonly #addresses = new Map<string, AddressEntry>();

  constructor(options: Partial<AuthThrottleOptions> = {}) {
    this.options = { ...AUTH_THROTTLE_DEFAULTS, ...options };
  }

  /** Before checking a credential of `user` from `address`: whether to check it now. */
  check(address: string, user: string, now = Date.now()): ThrottleVerdict {
    const a = this.#addresses.get(address);
    if (a && a.blockedUntil > now) return { ok: false, retryMs: a.blockedUntil - now, reason: 'address' };
    const p = this.#pairs.get(pairKey(address, user));
    if (p && p.notBefore > now) return { ok: false, retryMs: p.notBefore - now, reason: 'user' };
    return OK;
  }

  /** A credential of `user` from `address` was checked and was wrong. */
  failure(address: string, user: string, now = Date.now()): void {
    const o = this.options;
    const key = pairKey(address, user);
    let p = this.#pairs.get(key);
    if (p && now - p.last > o.windowMs) p = undefined;
    if (!p) {
      this.#room(this.#pairs, o.maxPairs, now);
      p = { failures: 0, notBefore: 0, last: now };
    } else this.#pairs.delete(key); // re-inserted last: the map stays in order of last failure
    this.#pairs.set(key, p);
    p.failures++;
    p.last = now;
    const over = p.failures - o.freeFailures;
    if (over > 0) p.notBefore = now + Math.min(o.maxDelayMs, o.baseDelayMs * 2 ** Math.min(over - 1, 30));

    let a = this.#addresses.get(address);
    if (a && now - a.last > o.windowMs && a.blockedUntil <= now) a = undefined;
    if (!a) {
      this.#room(this.#addresses, o.maxAddresses, now);
      a = { users: new Set(), blockedUntil: 0, last: now };
    } else this.#addresses.delete(address);
    this.#addresses.set(address, a);
    a.last = now;
    a.users.add(normalUser(user));
    if (a.users.size > o.maxUsersPerAddress) {
      a.blockedUntil = now + o.addressBlockMs;
      a.users.clear();
    }
  }

  /** A credential of `user` from `address` was right: the pair's failures are forgotten. */
  success(address: string, user: string): void {
    this.#pairs.delete(pairKey(address, user));
  }

  /** Entries held (for tests and metrics). */
  get size(): { pairs: number; addresses: number } {
    return { pairs: this.#pairs.size, addresses: this.#addresses.size };
  }

  /** Makes room for one entry: idle entries swept, then the oldest evicted. */
  #room<T extends { last: number }>(map: Map<string, T>, max: number, now: number): void {
    if (map.size < max) return;
    for (const [k, v] of map) {
      if (now - v.last > this.options.windowMs && !((v as Partial<AddressEntry>).blockedUntil! > now))
        map.delete(k);
    }
    while (map.size >= max) map.delete(map.keys().next().value!);
  }
}

function normalUser(user: string): string {
  return user.slice(0, USER_MAX).toLowerCase();
}

function pairKey(address: string, user: string): string {
  return `${address}\u0000${normalUser(user)}`;
}

/** Seconds for a `Retry-After` header (at least 1). */
export function retryAfterSeconds(retryMs: number): number {
  return Math.max(1, Math.ceil(retryMs / 1000));
}
