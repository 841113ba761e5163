/**
 * The asset hub's connection, set by a global admin (`/admin/v1/asset-hub/settings`): the hub's
 * URL, the API token this manager uses there (sealed at rest, never shown again), the hub's
 * certificate when it is not signed by a public CA, and whether usage events are sent. Validation
 * reaches the hub without saving; `connect` (main API) checks the saved one and records the result.
 */
import type { SecretBox } from '../../kernel/secret-box.js';
import { AppError, badRequest, ERRORS, forbidden } from '../../kernel/errors.js';
import { isGlobal, type Principal } from '../auth/index.js';
import { HubClient, hubError, hubUrlOf, type HubConnection } from './client.js';
import type { AssetHubRepository } from './repository.js';

interface Stored {
  url: string;
  /** Sealed. */
  token: string;
  caCertificate: string | null;
  telemetry: boolean;
  updatedBy: string;
  updatedAt: number;
}

export interface SettingsInput {
  url?: string | undefined;
  token?: string | undefined;
  caCertificate?: string | null | undefined;
  telemetry?: boolean | undefined;
}

const MAX_CA_BYTES = 64 * 1024;

export class HubSettings {
  readonly #repo: AssetHubRepository;
  readonly #box: SecretBox;
  readonly #timeoutMs: number;

  constructor(repo: AssetHubRepository, box: SecretBox, timeoutMs: number) {
    this.#repo = repo;
    this.#box = box;
    this.#timeoutMs = timeoutMs;
  }

  #requireAdmin(principal: Principal): void {
    if (!isGlobal(principal, 'admin')) throw forbidden('the asset hub settings need a global admin token');
  }

  async #stored(): Promise<Stored | null> {
    const v = await this.#repo.setting('hub');
    return v ? (JSON.parse(v) as Stored) : null;
  }

  /** The hub as configured (null: none). */
  async client(): Promise<HubClient | null> {
    const s = await this.#stored();
    if (!s) return null;
    return new HubClient(
      { url: s.url, token: this.#box.open(s.token), caCertificate: s.caCertificate },
      this.#timeoutMs,
    );
  }

  /** The hub as configured; `asset_hub_not_configured` (409) when there is none. */
  async required(): Promise<HubClient> {
    const c = await this.client();
    if (!c)
      throw new AppError(
        ERRORS.assetHubNotConfigured,
        'no asset hub is configured: a global admin sets one with POST /admin/v1/asset-hub/settings',
      );
    return c;
  }

  /** Whether usage events are sent (and to which hub). */
  async telemetryClient(): Promise<HubClient | null> {
    const s = await this.#stored();
    return s?.telemetry ? this.client() : null;
  }

  async get(principal: Principal) {
    this.#requireAdmin(principal);
    return this.#view(await this.#stored());
  }

  #view(s: Stored | null) {
    if (!s) return { configured: false };
    return {
      configured: true,
      url: s.url,
      tokenSet: true,
      caCertificate: s.caCertificate,
      telemetry: s.telemetry,
      updatedBy: s.updatedBy,
      updatedAt: new Date(s.updatedAt).toISOString(),
    };
  }

  /** The input over the saved settings, checked (the token is kept when not given). */
  async #merged(input: SettingsInput): Promise<{ connection: HubConnection; telemetry: boolean }> {
    const current = await this.#stored();
    const url = input.url ?? current?.url;
    if (!url) throw badRequest('url (the hub manager, e.g. https://hub.example.com:8444) is required');
    // The saved token goes only to the saved hub: a new URL needs its token.
    const sameHub = current !== null && hubUrlOf(url) === current.url;
    if (input.token === undefined && current && !sameHub)
      throw badRequest('token is required when the url changes (the saved token is for the saved hub only)');
    const token = input.token ?? (current ? this.#box.open(current.token) : undefined);
    if (!token || token.trim() === '')
      throw badRequest('token (an API token of the hub manager) is required');
    const ca = input.caCertificate === undefined ? (current?.caCertificate ?? null) : input.caCertificate;
    if (ca !== null) {
      if (Buffer.byteLength(ca) > MAX_CA_BYTES)
        throw badRequest(`caCertificate has at most ${MAX_CA_BYTES} bytes`);
      if (!ca.includes('-----BEGIN CERTIFICATE-----'))
        throw badRequest('caCertificate must be PEM (-----BEGIN CERTIFICATE-----)');
    }
    return {
      connection: { url: hubUrlOf(url), token: token.trim(), caCertificate: ca },
      telemetry: input.telemetry ?? current?.telemetry ?? true,
    };
  }

  async set(principal: Principal, input: SettingsInput) {
    this.#requireAdmin(principal);
    const { connection, telemetry } = await this.#merged(input);
    const stored: Stored = {
      url: connection.url,
      token: this.#box.seal(connection.token),
      caCertificate: connection.caCertificate,
      telemetry,
      updatedBy: principal.subject,
      updatedAt: Date.now(),
    };
    await this.#repo.setSetting('hub', JSON.stringify(stored));
    await this.#repo.deleteSettings(['status']);
    return this.#view(stored);
  }

  async remove(principal: Principal): Promise<boolean> {
    this.#requireAdmin(principal);
    return (await this.#repo.deleteSettings(['hub', 'status'])) > 0;
  }

  /** Reaches the hub with the input over the saved settings, saving nothing. */
  async validate(principal: Principal, input: SettingsInput) {
    this.#requireAdmin(principal);
    const { connection } = await this.#merged(input);
    return this.#check(new HubClient(connection, this.#timeoutMs));
  }

  /** Whether the hub answers the token, and what it is: the hub's view of the token, its catalogue size. */
  async #check(client: HubClient) {
    const checkedAt = new Date().toISOString();
    try {
      const who = await client.call('GET', '/mpcs/v1/whoami');
      if (who.status !== 200) throw hubError('checking the token', who);
      const items = await client.get('/mpcs/v1/items?limit=1', 'reading the catalogue');
      return {
        valid: true,
        url: client.connection.url,
        hubSubject: String(who.body?.subject ?? ''),
        hubTokenName: String(who.body?.tokenName ?? ''),
        catalogueItems: Number(items?.total ?? 0),
        checkedAt,
      };
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      return { valid: false, url: client.connection.url, code: err.code, reason: err.message, checkedAt };
    }
  }

  /** `POST /api/v1/asset-hub/connect`: checks the saved hub now and keeps the result. */
  async connect() {
    const result = await this.#check(await this.required());
    await this.#repo.setSetting('status', JSON.stringify(result));
    return { connected: result.valid, ...result };
  }

  /** The saved hub and the result of its last check, for any role (no token shown). */
  async status() {
    const s = await this.#stored();
    if (!s) return { configured: false, connected: false };
    const last = await this.#repo.setting('status');
    const check = last ? (JSON.parse(last) as { valid: boolean }) : null;
    return { configured: true, url: s.url, connected: check?.valid ?? false, lastCheck: check };
  }
}
