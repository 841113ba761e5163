/**
 * What an access key lets a connection do: publish (with a cache of the verdict per subject, and
 * the reply subjects of requests the connection received, which it may always answer) and
 * subscribe (reply inboxes always allowed).
 */
import { patternCovers, patternMatches } from '../subject.js';
import type { AccessGrant } from './server.js';

/** Reply subjects remembered per connection (the oldest is forgotten first). */
const RESPONSES_KEPT = 4096;
/** Publish verdicts cached per connection (the cache is emptied when full). */
const PERMISSION_CACHE = 1024;

export class Permissions {
  readonly #responses = new Set<string>();
  readonly #pubAllowed = new Map<string, boolean>();

  /** Whether `grant` (whose `publish` list is not null) allows publishing to `subject`. */
  mayPublish(grant: AccessGrant, subject: string): boolean {
    if (this.#responses.delete(subject)) return true;
    let ok = this.#pubAllowed.get(subject);
    if (ok === undefined) {
      ok = grant.publish!.some((p) => patternMatches(p, subject));
      if (this.#pubAllowed.size >= PERMISSION_CACHE) this.#pubAllowed.clear();
      this.#pubAllowed.set(subject, ok);
    }
    return ok;
  }

  /** Whether `grant` allows a subscription to `pattern`. */
  maySubscribe(grant: AccessGrant | null, pattern: string): boolean {
    const allowed = grant?.subscribe;
    if (!allowed || pattern.startsWith('_INBOX.')) return true;
    return allowed.some((a) => patternCovers(a, pattern));
  }

  /** The connection received a request with this reply subject: it may publish the answer. */
  rememberResponse(reply: string): void {
    if (this.#responses.size >= RESPONSES_KEPT) {
      const first = this.#responses.values().next().value;
      if (first !== undefined) this.#responses.delete(first);
    }
    this.#responses.add(reply);
  }
}
