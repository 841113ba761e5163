/**
 * The bridge's targets in memory. A target is what the bridge needs of a device on every call:
 * its scope (for the caller's role) and the edge's credential, decrypted. Kept in memory so a
 * bridged call costs no database read and no decrypt; bounded, short-lived (a change made by another process, e.g. the CLI on the same data
 * directory, is seen within `BRIDGE_TARGET_TTL_MS`), and dropped at once when this process
 * removes or re-enrols the device.
 */
export interface BridgeTarget {
  deviceId: string;
  projectId: string;
  companyId: string;
  /** The credential the edge issued for bridged calls. */
  credential: string;
}
export const BRIDGE_TARGET_TTL_MS = 5000;
export const BRIDGE_TARGET_CACHE_SIZE = 10_000;

/** Bridge targets by device id, bounded and short-lived (see `BridgeTarget`). */
export class BridgeTargets {
  /** Oldest first (a Map iterates in insertion order). */
  readonly #targets = new Map<string, { target: BridgeTarget; until: number }>();
  /** Bumped by every invalidation: a read that started before one is not cached. */
  #generation = 0;
  readonly #max: number;
  readonly #load: (deviceId: string) => Promise<BridgeTarget | null>;

  constructor(load: (deviceId: string) => Promise<BridgeTarget | null>, max: number) {
    this.#load = load;
    this.#max = Math.max(1, max);
  }

  /** The device's target: from memory while fresh, else loaded (null: no such device). */
  async get(deviceId: string): Promise<BridgeTarget | null> {
    const now = Date.now();
    const hit = this.#targets.get(deviceId);
    if (hit && hit.until > now) return hit.target;
    this.#targets.delete(deviceId);
    const generation = this.#generation;
    const target = await this.#load(deviceId);
    if (!target || generation !== this.#generation) return target;
    if (this.#targets.size >= this.#max) this.#targets.delete(this.#targets.keys().next().value!);
    this.#targets.set(deviceId, { target, until: now + BRIDGE_TARGET_TTL_MS });
    return target;
  }

  /** The device's target when it is in memory and fresh (no load); else undefined. */
  peek(deviceId: string): BridgeTarget | undefined {
    const hit = this.#targets.get(deviceId);
    return hit && hit.until > Date.now() ? hit.target : undefined;
  }

  /** Drops the device's target now (removed or enrolled again by this process). */
  forget(deviceId: string): void {
    this.#generation++;
    this.#targets.delete(deviceId);
  }

  get size(): number {
    return this.#targets.size;
  }
}
