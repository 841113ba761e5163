/**
 * Enrolment of the edge with an edge manager (contract part 4.1, the last three bootstrap steps)
 * and the link that follows:
 * - `proposeManager(url)`: reads the certificate the manager presents; answers a transaction id
 *   and the certificate's fingerprint for people to compare;
 * - `confirm(tx)`: pins that certificate (a changed certificate since the proposal is refused);
 * - `activate(code)`: issues the per-device credential the manager will use for bridged calls (an
 *   API token of this edge), sends it with the activation code to the manager over the pinned
 *   connection, keeps the link identity the manager answers, and starts the link.
 * No HTTP routes here.
 */
import { randomUUID } from 'node:crypto';
import https from 'node:https';
import http from 'node:http';
import os from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import { SettingsTable } from '../../kernel/db/settings.js';
import type { Database } from '../../kernel/db/index.js';
import { MILLWRIGHT_VERSION } from '../../kernel/version.js';
import {
  CertificateChangedError,
  fetchFingerprint,
  pinnedConnection,
  type Fingerprint,
} from '../../kernel/link/pinned.js';
import { LINK_CLOSE_MOVED } from '../../kernel/link/protocol.js';
import type { AuthService } from '../auth/index.js';
import { EDGE_API_VERSION } from '../versions/index.js';
import { hostFacts } from '../../kernel/host.js';
import { LinkClient, type LinkIdentity } from './link-client.js';
import { HaState } from './ha.js';

/** Proposals (`POST /dm/cloud/url`) kept at once, and for how long. */
const MAX_PROPOSALS = 16;
const PROPOSAL_TTL_MS = 15 * 60 * 1000;

export interface DmStatus {
  enrolled: boolean;
  managerUrl: string | null;
  fingerprint: string | null;
  deviceId: string | null;
  projectId: string | null;
  connected: boolean;
  lastError: string | null;
}

export class DmService {
  readonly #settings: SettingsTable;
  /** The link's identity (its pin is replaced by `repin`). */
  #identity: LinkIdentity | null = null;
  readonly #auth: AuthService;
  readonly #app: FastifyInstance;
  readonly #log: Logger;
  readonly #proposals = new Map<string, { url: string; fingerprint: Fingerprint; until: number }>();
  #link: LinkClient | null = null;
  /** This edge's role in a high-availability pair, and the fence acquisition obeys. */
  readonly ha: HaState;
  /** What other modules add to each heartbeat's metrics (at most 16 sources). */
  readonly #reporters: (() => Record<string, unknown>)[] = [];

  constructor(database: Database, auth: AuthService, app: FastifyInstance, logger: Logger) {
    this.#settings = new SettingsTable(database.db, 'dm_setting');
    this.#auth = auth;
    this.#app = app;
    this.#log = logger;
    this.ha = new HaState(this.#settings, logger.child({ component: 'dm.ha' }));
  }

  /** Adds `source`'s facts to the metrics of every heartbeat to the manager (its alert rules read them). */
  reportOnHeartbeat(source: () => Record<string, unknown>): void {
    if (this.#reporters.length < 16) this.#reporters.push(source);
  }

  #reported(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const r of this.#reporters) {
      try {
        Object.assign(out, r());
      } catch (err) {
        this.#log.debug({ err }, 'a heartbeat reporter failed');
      }
    }
    return out;
  }

  async status(): Promise<DmStatus> {
    const s = await this.#all();
    return {
      enrolled: s.device_id !== undefined,
      managerUrl: s.manager_url ?? s.confirmed_url ?? null,
      fingerprint: s.fingerprint ?? s.confirmed_fingerprint ?? null,
      deviceId: s.device_id ?? null,
      projectId: s.project_id ?? null,
      connected: this.#link?.connected ?? false,
      lastError: this.#link?.lastError ?? null,
    };
  }

