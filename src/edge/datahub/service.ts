/**
 * The DataHub's domain: access keys (created, listed, revoked; checked when a remote NATS client
 * connects) and the composition of bus, NATS gateway and external cluster link, with the
 * operations view (counters, connections). Plain classes: no HTTP here.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { badRequest, notFound } from '../../kernel/errors.js';
import { hashSecret, randomSecret } from '../../kernel/crypto.js';
import { redactUrl, type Database } from '../../kernel/db/index.js';
import { DataHub, type PrefixCounters } from './bus.js';
import { ExternalLink } from './external.js';
import { Gateway, type AccessGrant, type GatewayCounters } from './gateway/server.js';
import type { Connection, ConnectionInfo } from './gateway/connection.js';

/** Connections listed in stats and metrics (the busiest); the gateway counters count them all. */
export const REPORTED_CONNECTIONS = 100;
import { prometheusText } from './metrics.js';
import { DataHubRepository, type AccessKeyRow } from './repository.js';
import type { AccessKeyView } from './schemas.js';
import { isValidPattern } from './subject.js';

/** How long a key found in the database is trusted before it is looked up again. */
const KEY_CACHE_MS = 5000;

export function accessKeyView(row: Omit<AccessKeyRow, 'key_hash'>): AccessKeyView {
  return {
    id: row.id,
    name: row.name,
    prefix: row.key_prefix,
    publish: row.publish === null ? null : (JSON.parse(row.publish) as string[]),
    subscribe: row.subscribe === null ? null : (JSON.parse(row.subscribe) as string[]),
    createdAt: new Date(row.created_at).toISOString(),
  };
}

function checkPatterns(list: string[] | null | undefined, field: string): string[] | null {
  if (list === undefined || list === null) return null;
  for (const p of list) {
    if (!isValidPattern(p)) {
      throw badRequest(
        `${field}: "${p}" is not a valid subject pattern (tokens separated by ".", "*" or ">" as whole tokens)`,
      );
    }
  }
  return [...new Set(list)];
}

export class AccessKeyService {
  readonly repo: DataHubRepository;
  readonly #log: Logger | undefined;
  readonly #cache = new Map<string, { grant: AccessGrant; until: number }>();
  /** Called when a key is revoked through this process. */
  onRevoke: ((id: string) => void) | undefined;

  constructor(repo: DataHubRepository, logger?: Logger) {
    this.repo = repo;
    this.#log = logger;
  }

  async create(input: {
    name: string;
    publish?: string[] | null | undefined;
    subscribe?: string[] | null | undefined;
  }): Promise<AccessKeyView & { key: string }> {
    const name = input.name.trim();
    if (name === '' || name.length > 200) throw badRequest('name must have 1 to 200 characters');
    const publish = checkPatterns(input.publish, 'publish');
    const subscribe = checkPatterns(input.subscribe, 'subscribe');
    const key = randomSecret('mwk');
    const row: AccessKeyRow = {
      id: randomUUID(),
      name,
      key_hash: hashSecret(key),
      key_prefix: key.slice(0, 10),
      publish: publish === null ? null : JSON.stringify(publish),
      subscribe: subscribe === null ? null : JSON.stringify(subscribe),
      created_at: Date.now(),
    };
    await this.repo.insertKey(row);
    this.#log?.info({ id: row.id, name, publish, subscribe }, 'datahub access key created');
    return { ...accessKeyView(row), key };
  }

  async get(id: string): Promise<AccessKeyView> {
    const row = await this.repo.getKey(id);
    if (!row) throw notFound(`access key "${id}" not found`);
    return accessKeyView(row);
  }

  /** Revokes a key: it stops working at once, and its open connections are closed. */
  async revoke(id: string): Promise<void> {
    if (!(await this.repo.deleteKey(id))) throw notFound(`access key "${id}" not found`);
    this.forget(id);
    this.#log?.info({ id }, 'datahub access key revoked');
    this.onRevoke?.(id);
  }

