/**
 * The fleet: companies, projects, devices (25-character manager identifiers), activation codes
 * (single use, expiring, scoped to a project), enrolment, and what the link reports (online,
 * last seen, edge version, host facts, metrics, connection history). Every read and change is
 * checked against the caller's roles over the company or project it touches. No HTTP here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import { hashSecret, randomSecret, secretMatches } from '../../kernel/crypto.js';
import type { ListPage, ListSpec } from '../../kernel/paging.js';
import { isGlobal, requireRole, roleAt, type Principal } from '../auth/index.js';
import {
  CODE_LIST,
  COMPANY_LIST,
  CONNECTION_LIST,
  DEVICE_LIST,
  PROJECT_LIST,
  type DeviceRow,
  type FleetRepository,
  type Visible,
} from './repository.js';
import {
  BRIDGE_TARGET_CACHE_SIZE,
  BRIDGE_TARGET_TTL_MS,
  BridgeTargets,
  type BridgeTarget,
} from './bridge-targets.js';
import type { SecretBox } from '../../kernel/secret-box.js';

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A 25-character manager identifier (lower-case letters and digits, ~129 bits). */
export function deviceIdentifier(): string {
  const bytes = randomBytes(25);
  let out = '';
  for (const b of bytes) out += ID_ALPHABET[b % ID_ALPHABET.length];
  return out;
}

/** An activation code people can type: `XXXX-XXXX-XXXX-XXXX` (~80 bits). */
function activationCode(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  const bytes = randomBytes(16);
  let out = '';
  for (let i = 0; i < 16; i++) {
    if (i > 0 && i % 4 === 0) out += '-';
    out += alphabet[bytes[i]! % alphabet.length];
  }
  return out;
}

export { CODE_LIST, COMPANY_LIST, CONNECTION_LIST, DEVICE_LIST, PROJECT_LIST };

export interface DeviceView {
  id: string;
  name: string;
  prettyName: string | null;
  projectId: string;
  companyId: string;
  online: boolean;
  lastSeen: string | null;
  edgeVersion: string | null;
  host: Record<string, unknown> | null;
  metrics: Record<string, unknown> | null;
  activatedAt: string;
}

type DeviceListRow = Omit<DeviceRow, 'link_secret_hash' | 'edge_credential'> & { company_id: string };

export function deviceView(row: DeviceListRow): DeviceView {
  return {
    id: row.id,
    name: row.name,
    prettyName: row.pretty_name,
    projectId: row.project_id,
    companyId: row.company_id,
    online: row.online === 1,
    lastSeen: row.last_seen === null ? null : new Date(row.last_seen).toISOString(),
    edgeVersion: row.edge_version,
    host: row.host_facts ? (JSON.parse(row.host_facts) as Record<string, unknown>) : null,
    metrics: row.metrics ? (JSON.parse(row.metrics) as Record<string, unknown>) : null,
    activatedAt: new Date(row.activated_at).toISOString(),
  };
}

/** One device as the alert rules read it (`FleetService.alertFacts`). */
export interface DeviceFacts {
  id: string;
  name: string;
  projectId: string;
  companyId: string;
  online: boolean;
  /** The last heartbeat, or when the link ended (epoch ms). */
  lastSeen: number | null;
  /** When it enrolled (a device never linked is offline since then). */
  activatedAt: number;
  metrics: Record<string, unknown>;
  /** Links opened since the time asked for. */
  linksSince: number;
}

/** What an edge sends to enrol (`POST /dm/activate`). */
export interface ActivationRequest {
  code: string;
  /** The credential the edge issued for the manager's bridged calls (a legacy API token of the edge). */
  edgeCredential: string;
  name?: string | undefined;
  version?: string | undefined;
  host?: Record<string, unknown> | undefined;
  /** The device record the edge had on this manager (proven by its link secret): retired. */
  replaces?: { deviceId: string; linkSecret: string } | undefined;
}

export interface Activation {
  deviceId: string;
  projectId: string;
  companyId: string;
  /** The device's secret on the link, shown once. */
  linkSecret: string;
}

/** The most activation codes created in one call. */
export const MAX_CODES_PER_CALL = 1000;

export { BRIDGE_TARGET_CACHE_SIZE, BRIDGE_TARGET_TTL_MS, type BridgeTarget };

export class FleetService {
  readonly #repo: FleetRepository;
  readonly #box: SecretBox;
  readonly #log: Logger;
  readonly #activationTtl: number;
  readonly #targets: BridgeTargets;

