/**
 * Manager processes sharing one database (PostgreSQL): each records itself (its address for the
 * others and its certificate's fingerprint, with a heartbeat) and the links it holds. A bridged
 * call (or any call the manager makes on an edge) for a device whose link another live process
 * holds is forwarded to that process at `/dm/peer/{deviceId}/<path>`, over TLS pinned to its
 * recorded certificate, with a secret the processes share through the database.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import https from 'node:https';
import http from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Database } from '../../kernel/db/index.js';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { pinnedConnection } from '../../kernel/link/pinned.js';
import type { LinkHeaders, BridgeActor } from '../../kernel/link/protocol.js';
import { LinkRepository } from './repository.js';

/** Header carrying the shared secret on a forwarded call. */
export const PEER_HEADER = 'x-millwright-peer';
/** Header carrying a forwarded call's `BridgeActor` (JSON; read only with the shared secret). */
export const PEER_ACTOR_HEADER = 'x-millwright-bridge-actor';
/** A process not seen for this long is taken for stopped (its links are not forwarded to). */
export const PEER_HEARTBEAT_MS = 3000;
export const PEER_STALE_MS = 3 * PEER_HEARTBEAT_MS;

export class LinkPeers {
  readonly #repo: LinkRepository;
  readonly #log: Logger;
  readonly instance: string;
  #secret: Buffer | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** Owners by device, briefly (a forwarded call costs no database read for a second). */
  readonly #owners = new Map<
    string,
    { owner: { id: string; url: string; fingerprint: string | null } | null; until: number }
  >();

  constructor(database: Database, logger: Logger, instance: string) {
    this.#repo = new LinkRepository(database);
    this.#log = logger;
    this.instance = instance;
  }

  /** The shared secret (made by the first process on the database). */
  async secret(): Promise<Buffer> {
    if (this.#secret) return this.#secret;
    const value = await this.#repo.initSetting('peer_secret', randomBytes(32).toString('base64url'));
    this.#secret = Buffer.from(value);
    return this.#secret;
  }

  async checkSecret(given: string | undefined): Promise<boolean> {
    if (!given) return false;
    const want = await this.secret();
    const got = Buffer.from(given);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  /** Forgets every process and link holder (SQLite: one process per database, the previous one is gone). */
  async forgetAll(): Promise<void> {
    await this.#repo.forgetAll();
  }

  /** Devices whose links live processes hold (kept online when a process starts). */
  async heldElsewhere(): Promise<string[]> {
    return this.#repo.heldElsewhere(this.instance, Date.now() - PEER_STALE_MS);
  }

  /** Records this process (once its address is known) and keeps its heartbeat. */
  async register(url: string, fingerprint: string | null): Promise<void> {
    const now = Date.now();
    await this.#repo.insertInstance({ id: this.instance, url, fingerprint, started_at: now, seen_at: now });
    await this.#repo.deleteInstancesSeenBefore(now - 24 * 3600_000);
    this.#timer = setInterval(() => {
      this.#repo
        .heartbeat(this.instance, Date.now())
        .catch((err: unknown) => this.#log.warn({ err }, 'manager heartbeat failed'));
    }, PEER_HEARTBEAT_MS);
    this.#timer.unref();
  }

  async held(deviceId: string): Promise<void> {
    const now = Date.now();
    await this.#repo.setOwner(deviceId, this.instance, now);
    this.#owners.delete(deviceId);
  }

  async released(deviceId: string): Promise<void> {
    await this.#repo.releaseOwner(deviceId, this.instance);
  }

  /** The live process that holds the device's link, other than this one; null when none. */
  async ownerOf(deviceId: string) {
    const now = Date.now();
    const hit = this.#owners.get(deviceId);
    if (hit && hit.until > now) return hit.owner;
    const row = await this.#repo.liveOwner(deviceId, now - PEER_STALE_MS);
    const owner = row && row.id !== this.instance ? row : null;
    if (this.#owners.size > 10_000) this.#owners.clear();
    this.#owners.set(deviceId, { owner, until: now + 1000 });
    return owner;
  }

  /** Sends the call to the process holding the link; answers its status, headers and streamed body. */
  async forward(
    owner: { url: string; fingerprint: string | null },
    deviceId: string,
    req: {
      method: string;
      path: string;
      headers: LinkHeaders;
      body: Readable | null;
      actor?: BridgeActor | undefined;
    },
    timeoutMs: number,
  ): Promise<{ status: number; headers: LinkHeaders; body: Readable }> {
    const secret = (await this.secret()).toString();
    const target = new URL(`/dm/peer/${encodeURIComponent(deviceId)}${req.path}`, owner.url);
    const secure = target.protocol === 'https:';
    if (secure && !owner.fingerprint)
      throw new AppError(ERRORS.peerError, 'the manager holding the link has no recorded certificate');
    return new Promise((resolve, reject) => {
      const r = (secure ? https : http).request(
        target,
        {
          method: req.method,
          headers: {
            ...req.headers,
            [PEER_HEADER]: secret,
            ...(req.actor ? { [PEER_ACTOR_HEADER]: JSON.stringify(req.actor) } : {}),
          },
          timeout: timeoutMs,
          // A connection of its own, pinned to the peer's recorded certificate (no agent).
          ...(secure
            ? { createConnection: pinnedConnection(owner.fingerprint!) as never }
            : { agent: false }),
        },
        (res) => {
          const headers: LinkHeaders = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = v;
          resolve({ status: res.statusCode ?? 502, headers, body: res });
        },
      );
      r.on('timeout', () =>
        r.destroy(
          new AppError(
            ERRORS.edgeTimeout,
            `the manager holding the link of "${deviceId}" did not answer in time`,
          ),
        ),
      );
      r.on('error', (err) =>
        reject(
          err instanceof AppError
            ? err
            : new AppError(
                ERRORS.peerError,
                `forwarding to the manager holding the link failed: ${err.message}`,
              ),
        ),
      );
      if (req.body) req.body.pipe(r);
      else r.end();
    });
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}
