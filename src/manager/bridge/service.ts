/**
 * The bridge's client: one call to a device's edge over its link, with the edge's own credential
 * in place of any caller's, answering the edge's reply. The bridge route (routes.ts), the device
 * OAuth clients and the templates (their upload, apply, preview and capture) all send through it.
 * No HTTP server here.
 *
 * The route's path is hot (bench/fleet): a call costs no database read once the device's target
 * is cached (FleetService.bridgeTarget), and the `Authorization` value of a credential is built
 * once and kept (bounded) rather than per call.
 */
import { Readable } from 'node:stream';
import { AppError, ERRORS } from '../../kernel/errors.js';
import { currentScope } from '../../kernel/db/index.js';
import { BRIDGE_TARGET_CACHE_SIZE, type FleetService } from '../fleet/index.js';
import type { LinkHub, SocketRequest } from '../link/index.js';
import type { WebSocket } from 'ws';
import type { BridgeActor } from '../../kernel/link/protocol.js';
import type { Logger } from 'pino';
import { roleAt, type ManagerRole, type Principal } from '../auth/index.js';

/** Largest request body streamed to an edge through the bridge. */
export const BRIDGE_MAX_BODY = 64 * 1024 * 1024;

/** One call as it goes to the edge (path relative to the edge's root). */
export interface EdgeCall {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body: Readable | null;
  /**
   * Who makes the call (the edge runs it as `actor.role` at most); default `managerActor('manager')`:
   * the manager itself, as admin, for calls it makes after checking its caller's role.
   */
  actor?: BridgeActor;
}

/** One bridged call, as the audit trail's hook hears it (`BridgeService.onBridgedCall`). */
export interface BridgedCallRecord {
  deviceId: string;
  method: string;
  path: string;
  actor: BridgeActor;
  /** The edge's status (503/504 and the like are thrown, not recorded). */
  status: number;
  at: number;
}

/**
 * The actor of a call `principal` makes on a device of `target`'s project: its role there (a
 * manager role maps onto the edge role of the same name), its subject and user, the request id.
 */
export function principalActor(
  principal: Principal,
  target: { projectId: string; companyId: string },
  requestId: string | null,
): BridgeActor {
  const role = roleAt(principal, target) ?? 'viewer';
  return {
    role,
    subject: principal.subject,
    user: principal.username,
    companyId: target.companyId,
    projectId: target.projectId,
    requestId,
  };
}

/**
 * The manager's own actor (`manager:<what>`, admin by default): for the calls it makes on its
 * callers' behalf after its own role check (the templates' upload, apply, preview, capture).
 */
export function managerActor(what: string, role: ManagerRole = 'admin'): BridgeActor {
  return { role, subject: `manager:${what}`, user: null, companyId: null, projectId: null, requestId: null };
}

/** An edge's answer with its body read and parsed (JSON when it is JSON, else the text). */
export interface EdgeAnswer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the edge's JSON, read as each caller's contract with that edge route describes it
  body: any;
}

