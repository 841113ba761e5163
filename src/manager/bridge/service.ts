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
import { BRIDGE_TARGET_CACHE_SIZE, type FleetService } from '../fleet/index.js';
import type { LinkHub } from '../link/index.js';

/** Largest request body streamed to an edge through the bridge. */
export const BRIDGE_MAX_BODY = 64 * 1024 * 1024;

/** One call as it goes to the edge (path relative to the edge's root). */
export interface EdgeCall {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body: Readable | null;
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

  constructor(fleet: FleetService, hub: LinkHub) {
    this.fleet = fleet;
    this.hub = hub;
  }

  /**
   * Sends one call to a device's edge with the edge's credential (looked up unless the caller
   * has it already, as the bridge route does); answers the edge's reply, its body streaming.
   */
  async call(deviceId: string, call: EdgeCall, known?: string) {
    const credential = known ?? (await this.fleet.edgeCredential(deviceId));
    if (!credential) throw new AppError(ERRORS.notFound, `device "${deviceId}" not found`);
    return this.hub.request(deviceId, {
      method: call.method,
      path: call.path,
      headers: { ...call.headers, authorization: this.#authorization(credential) },
      body: call.body,
    });
  }

  /** A JSON call to a device's edge, answering its parsed body and status. */
  json(
    deviceId: string,
    method: string,
    path: string,
    json?: unknown,
    headers: Record<string, string> = NO_HEADERS,
  ): Promise<EdgeAnswer> {
    return this.bytes(
      deviceId,
      method,
      path,
      json === undefined
        ? undefined
        : { contentType: 'application/json', bytes: Buffer.from(JSON.stringify(json)) },
      headers,
    );
  }

  /** A call with a raw body (e.g. a template document), answering the edge's parsed body. */
  async bytes(
    deviceId: string,
    method: string,
    path: string,
    content?: { contentType: string; bytes: Buffer },
    headers: Record<string, string> = NO_HEADERS,
  ): Promise<EdgeAnswer> {
    const res = await this.call(deviceId, {
      method,
      path,
      headers: content === undefined ? headers : { ...headers, 'content-type': content.contentType },
      body: content === undefined ? null : Readable.from([content.bytes]),
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
