/**
 * High availability of edges, the manager's side: a pair of enrolled edges of one project,
 * primary and secondary, and the lease of the active role with its epoch (`mgr_ha_pair`).
 *
 * The edges ask for their role over the link (`lease`, answered `ha`; kernel/link/protocol.ts).
 * The active's ask renews its lease (`renewed_at`); the standby's ask takes the role over, with
 * epoch + 1, once the pair is enabled and the active has not renewed for the pair's timeout (its
 * link was lost, or it died). The timeout is longer than the lease an edge is granted, and an edge
 * polls only until its lease runs out unless renewed (dm/ha.ts on the edge): so when the standby
 * is granted the role, the former active has already stopped, even if it is still running on the
 * far side of a partition. Everything is in the database: a manager restart keeps the lease.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import type { HaRole, HaRoleMessage } from '../../kernel/link/protocol.js';
import { requireRole, type Principal } from '../auth/index.js';
import type { BridgeService, EdgeAnswer } from '../bridge/index.js';
import { principalActor } from '../bridge/index.js';
import type { FleetService } from '../fleet/index.js';
import type { LinkHub } from '../link/index.js';
import type { HaPairRow, HaRepository } from './repository.js';

export interface HaConfigureRequest {
  secondaryDeviceId: string;
  timeoutSeconds?: number | undefined;
  leaseSeconds?: number | undefined;
  interface?: string | undefined;
}

export interface HaView {
  deviceId: string;
  configured: boolean;
  /** This device's role: `active`, `standby`, or `none` when it is not paired. */
  role: HaRole;
  pairId: string | null;
  enabled: boolean;
  primaryDeviceId: string | null;
  secondaryDeviceId: string | null;
  activeDeviceId: string | null;
  standbyDeviceId: string | null;
  epoch: number;
  timeoutSeconds: number | null;
  leaseSeconds: number | null;
  /** When the active edge last renewed its lease (ISO 8601). */
  renewedAt: string | null;
  interface: string | null;
  online: { primary: boolean; secondary: boolean } | null;
  createdAt: string | null;
  updatedAt: string | null;
}

export class HaService {
  readonly #repo: HaRepository;
  readonly #fleet: FleetService;
  readonly #hub: LinkHub;
  readonly #bridge: BridgeService;
  readonly #log: Logger;
  readonly #defaultTimeoutMs: number;
  /** Devices whose lease request is being answered. */
  readonly #inFlight = new Set<string>();