  /** Drops a key from the cache (revoked here or elsewhere). */
  forget(id: string): void {
    for (const [hash, entry] of this.#cache) if (entry.grant.keyId === id) this.#cache.delete(hash);
  }

  /** What a presented key allows, or null for an unknown or revoked one. */
  authenticate(key: string): AccessGrant | null | Promise<AccessGrant | null> {
    const hash = hashSecret(key);
    const hit = this.#cache.get(hash);
    if (hit && hit.until > Date.now()) return hit.grant;
    return this.repo.getKeyByHash(hash).then((row) => {
      if (!row) {
        this.#cache.delete(hash);
        return null;
      }
      const view = accessKeyView(row);
      const grant: AccessGrant = {
        keyId: row.id,
        name: row.name,
        publish: view.publish,
        subscribe: view.subscribe,
      };
      if (this.#cache.size > 10_000) this.#cache.clear();
      this.#cache.set(hash, { grant, until: Date.now() + KEY_CACHE_MS });
      return grant;
    });
  }
}

export interface DataHubServiceOptions {
  database: Database;
  logger?: Logger | undefined;
  /** Serve the NATS gateway (default true). */
  gateway?: boolean;
  host: string;
  port: number;
  tls?: { cert: string; key: string } | undefined;
  trustLocal?: boolean;
  maxPayload?: number;
  maxPending?: number;
  /** Subject prefixes with counters of their own (default 1000); the rest count as `_other`. */
  maxPrefixes?: number;
  /** Join this NATS cluster (external mode). */
  natsUrl?: string | undefined;
  /** Milliseconds between checks for keys revoked by another process (the CLI); default 5000. */
  keyRefreshMs?: number;
  /** Option names for the message when the port is taken. */
  portOption?: { optionName: string; envName: string };
}

export interface DataHubStats {
  mode: 'embedded' | 'external';
  gateway: (GatewayCounters & { url: string }) | null;
  external: { url: string; connected: boolean } | null;
  subscriptions: number;
  totals: Omit<PrefixCounters, 'prefix'>;
  subjects: PrefixCounters[];
  connections: {
    cid: number;
    name: string;
    address: string;
    subscriptions: number;
    msgsIn: number;
    bytesIn: number;
    msgsOut: number;
    bytesOut: number;
    pendingBytes: number;
  }[];
}

/** The running DataHub of an edge: bus, gateway, external link, access keys. */
export class DataHubService {
  readonly hub: DataHub;
  readonly keys: AccessKeyService;
  readonly gateway: Gateway | undefined;
  readonly external: ExternalLink | undefined;
  /** The largest message payload the DataHub carries, bytes (`--datahub-max-payload`). */
  maxPayload = 1024 * 1024;
  readonly #refresh: NodeJS.Timeout | undefined;
  readonly #log: Logger | undefined;
  #closing: Promise<void> | undefined;

  private constructor(
    hub: DataHub,
    keys: AccessKeyService,
    gateway: Gateway | undefined,
    external: ExternalLink | undefined,
    refreshMs: number,
    logger: Logger | undefined,
  ) {
    this.hub = hub;
    this.keys = keys;
    this.gateway = gateway;
    this.external = external;
    this.#log = logger;
    keys.onRevoke = (id) => gateway?.closeKey(id);
    if (gateway && refreshMs > 0) {
      this.#refresh = setInterval(() => void this.#dropRevoked(), refreshMs);
      this.#refresh.unref();
    }
  }

  static async start(options: DataHubServiceOptions): Promise<DataHubService> {
    const logger = options.logger;
    const hub = new DataHub({ logger, maxPrefixes: options.maxPrefixes });
    const keys = new AccessKeyService(new DataHubRepository(options.database.db), logger);
    let external: ExternalLink | undefined;
    let gateway: Gateway | undefined;
    try {
      if (options.natsUrl) {
        external = await ExternalLink.connect(hub, options.natsUrl, { logger });
        logger?.info({ url: options.natsUrl }, 'datahub joined an external NATS cluster');
      }
      if (options.gateway ?? true) {
        gateway = await Gateway.start({
          hub,
          host: options.host,
          port: options.port,
          tls: options.tls,
          trustLocal: options.trustLocal ?? true,
          authenticate: (key) => keys.authenticate(key),
          maxPayload: options.maxPayload,
          maxPending: options.maxPending,
          external: external !== undefined,
          logger,
          ...(options.portOption ? { portOption: options.portOption } : {}),
        });
        logger?.info({ url: gateway.url, tls: options.tls !== undefined }, 'datahub NATS gateway listening');
      }
    } catch (err) {
      await external?.close();
      hub.close();
      throw err;
    }
    const service = new DataHubService(hub, keys, gateway, external, options.keyRefreshMs ?? 5000, logger);
    if (options.maxPayload !== undefined) service.maxPayload = options.maxPayload;
    return service;
  }

  /** Closes connections of keys that were revoked by another process (the CLI). */
  async #dropRevoked(): Promise<void> {
    if (!this.gateway) return;
    const live = new Set<string>();
    for (const c of this.gateway.connectionObjects()) if (c.grant) live.add(c.grant.keyId);
    if (live.size === 0) return;
    try {
      const ids = await this.keys.repo.keyIds();
      for (const id of live) {
        if (!ids.has(id)) {
          this.keys.forget(id);
          this.gateway.closeKey(id);
        }
      }
    } catch (err) {
      this.#log?.warn({ err }, 'datahub: access key refresh failed');
    }
  }

  connections(): ConnectionInfo[] {
    return this.gateway?.connections() ?? [];
  }

  stats(): DataHubStats {
    const subjects = this.hub.prefixCounters();
    const totals = { msgsIn: 0, bytesIn: 0, msgsOut: 0, bytesOut: 0, drops: 0, slowConsumers: 0 };
    for (const s of subjects) {
      totals.msgsIn += s.msgsIn;
      totals.bytesIn += s.bytesIn;
      totals.msgsOut += s.msgsOut;
      totals.bytesOut += s.bytesOut;
      totals.drops += s.drops;
      totals.slowConsumers += s.slowConsumers;
    }
    const gw = this.gateway;
    return {
      mode: this.external ? 'external' : 'embedded',
      gateway: gw ? { url: gw.url, ...gw.counters } : null,
      external: this.external
        ? { url: redactUrl(this.external.url), connected: this.external.connected }
        : null,
      subscriptions: this.hub.subscriptionCount,
      totals,
      subjects: subjects.map((s) => ({ ...s })),
      connections: this.#busiestConnections().map((c) => ({
        cid: c.cid,
        name: c.name,
        address: c.address,
        subscriptions: c.subscriptionCount,
        msgsIn: c.msgsIn,
        bytesIn: c.bytesIn,
        msgsOut: c.msgsOut,
        bytesOut: c.bytesOut,
        pendingBytes: c.pendingBytes,
      })),
    };
  }

  metrics(): string {
    return prometheusText({
      prefixes: this.hub.prefixCounters(),
      subscriptions: this.hub.subscriptionCount,
      gateway: this.gateway ? this.gateway.counters : null,
      connections: this.#busiestConnections(),
    });
  }

  /**
   * The connections reported in stats and metrics: at most `REPORTED_CONNECTIONS`, the busiest
   * (bytes in and out) first, so that those answers stay bounded in size and time.
   */
  #busiestConnections(): readonly Connection[] {
    const all = this.gateway?.connectionObjects() ?? [];
    if (all.length <= REPORTED_CONNECTIONS) return all;
    return [...all]
      .sort((a, b) => b.bytesIn + b.bytesOut - (a.bytesIn + a.bytesOut))
      .slice(0, REPORTED_CONNECTIONS);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#refresh) clearInterval(this.#refresh);
      await this.gateway?.close();
      await this.external?.close();
      this.hub.close();
    })();
    return this.#closing;
  }
}