const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class BridgeService {
  readonly fleet: FleetService;
  readonly hub: LinkHub;
  /** `Authorization` values by credential (see `#authorization`). */
  readonly #authorizations = new Map<string, string>();
  readonly #listeners = new Set<(call: BridgedCallRecord) => void>();
  /** Modules that must see every request through Fastify's hooks while they say so. */
  readonly #fastPathVetoes = new Set<() => boolean>();
  readonly #log: Logger | undefined;

  constructor(fleet: FleetService, hub: LinkHub, log?: Logger) {
    this.fleet = fleet;
    this.hub = hub;
    this.#log = log;
  }

  /**
   * Sends one call to a device's edge with the edge's credential (looked up unless the caller
   * has it already, as the bridge route does); answers the edge's reply, its body streaming.
   */
  async call(deviceId: string, call: EdgeCall, known?: string) {
    const credential = known ?? (await this.fleet.edgeCredential(deviceId));
    if (!credential) throw new AppError(ERRORS.notFound, `device "${deviceId}" not found`);
    const actor = call.actor ?? managerActor('manager');
    // A request's transaction begins at its first write and ends with its answer: on SQLite it
    // holds the database's one writer meanwhile. No handler writes before it calls an edge (test/
    // e2e/manager-audit.test.ts shows changes committing while a call waits); one that did would
    // block every other change for the edge's answer, hence the warning.
    if (currentScope()?.begun)
      this.#log?.warn(
        { deviceId, path: call.path.split('?')[0] },
        'an edge call made after a write of the same request: its write transaction waits for the edge',
      );
    const res = await this.hub.request(deviceId, {
      method: call.method,
      path: call.path,
      headers: { ...call.headers, authorization: this.#authorization(credential) },
      body: call.body,
      actor,
    });
    this.#record({
      deviceId,
      method: call.method,
      path: call.path,
      actor,
      status: res.status,
      at: Date.now(),
    });
    return res;
  }

  /**
   * Relays `browser` (a WebSocket the bridge's route accepted: a GraphQL subscription) to the
   * edge of `deviceId`, whose socket opens with the edge's credential (`credential`) in place of
   * any of the caller's, as `req.actor` at most. Refusals and ends close `browser` with a code.
   */
  openSocket(
    deviceId: string,
    req: Omit<SocketRequest, 'headers'> & { headers: Record<string, string | string[]> },
    browser: WebSocket,
    credential: string,
  ): void {
    this.hub.openSocket(
      deviceId,
      { ...req, headers: { ...req.headers, authorization: this.#authorization(credential) } },
      browser,
    );
  }

  /**
   * The hook of the manager's audit trail: `listener` hears every bridged call once the edge
   * answered its status (the bridge route's, the device OAuth clients', the templates'), with its
   * actor. Answers the function that removes it. A listener that throws is logged, never fails
   * the call.
   */
  onBridgedCall(listener: (call: BridgedCallRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * `veto` answers true while a module must see every request through Fastify's hooks (the audit
   * trail's API activity log while it is on): the bridge's fast path (fast-path.ts) then leaves
   * every call to the route. Answers the function that removes it.
   */
  vetoFastPath(veto: () => boolean): () => void {
    this.#fastPathVetoes.add(veto);
    return () => this.#fastPathVetoes.delete(veto);
  }

  /** Whether the fast path may take a call now (no module vetoes it). */
  fastPathOpen(): boolean {
    for (const veto of this.#fastPathVetoes) if (veto()) return false;
    return true;
  }

  #record(call: BridgedCallRecord): void {
    for (const l of this.#listeners) {
      try {
        l(call);
      } catch (err) {
        this.#log?.warn({ err }, 'a bridged-call listener failed');
      }
    }
  }

  /** A JSON call to a device's edge, answering its parsed body and status. */
  json(
    deviceId: string,
    method: string,
    path: string,
    json?: unknown,
    headers: Record<string, string> = NO_HEADERS,
    actor?: BridgeActor,
  ): Promise<EdgeAnswer> {
    return this.bytes(
      deviceId,
      method,
      path,
      json === undefined
        ? undefined
        : { contentType: 'application/json', bytes: Buffer.from(JSON.stringify(json)) },
      headers,
      actor,
    );
  }

  /** A call with a raw body (e.g. a template document), answering the edge's parsed body. */
  async bytes(
    deviceId: string,
    method: string,
    path: string,
    content?: { contentType: string; bytes: Buffer },
    headers: Record<string, string> = NO_HEADERS,
    actor?: BridgeActor,
  ): Promise<EdgeAnswer> {
    const res = await this.call(deviceId, {
      method,
      path,
      headers: content === undefined ? headers : { ...headers, 'content-type': content.contentType },
      body: content === undefined ? null : Readable.from([content.bytes]),
      actor,
    });
    let raw: Buffer;
    if (Buffer.isBuffer(res.body)) raw = res.body;
    else {
      const chunks: Buffer[] = [];
      for await (const c of res.body) chunks.push(c as Buffer);
      raw = Buffer.concat(chunks);
    }
    const text = raw.toString('utf8');
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { status: res.status, body };
  }

  /** `Authorization` for the edge's credential (a legacy API token: Basic, empty password). */
  #authorization(credential: string): string {
    let value = this.#authorizations.get(credential);
    if (value === undefined) {
      value = `Basic ${Buffer.from(`${credential}:`).toString('base64')}`;
      // As many as the bridge's target cache holds at most; a re-enrolled device's old one ages out.
      if (this.#authorizations.size >= BRIDGE_TARGET_CACHE_SIZE) this.#authorizations.clear();
      this.#authorizations.set(credential, value);
    }
    return value;
  }
}