  constructor(
    repo: HaRepository,
    fleet: FleetService,
    hub: LinkHub,
    bridge: BridgeService,
    logger: Logger,
    defaultTimeoutMs: number,
  ) {
    this.#repo = repo;
    this.#fleet = fleet;
    this.#hub = hub;
    this.#bridge = bridge;
    this.#log = logger;
    this.#defaultTimeoutMs = defaultTimeoutMs;
    hub.onLease((deviceId, seq) => {
      // One request per device at a time (bounded by the links): more are dropped, the edge asks again.
      if (this.#inFlight.has(deviceId)) return;
      this.#inFlight.add(deviceId);
      this.lease(deviceId, seq)
        .catch((err: unknown) =>
          this.#log.warn({ err, deviceId }, 'high availability: a lease request failed'),
        )
        .finally(() => this.#inFlight.delete(deviceId));
    });
    // An edge paired while it was offline hears of its pair when it links.
    hub.onLinked((deviceId) => {
      this.#repo
        .pairOf(deviceId)
        .then((pair) => pair && this.#tell(pair, deviceId))
        .catch((err: unknown) =>
          this.#log.warn({ err, deviceId }, 'high availability: telling the role failed'),
        );
    });
  }

  async get(principal: Principal, deviceId: string): Promise<HaView> {
    const d = await this.#fleet.device(principal, deviceId);
    return this.#view(d.id, await this.#repo.pairOf(d.id));
  }

  /** The device's network interfaces, read from its edge (`/dm/ifconfig`) over the link. */
  async interfaces(principal: Principal, deviceId: string, requestId: string): Promise<EdgeAnswer> {
    const d = await this.#fleet.device(principal, deviceId);
    return this.#bridge.json(
      d.id,
      'GET',
      '/dm/ifconfig',
      undefined,
      undefined,
      principalActor(principal, d, requestId),
    );
  }

  /**
   * Pairs `deviceId` (primary, active first) with `secondaryDeviceId` (standby), or changes the
   * timeouts of its pair. A new pair is disabled (no failover yet) but in force: the standby
   * stops polling as soon as it hears of it.
   */
  async configure(principal: Principal, deviceId: string, req: HaConfigureRequest): Promise<HaView> {
    const d = await this.#fleet.device(principal, deviceId);
    requireRole(principal, d, 'admin');
    const timeoutMs =
      req.timeoutSeconds !== undefined ? Math.round(req.timeoutSeconds * 1000) : this.#defaultTimeoutMs;
    const leaseMs =
      req.leaseSeconds !== undefined ? Math.round(req.leaseSeconds * 1000) : Math.floor(timeoutMs / 2);
    if (leaseMs >= timeoutMs)
      throw badRequest(
        `leaseSeconds (${leaseMs / 1000}) must be shorter than timeoutSeconds (${timeoutMs / 1000}): the standby may only take over once the active's lease has run out`,
      );
    if (leaseMs < 500) throw badRequest(`leaseSeconds must be at least 0.5 (got ${leaseMs / 1000})`);
    const now = Date.now();
    const existing = await this.#repo.pairOf(d.id);
    if (existing) {
      const other =
        existing.primary_device_id === d.id ? existing.secondary_device_id : existing.primary_device_id;
      if (other !== req.secondaryDeviceId)
        throw conflict(
          `device "${d.id}" is already paired with "${other}"; DELETE /api/v1/device/${d.id}/ha first to pair it with another`,
        );
      await this.#repo.update(existing.id, {
        timeout_ms: timeoutMs,
        lease_ms: leaseMs,
        interface: req.interface ?? existing.interface,
        updated_at: now,
      });
      const pair = (await this.#repo.pairOf(d.id))!;
      this.#tell(pair);
      return this.#view(d.id, pair);
    }
    if (req.secondaryDeviceId === d.id)
      throw badRequest('secondaryDeviceId must be another device than the primary');
    const s = await this.#fleet.device(principal, req.secondaryDeviceId);
    requireRole(principal, s, 'admin');
    if (s.projectId !== d.projectId)
      throw badRequest(
        `device "${s.id}" is in project "${s.projectId}", device "${d.id}" in "${d.projectId}": a pair is two devices of one project`,
      );
    // The standby must hear of the pair at once: its link must be here, or it must be offline
    // (it hears when it links). A link another manager process holds would not hear it.
    for (const x of [d, s])
      if (x.online && !this.#hub.isOnline(x.id))
        throw conflict(
          `device "${x.id}" is linked to another manager process, which would not tell it of the pair; configure the pair through that process, or when the device links here`,
        );
    const taken = await this.#repo.pairsOf([s.id]);
    if (taken.length > 0) throw conflict(`device "${s.id}" is already in a high-availability pair`);
    const pair: HaPairRow = {
      id: randomUUID(),
      project_id: d.projectId,
      primary_device_id: d.id,
      secondary_device_id: s.id,
      enabled: 0,
      active_device_id: d.id,
      epoch: 1,
      timeout_ms: timeoutMs,
      lease_ms: leaseMs,
      // The primary has a timeout's time to claim the lease before a standby could take it.
      renewed_at: now,
      interface: req.interface ?? null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.#repo.insert(pair);
    } catch {
      throw conflict(`device "${d.id}" or "${s.id}" is already in a high-availability pair`);
    }
    this.#log.info({ pairId: pair.id, primary: d.id, secondary: s.id }, 'high availability pair configured');
    this.#tell(pair);
    return this.#view(d.id, pair);
  }

  /** Turns automatic failover on (`true`) or off; the lease stays where it is. */
  async setEnabled(principal: Principal, deviceId: string, enabled: boolean): Promise<HaView> {
    const d = await this.#fleet.device(principal, deviceId);
    requireRole(principal, d, 'admin');
    const pair = await this.#repo.pairOf(d.id);
    if (!pair) throw notFound(`device "${d.id}" is not in a high-availability pair; configure one first`);
    await this.#repo.setEnabled(pair.id, enabled, Date.now());
    this.#log.info({ pairId: pair.id, enabled }, 'high availability failover switched');
    return this.#view(d.id, await this.#repo.pairOf(d.id));
  }

  /** Removes the pair: both edges are told they are no longer paired, and then both poll. */
  async remove(principal: Principal, deviceId: string): Promise<void> {
    const d = await this.#fleet.device(principal, deviceId);
    requireRole(principal, d, 'admin');
    const pair = await this.#repo.pairOf(d.id);
    if (!pair) throw notFound(`device "${d.id}" is not in a high-availability pair`);
    await this.#repo.delete(pair.id);
    for (const id of [pair.primary_device_id, pair.secondary_device_id]) this.#send(id, null, 'none', 0, 0);
    this.#log.info({ pairId: pair.id }, 'high availability pair removed');
  }

  /** An edge's `lease` request: renew the active, hand the role over to a standby when due. */
  async lease(deviceId: string, seq: number): Promise<void> {
    const pair = await this.#repo.pairOf(deviceId);
    if (!pair) return this.#send(deviceId, null, 'none', 0, 0, seq);
    const now = Date.now();
    if (pair.active_device_id === deviceId) {
      if (await this.#repo.renew(pair.id, pair.epoch, deviceId, now))
        return this.#send(deviceId, pair.id, 'active', pair.epoch, pair.lease_ms, seq);
      const moved = await this.#repo.pairOf(deviceId);
      if (!moved) return this.#send(deviceId, null, 'none', 0, 0, seq);
      return this.#send(deviceId, moved.id, this.#roleOf(moved, deviceId), moved.epoch, moved.lease_ms, seq);
    }
    if (pair.enabled === 1 && now - pair.renewed_at > pair.timeout_ms) {
      if (await this.#repo.takeOver(pair.id, pair.epoch, deviceId, now, now - pair.timeout_ms)) {
        this.#log.warn(
          { pairId: pair.id, from: pair.active_device_id, to: deviceId, epoch: pair.epoch + 1 },
          'high availability: the active edge did not renew its lease in time; the standby takes over',
        );
        this.#send(pair.active_device_id, pair.id, 'standby', pair.epoch + 1, pair.lease_ms);
        return this.#send(deviceId, pair.id, 'active', pair.epoch + 1, pair.lease_ms, seq);
      }
      const now2 = await this.#repo.pairOf(deviceId);
      if (!now2) return this.#send(deviceId, null, 'none', 0, 0, seq);
      return this.#send(deviceId, now2.id, this.#roleOf(now2, deviceId), now2.epoch, now2.lease_ms, seq);
    }
    this.#send(deviceId, pair.id, 'standby', pair.epoch, pair.lease_ms, seq);
  }

  #roleOf(pair: HaPairRow, deviceId: string): HaRole {
    return pair.active_device_id === deviceId ? 'active' : 'standby';
  }

  /** News of the pair to both edges (no grant: the active asks for its lease at once). */
  #tell(pair: HaPairRow, only?: string): void {
    for (const id of [pair.primary_device_id, pair.secondary_device_id])
      if (!only || only === id) this.#send(id, pair.id, this.#roleOf(pair, id), pair.epoch, pair.lease_ms);
  }