  /** A setting, undefined when absent or cleared. */
  async #get(key: string): Promise<string | undefined> {
    const v = await this.#settings.get(key);
    return v === '' ? undefined : v;
  }

  async #all(): Promise<Record<string, string | undefined>> {
    const keys = [
      'manager_url',
      'fingerprint',
      'device_id',
      'link_secret',
      'project_id',
      'token_id',
      'confirmed_url',
      'confirmed_fingerprint',
    ];
    const out: Record<string, string | undefined> = {};
    for (const k of keys) out[k] = await this.#get(k);
    return out;
  }

  /** Step 1: the manager's address; answers `tx` and the fingerprint of its certificate. */
  async proposeManager(url: string): Promise<{ tx: string; url: string; fingerprint: Fingerprint }> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw badRequest(`url must be the manager's https:// address, got "${url}"`);
    }
    if (u.protocol !== 'https:')
      throw badRequest('url must be an https:// address (the link is pinned to its certificate)');
    const base = `${u.protocol}//${u.host}`;
    let fingerprint: Fingerprint;
    try {
      fingerprint = await fetchFingerprint(base);
    } catch (err) {
      throw new AppError(
        ERRORS.managerUnreachable,
        `cannot reach the manager at ${base}: ${(err as Error).message}`,
      );
    }
    const now = Date.now();
    for (const [k, v] of this.#proposals) if (v.until <= now) this.#proposals.delete(k);
    if (this.#proposals.size >= MAX_PROPOSALS) {
      const oldest = this.#proposals.keys().next().value;
      if (oldest !== undefined) this.#proposals.delete(oldest);
    }
    const tx = randomUUID();
    this.#proposals.set(tx, { url: base, fingerprint, until: now + PROPOSAL_TTL_MS });
    this.#log.info({ url: base, fingerprint }, 'manager address proposed');
    return { tx, url: base, fingerprint };
  }

  /** Step 2: pins the certificate seen at step 1 (refused when the manager now shows another). */
  async confirm(tx: string): Promise<{ url: string; fingerprint: Fingerprint }> {
    const p = this.#proposals.get(tx);
    if (!p || p.until <= Date.now())
      throw notFound(`no pending manager address "${tx}" (POST /dm/cloud/url first)`);
    let now: Fingerprint;
    try {
      now = await fetchFingerprint(p.url);
    } catch (err) {
      throw new AppError(
        ERRORS.managerUnreachable,
        `cannot reach the manager at ${p.url}: ${(err as Error).message}`,
      );
    }
    if (now !== p.fingerprint) {
      this.#proposals.delete(tx);
      throw new AppError(ERRORS.certificateChanged, new CertificateChangedError(p.fingerprint, now).message);
    }
    this.#proposals.delete(tx);
    await this.#settings.put('confirmed_url', p.url);
    await this.#settings.put('confirmed_fingerprint', p.fingerprint);
    this.#log.info({ url: p.url, fingerprint: p.fingerprint }, 'manager certificate confirmed');
    return { url: p.url, fingerprint: p.fingerprint };
  }

  /** Step 3: enrols with an activation code over the pinned connection, then links. */
  async activate(
    code: string,
    name?: string,
    options: { move?: boolean } = {},
  ): Promise<{ deviceId: string; projectId: string; managerUrl: string }> {
    const enrolledAs = await this.#get('device_id');
    const enrolledAt = await this.#get('manager_url');
    if (enrolledAs && !options.move) {
      throw conflict(
        `this edge is already enrolled with the manager at ${enrolledAt} as device ${enrolledAs}; to move it, send "move": true with the activation code (its device record there is retired), or leave first (DELETE /dm/cloud)`,
      );
    }
    const url = await this.#get('confirmed_url');
    const fingerprint = await this.#get('confirmed_fingerprint');
    if (!url || !fingerprint) {
      throw conflict(
        "the manager's address is not confirmed: POST /dm/cloud/url, then PUT /dm/cloud/url/{tx}/confirm",
      );
    }
    const oldSecret = await this.#get('link_secret');
    const credential = await this.#auth.createApiToken(`manager ${new URL(url).host}`, 'admin');
    let answer: { deviceId: string; projectId: string; linkSecret: string };
    try {
      const res = await pinnedJson(`${url}/dm/activate`, fingerprint, {
        code,
        edgeCredential: credential.token,
        name: name ?? os.hostname(),
        version: EDGE_API_VERSION,
        host: hostFacts(),
        ...(enrolledAs && enrolledAt === url && oldSecret
          ? { replaces: { deviceId: enrolledAs, linkSecret: oldSecret } }
          : {}),
      });
      if (res.status !== 200) {
        const b = res.body as { code?: string; message?: string } | undefined;
        throw AppError.relayed(
          res.status >= 400 && res.status < 500 ? res.status : 502,
          b?.code,
          ERRORS.activationFailed,
          `the manager refused the activation: ${b?.message ?? `HTTP ${res.status}`}`,
        );
      }
      answer = res.body as typeof answer;
    } catch (err) {
      await this.#auth.revokeApiToken(credential.id).catch(() => undefined);
      if (err instanceof CertificateChangedError)
        throw new AppError(ERRORS.certificateChanged, err.message, { status: 502 });
      if (err instanceof AppError) throw err;
      throw new AppError(
        ERRORS.managerUnreachable,
        `cannot reach the manager at ${url}: ${(err as Error).message}`,
      );
    }
    // The old link closes as a move: its manager retires the old device record (when that manager
    // is this one, the activation above retired it already).
    await this.#forget(
      enrolledAs
        ? {
            code: LINK_CLOSE_MOVED,
            reason: `edge moved: enrolled again as device ${answer.deviceId} at ${url}`,
          }
        : undefined,
    );
    await this.#settings.put('manager_url', url);
    await this.#settings.put('fingerprint', fingerprint);
    await this.#settings.put('device_id', answer.deviceId);
    await this.#settings.put('project_id', answer.projectId);
    await this.#settings.put('link_secret', answer.linkSecret);
    await this.#settings.put('token_id', credential.id);
    this.#log.info({ deviceId: answer.deviceId, managerUrl: url }, 'enrolled with the manager');
    await this.startLink();
    return { deviceId: answer.deviceId, projectId: answer.projectId, managerUrl: url };
  }

  /** Leaves the manager: the link stops and the manager's credential on this edge is revoked. */
  async unenrol(): Promise<void> {
    if (!(await this.#get('device_id'))) throw notFound('this edge is not enrolled with a manager');
    await this.#forget();
    this.#log.info('left the manager');
  }

  async #forget(close?: { code: number; reason: string }): Promise<void> {
    await this.#link?.stop(close?.reason ?? 'edge leaves this manager', close?.code);
    this.#link = null;
    await this.ha.clear();
    const tokenId = await this.#get('token_id');
    if (tokenId) await this.#auth.revokeApiToken(tokenId).catch(() => undefined);
    for (const k of ['manager_url', 'fingerprint', 'device_id', 'project_id', 'link_secret', 'token_id']) {
      await this.#settings.put(k, ''); // cleared
    }
  }

  /**
   * The manager's next certificate, announced by the manager over the link (pinned to the current
   * one) before it swaps its HTTPS certificate (user SSL): the link's next connection pins it.
   */
  async repin(fingerprint: string): Promise<{ fingerprint: string }> {
    if (!(await this.#get('device_id'))) throw notFound('this edge is not enrolled with a manager');
    await this.#settings.put('fingerprint', fingerprint);
    if (this.#identity) this.#identity.fingerprint = fingerprint;
    this.#log.info(
      { fingerprint },
      'the manager announced its new certificate: pinned for the next connection',
    );
    return { fingerprint };
  }

  /** Starts the link when enrolled (at start, and after activation). */
  async startLink(): Promise<void> {
    const s = await this.#all();
    if (!s.manager_url || !s.fingerprint || !s.device_id || !s.link_secret) return;
    const identity: LinkIdentity = (this.#identity = {
      managerUrl: s.manager_url,
      fingerprint: s.fingerprint,
      deviceId: s.device_id,
      linkSecret: s.link_secret,
    });
    await this.#link?.stop();
    this.#link = new LinkClient({
      identity,
      app: this.#app,
      logger: this.#log,
      version: EDGE_API_VERSION,
      millwright: MILLWRIGHT_VERSION,
      hostFacts,
      extraMetrics: () => this.#reported(),
      ha: this.ha,
    });
    this.#link.start();
  }

  async close(): Promise<void> {
    await this.#link?.stop();
    this.#link = null;
    this.ha.close();
  }
}

/** A JSON POST over a connection pinned to `fingerprint`. */
function pinnedJson(
  url: string,
  fingerprint: Fingerprint,
  json: unknown,
): Promise<{ status: number; body: unknown }> {
  const u = new URL(url);
  const payload = Buffer.from(JSON.stringify(json));
  const secure = u.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(
      {
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: Number(u.port || (secure ? 443 : 80)),
        path: u.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
        timeout: 15_000,
        ...(secure
          ? {
              createConnection: pinnedConnection(
                fingerprint,
              ) as unknown as http.RequestOptions['createConnection'],
            }
          : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > 1024 * 1024) req.destroy(new Error('answer too large'));
          else chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = text;
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('the manager did not answer in time')));
    req.on('error', reject);
    req.end(payload);
  });
}
