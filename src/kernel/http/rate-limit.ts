/**
 * A per-address rate limit for the routes that check credentials (token, login), so that guessing
 * is slowed: at most about `max` requests per address in a sliding window of `windowMs`, answered
 * with 429 and `Retry-After` past that. Memory is bounded: stale addresses are swept.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tooManyRequests } from '../errors.js';

export interface RateLimitOptions {
  max: number;
  windowMs: number;
}

export class RateLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  // address -> counts of the current and the previous fixed window; their weighted sum
  // approximates a sliding window in O(1) time and memory per address.
  readonly #hits = new Map<string, { start: number; count: number; previous: number }>();
  #lastSweep = 0;

  constructor(options: RateLimitOptions) {
    this.#max = options.max;
    this.#windowMs = options.windowMs;
  }

  /** Records one attempt; answers the seconds to wait when over the limit, else 0. */
  hit(address: string, now = Date.now()): number {
    this.#sweep(now);
    const windowStart = now - (now % this.#windowMs);
    let entry = this.#hits.get(address);
    if (!entry) {
      entry = { start: windowStart, count: 0, previous: 0 };
      this.#hits.set(address, entry);
    } else if (entry.start !== windowStart) {
      entry.previous = entry.start === windowStart - this.#windowMs ? entry.count : 0;
      entry.start = windowStart;
      entry.count = 0;
    }
    const elapsed = (now - windowStart) / this.#windowMs;
    const estimate = entry.previous * (1 - elapsed) + entry.count;
    if (estimate >= this.#max) return Math.max(1, Math.ceil((windowStart + this.#windowMs - now) / 1000));
    entry.count++;
    return 0;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < this.#windowMs) return;
    this.#lastSweep = now;
    for (const [addr, entry] of this.#hits) {
      if (entry.start < now - 2 * this.#windowMs) this.#hits.delete(addr);
    }
  }

  /** A Fastify `onRequest` hook enforcing the limit. */
  hook() {
    return async (request: FastifyRequest, reply: FastifyReply) => {
      const wait = this.hit(request.ip);
      if (wait > 0) {
        void reply.header('retry-after', String(wait));
        throw tooManyRequests(`too many attempts from ${request.ip}; retry in ${wait} s`);
      }
    };
  }
}