  constructor(
    repo: FleetRepository,
    box: SecretBox,
    logger: Logger,
    options: { activationTtl: number; bridgeTargetCacheSize?: number },
  ) {
    this.#repo = repo;
    this.#box = box;
    this.#log = logger;
    this.#activationTtl = options.activationTtl;
    this.#targets = new BridgeTargets(async (deviceId) => {
      const row = await this.#repo.getDevice(deviceId);
      if (!row) return null;
      return {
        deviceId: row.id,
        projectId: row.project_id,
        companyId: row.company_id,
        credential: this.#box.open(row.edge_credential),
      };
    }, options.bridgeTargetCacheSize ?? BRIDGE_TARGET_CACHE_SIZE);
  }

  // --- companies and projects -----------------------------------------------------------------

  async createCompany(principal: Principal, name: string) {
    requireRole(principal, {}, 'admin');
    validateName(name, 'companyName');
    const row = { id: randomUUID(), name, created_at: Date.now() };
    // The name checked and the company written in one transaction.
    await this.#repo.transaction(async (repo) => {
      if (await repo.getCompanyByName(name)) throw conflict(`company "${name}" exists`);
      await repo.insertCompany(row);
    });
    this.#log.info({ id: row.id, name }, 'company created');
    return { id: row.id, companyName: name, createdAt: new Date(row.created_at).toISOString() };
  }

  async listCompanies(principal: Principal, spec: ListSpec) {
    const page = await this.#repo.listCompanies(spec, visibleTo(principal));
    return {
      items: page.items.map((c) => ({
        id: c.id,
        companyName: c.name,
        totalNumOfProjects: Number(c.projects),
        totalNumOfDevices: Number(c.devices),
        createdAt: new Date(c.created_at).toISOString(),
      })),
      total: page.total,
    };
  }

  /** The company named by id or name, when `principal` may read it; 404 otherwise. */
  company(principal: Principal, ref: { companyId?: string; companyName?: string }) {
    return this.#company(principal, ref);
  }

  /** The company named by id or name, checked for `principal`'s read access. */
  async #company(
    principal: Principal,
    ref: { companyId?: string | undefined; companyName?: string | undefined },
  ) {
    const row = ref.companyId
      ? await this.#repo.getCompany(ref.companyId)
      : ref.companyName
        ? await this.#repo.getCompanyByName(ref.companyName)
        : undefined;
    if (!ref.companyId && !ref.companyName) throw badRequest('companyId or companyName is required');
    if (!row || !(await this.#readsCompany(principal, row.id))) {
      throw notFound(`company "${ref.companyId ?? ref.companyName}" not found`);
    }
    return row;
  }

  /** A role on the company, or on one of its projects. */
  async #readsCompany(principal: Principal, companyId: string): Promise<boolean> {
    if (roleAt(principal, { companyId }) !== null) return true;
    return this.#repo.hasProjectIn(companyId, scopeIds(principal).projectIds);
  }

  async createProject(
    principal: Principal,
    ref: { companyId?: string | undefined; companyName?: string | undefined },
    name: string,
  ) {
    validateName(name, 'name');
    const company = await this.#company(principal, ref);
    requireRole(principal, { companyId: company.id }, 'admin');
    const row = { id: randomUUID(), company_id: company.id, name, created_at: Date.now() };
    try {
      await this.#repo.insertProject(row);
    } catch (err) {
      if (/unique|duplicate/i.test((err as Error).message)) {
        throw conflict(`project "${name}" exists in company "${company.name}"`);
      }
      throw err;
    }
    this.#log.info({ id: row.id, name, companyId: company.id }, 'project created');
    return {
      id: row.id,
      name,
      companyId: company.id,
      companyName: company.name,
      totalNumOfDevices: 0,
      createdAt: new Date(row.created_at).toISOString(),
    };
  }

  async listProjects(
    principal: Principal,
    ref: { companyId?: string | undefined; companyName?: string | undefined },
    spec: ListSpec,
  ) {
    const companyId = ref.companyId || ref.companyName ? (await this.#company(principal, ref)).id : undefined;
    const page = await this.#repo.listProjects(spec, companyId, visibleTo(principal));
    return {
      items: page.items.map((p) => ({
        id: p.id,
        name: p.name,
        companyId: p.company_id,
        companyName: p.company_name,
        totalNumOfDevices: Number(p.devices),
        createdAt: new Date(p.created_at).toISOString(),
      })),
      total: page.total,
    };
  }

  /** The project, when `principal` may read it; 404 otherwise (existence is not disclosed). */
  async project(principal: Principal, projectId: string) {
    const p = await this.#repo.getProject(projectId);
    if (!p || roleAt(principal, { projectId: p.id, companyId: p.company_id }) === null) {
      throw notFound(`project "${projectId}" not found`);
    }
    return p;
  }

  // --- devices ----------------------------------------------------------------------------------

  async listDevices(principal: Principal, spec: ListSpec, projectId?: string): Promise<ListPage<DeviceView>> {
    if (projectId) await this.project(principal, projectId);
    const page = await this.#repo.listDevices(spec, projectId || undefined, visibleTo(principal));
    return { items: page.items.map(deviceView), total: page.total };
  }

  /** The device, when `principal` may read it (and it is in `projectId` when given); else 404. */
  async device(principal: Principal, deviceId: string, projectId?: string): Promise<DeviceView> {
    const row = await this.#repo.getDevice(deviceId);
    if (
      !row ||
      (projectId !== undefined && row.project_id !== projectId) ||
      roleAt(principal, { projectId: row.project_id, companyId: row.company_id }) === null
    ) {
      throw notFound(`device "${deviceId}" not found${projectId ? ` in project "${projectId}"` : ''}`);
    }
    return deviceView(row);
  }

  async deleteDevice(principal: Principal, deviceId: string): Promise<void> {
    const d = await this.device(principal, deviceId);
    requireRole(principal, d, 'admin');
    this.#targets.forget(deviceId);
    await this.#repo.deleteDevice(deviceId);
    this.#targets.forget(deviceId);
    this.#log.info({ deviceId }, 'device removed');
  }

  async prettyNames(principal: Principal, projectId: string) {
    await this.project(principal, projectId);
    const rows = await this.#repo.devicesOf(projectId);
    return {
      items: rows.map((r) => ({ deviceId: r.id, name: r.name, prettyName: r.pretty_name ?? r.name })),
      total: rows.length,
    };
  }

  async setPrettyNames(
    principal: Principal,
    projectId: string,
    items: { deviceId: string; prettyName: string | null }[],
  ) {
    const p = await this.project(principal, projectId);
    requireRole(principal, { projectId, companyId: p.company_id }, 'operator');
    const missing: string[] = [];
    let updated = 0;
    for (const item of items) if (item.prettyName !== null) validateName(item.prettyName, 'prettyName');
    for (const item of items) {
      if (await this.#repo.setPrettyName(projectId, item.deviceId, item.prettyName)) updated++;
      else missing.push(item.deviceId);
    }
    return { updated, notFound: missing };
  }

  /** Devices of a project by a metric, highest first (`cpu` percent or `memory` bytes). */
  async topMetrics(principal: Principal, projectId: string, metric: 'cpu' | 'memory', limit: number) {
    await this.project(principal, projectId);
    const rows = await this.#repo.topDevices(projectId, metric, limit);
    return {
      metric,
      items: rows.map((r) => ({
        deviceId: r.id,
        name: r.name,
        prettyName: r.pretty_name ?? r.name,
        online: r.online === 1,
        value: Number(metric === 'cpu' ? r.cpu : r.memory),
        metrics: r.metrics ? (JSON.parse(r.metrics) as Record<string, unknown>) : null,
      })),
    };
  }

  async connections(principal: Principal, deviceId: string, spec: ListSpec) {
    await this.device(principal, deviceId);
    const page = await this.#repo.listConnections(spec, deviceId);
    return {
      items: page.items.map((c) => ({
        id: c.id,
        connectedAt: new Date(c.connected_at).toISOString(),
        disconnectedAt: c.disconnected_at === null ? null : new Date(c.disconnected_at).toISOString(),
        remoteAddress: c.remote_address,
        reason: c.reason,
      })),
      total: page.total,
    };
  }

  counts() {
    return this.#repo.deviceCounts();
  }

  // --- activation -----------------------------------------------------------------------------

  async createCodes(
    principal: Principal,
    projectId: string,
    options: { count: number; ttlSeconds?: number | undefined; deviceName?: string | undefined },
  ) {
    const p = await this.project(principal, projectId);
    requireRole(principal, { projectId, companyId: p.company_id }, 'operator');
    if (!(options.count >= 1 && options.count <= MAX_CODES_PER_CALL)) {
      throw badRequest(`count must be from 1 to ${MAX_CODES_PER_CALL}`);
    }
    const ttl = options.ttlSeconds ?? this.#activationTtl;
    const now = Date.now();
    const made = Array.from({ length: options.count }, () => ({ code: activationCode(), id: randomUUID() }));
    await this.#repo.insertCodes(
      made.map((m) => ({
        id: m.id,
        code_hash: hashSecret(m.code),
        project_id: projectId,
        device_name: options.deviceName ?? null,
        expires_at: now + ttl * 1000,
        used_at: null,
        device_id: null,
        created_by: principal.subject,
        created_at: now,
      })),
    );
    this.#log.info({ projectId, count: options.count, ttl }, 'activation codes created');
    return made.map((m) => ({
      id: m.id,
      code: m.code,
      projectId,
      deviceName: options.deviceName ?? null,
      expiresAt: new Date(now + ttl * 1000).toISOString(),
    }));
  }

  /** Activation status of the codes (and so the devices) of the caller's projects. */
  async deviceStatus(principal: Principal, spec: ListSpec, projectId?: string) {
    if (projectId) await this.project(principal, projectId);
    const now = Date.now();
    const page = await this.#repo.listCodes(spec, projectId || undefined, visibleTo(principal));
    return {
      items: page.items.map((a) => ({
        id: a.id,
        projectId: a.project_id,
        deviceName: a.device_name,
        status: a.used_at !== null ? 'ACTIVATED' : a.expires_at <= now ? 'EXPIRED' : 'PENDING',
        deviceId: a.device_id,
        expiresAt: new Date(a.expires_at).toISOString(),
        activatedAt: a.used_at === null ? null : new Date(a.used_at).toISOString(),
        createdAt: new Date(a.created_at).toISOString(),
      })),
      total: page.total,
    };
  }

  /** Enrols an edge with an activation code: single use, unexpired; answers its link identity. */
  async activate(req: ActivationRequest): Promise<Activation> {
    const code = await this.#repo.getCodeByHash(hashSecret(req.code.trim().toUpperCase()));
    if (!code) throw new AppError(ERRORS.invalidActivationCode, 'the activation code is not valid');
    if (code.used_at !== null) {
      throw new AppError(ERRORS.activationCodeUsed, 'the activation code was already used');
    }
    const now = Date.now();
    if (code.expires_at <= now) {
      throw new AppError(ERRORS.activationCodeExpired, 'the activation code has expired');
    }
    const project = await this.#repo.getProject(code.project_id);
    if (!project) throw new AppError(ERRORS.invalidActivationCode, 'the activation code is not valid');
    const linkSecret = randomSecret('mwl');
    const id = deviceIdentifier();
    const name = (code.device_name ?? req.name ?? `edge-${id.slice(0, 6)}`).slice(0, 200);
    const ok = await this.#repo.activate(code.id, {
      id,
      project_id: code.project_id,
      name,
      pretty_name: null,
      online: 0,
      last_seen: null,
      edge_version: req.version ?? null,
      host_facts: req.host ? JSON.stringify(req.host) : null,
      metrics: null,
      cpu: null,
      memory: null,
      link_secret_hash: hashSecret(linkSecret),
      edge_credential: this.#box.seal(req.edgeCredential),
      activated_at: now,
    });
    if (!ok) throw new AppError(ERRORS.activationCodeUsed, 'the activation code was already used');
    this.#targets.forget(id);
    this.#log.info({ deviceId: id, projectId: code.project_id, name }, 'device activated');
    // An edge that moved: its old record is retired (removed), not left offline for ever.
    if (req.replaces && (await this.verifyLink(req.replaces.deviceId, req.replaces.linkSecret)))
      await this.retireMoved(req.replaces.deviceId, `the edge enrolled again as device ${id}`);
    return { deviceId: id, projectId: code.project_id, companyId: project.company_id, linkSecret };
  }

  // --- what the link needs ----------------------------------------------------------------------

  /**
   * Retires the record of a device whose edge enrolled again (moved to another record of this
   * manager or to another manager): removed, not left offline for ever. Only on the device's own
   * proof (its link secret at activation, or its authenticated link closing as a move).
   */
  async retireMoved(deviceId: string, why: string): Promise<void> {
    this.#targets.forget(deviceId);
    if (await this.#repo.deleteDevice(deviceId))
      this.#log.info({ deviceId, why }, 'device retired: the edge moved');
    this.#targets.forget(deviceId);
  }

  /** The device of a link credential, or null. */
  async verifyLink(deviceId: string, secret: string): Promise<{ id: string; projectId: string } | null> {
    return (await this.checkLink(deviceId, secret)).device;
  }

  /**
   * A link sign-in: the device when the secret is its own; else null, and whether the claimed
   * device exists (a wrong secret for a real device is recorded in the audit trail; an unknown id
   * is an anonymous refusal).
   */
  async checkLink(
    deviceId: string,
    secret: string,
  ): Promise<{ device: { id: string; projectId: string } | null; known: boolean }> {
    if (!/^[a-z0-9]{25}$/.test(deviceId)) return { device: null, known: false };
    const row = await this.#repo.getDevice(deviceId);
    if (!row) return { device: null, known: false };
    if (!secretMatches(secret, row.link_secret_hash)) return { device: null, known: true };
    return { device: { id: row.id, projectId: row.project_id }, known: true };
  }

  /** The credential the edge issued for bridged calls, decrypted. */
  async edgeCredential(deviceId: string): Promise<string | null> {
    return (await this.#targets.get(deviceId))?.credential ?? null;
  }

  /**
   * The device's bridge target when `principal` may read it (and it is in `projectId` when
   * given); else 404, as `device()`. Served from memory (see `BridgeTarget`).
   */
  async bridgeTarget(principal: Principal, deviceId: string, projectId?: string): Promise<BridgeTarget> {
    const t = await this.#targets.get(deviceId);
    if (
      !t ||
      (projectId !== undefined && t.projectId !== projectId) ||
      roleAt(principal, { projectId: t.projectId, companyId: t.companyId }) === null
    ) {
      throw notFound(`device "${deviceId}" not found${projectId ? ` in project "${projectId}"` : ''}`);
    }
    return t;
  }

  /** How many bridge targets are held in memory (for tests). */
  get bridgeTargetsCached(): number {
    return this.#targets.size;
  }

  /** The device's bridge target when in memory and fresh (no read; the bridge's fast path). */
  cachedBridgeTarget = (deviceId: string): BridgeTarget | undefined => this.#targets.peek(deviceId);

  async linkUp(deviceId: string, remote: string | null, facts: { version: string; host: string }) {
    const now = Date.now();
    const id = randomUUID();
    await this.#repo.setOnline(deviceId, true, now, facts);
    await this.#repo.openConnection({
      id,
      device_id: deviceId,
      connected_at: now,
      disconnected_at: null,
      remote_address: remote,
      reason: null,
    });
    return id;
  }

  async linkDown(deviceId: string, connectionId: string, reason: string, stillOnline: boolean) {
    const now = Date.now();
    if (!stillOnline) await this.#repo.setOnline(deviceId, false, now);
    await this.#repo.closeConnection(connectionId, now, reason);
  }

  recordHeartbeats(beats: { id: string; at: number; metrics: Record<string, unknown> }[]) {
    return this.#repo.recordHeartbeats(
      beats.map((b) => ({
        id: b.id,
        at: b.at,
        metrics: JSON.stringify(b.metrics),
        cpu: typeof b.metrics.cpuPercent === 'number' ? Math.round(b.metrics.cpuPercent) : null,
        memory: typeof b.metrics.memoryBytes === 'number' ? Math.round(b.metrics.memoryBytes) : null,
      })),
    );
  }

  /**
   * The fleet as the alert rules read it: each device with its project and company, online flag,
   * last heartbeat (or the moment it went offline), last metrics, and the links it opened since
   * `since`.
   */
  async alertFacts(since: number): Promise<DeviceFacts[]> {
    const { devices, links } = await this.#repo.alertFacts(since);
    return devices.map((d) => ({
      id: d.id,
      name: d.name,
      projectId: d.project_id,
      companyId: d.company_id,
      online: d.online === 1,
      lastSeen: d.last_seen === null ? null : Number(d.last_seen),
      activatedAt: Number(d.activated_at),
      metrics: d.metrics ? (JSON.parse(d.metrics) as Record<string, unknown>) : {},
      linksSince: links.get(d.id) ?? 0,
    }));
  }

  /** Marks every device offline (the manager starts), but those in `keep` (linked to another live manager process). */
  resetOnline(keep: string[] = []) {
    return this.#repo.resetOnline(Date.now(), keep);
  }
}

/** What `principal` may see of the fleet: null for a global role (everything). */
function visibleTo(principal: Principal): Visible {
  return isGlobal(principal, 'viewer') ? null : scopeIds(principal);
}

function scopeIds(principal: Principal) {
  return {
    companyIds: principal.grants.filter((g) => g.companyId && !g.projectId).map((g) => g.companyId!),
    projectIds: principal.grants.filter((g) => g.projectId).map((g) => g.projectId!),
  };
}

function validateName(name: string, field: string): void {
  if (name.trim() === '' || name.length > 200) throw badRequest(`${field} must have 1 to 200 characters`);
}