  #send(deviceId: string, pairId: string | null, role: HaRole, epoch: number, leaseMs: number, seq?: number) {
    const m: HaRoleMessage = { t: 'ha', pairId, role, epoch, leaseMs, ...(seq === undefined ? {} : { seq }) };
    this.#hub.send(deviceId, m);
  }

  #view(deviceId: string, pair: HaPairRow | undefined): HaView {
    const iso = (ms: number) => new Date(ms).toISOString();
    if (!pair)
      return {
        deviceId,
        configured: false,
        role: 'none',
        pairId: null,
        enabled: false,
        primaryDeviceId: null,
        secondaryDeviceId: null,
        activeDeviceId: null,
        standbyDeviceId: null,
        epoch: 0,
        timeoutSeconds: null,
        leaseSeconds: null,
        renewedAt: null,
        interface: null,
        online: null,
        createdAt: null,
        updatedAt: null,
      };
    const standby =
      pair.active_device_id === pair.primary_device_id ? pair.secondary_device_id : pair.primary_device_id;
    return {
      deviceId,
      configured: true,
      role: this.#roleOf(pair, deviceId),
      pairId: pair.id,
      enabled: pair.enabled === 1,
      primaryDeviceId: pair.primary_device_id,
      secondaryDeviceId: pair.secondary_device_id,
      activeDeviceId: pair.active_device_id,
      standbyDeviceId: standby,
      epoch: pair.epoch,
      timeoutSeconds: pair.timeout_ms / 1000,
      leaseSeconds: pair.lease_ms / 1000,
      renewedAt: iso(pair.renewed_at),
      interface: pair.interface,
      online: {
        primary: this.#hub.isOnline(pair.primary_device_id),
        secondary: this.#hub.isOnline(pair.secondary_device_id),
      },
      createdAt: iso(pair.created_at),
      updatedAt: iso(pair.updated_at),
    };
  }
}
