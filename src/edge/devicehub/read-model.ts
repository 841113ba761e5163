/**
 * The DeviceHub's read model: devices and tags as domain configurations (camelCase), change
 * events, and the slot where `GetTagStatus` finds the tag runtime state. What other modules (the
 * acquisition engine) get of the DeviceHub; the tables stay behind it.
 */
import type { Tx } from '../../kernel/db/index.js';
import type { DevicehubRepository } from './repository.js';
import { deviceConfig, tagConfig } from './rows.js';
import type {
  DeviceConfig,
  DevicehubChange,
  DevicehubReadModel,
  TagConfig,
  TagStatusSource,
} from './types.js';

export class DevicehubReader implements DevicehubReadModel {
  readonly #repo: DevicehubRepository;
  readonly #listeners = new Set<(change: DevicehubChange) => void>();
  #tagStatus: TagStatusSource | null = null;

  constructor(repo: DevicehubRepository) {
    this.#repo = repo;
  }

  async devices(ids?: readonly string[]): Promise<DeviceConfig[]> {
    return (await this.#repo.getDevices(ids)).map(deviceConfig);
  }

  async tagsOfDevices(deviceIds: readonly string[]): Promise<TagConfig[]> {
    if (deviceIds.length === 0) return [];
    return (await this.#repo.registersWithDeviceOf(deviceIds)).map(tagConfig);
  }

  async tags(ids: readonly string[]): Promise<TagConfig[]> {
    if (ids.length === 0) return [];
    return (await this.#repo.getRegistersByIds(ids)).map(tagConfig);
  }

  /** Reads through `trx` (no change events: those follow the commit, from this reader). */
  inTransaction(trx: Tx): DevicehubReadModel {
    return new DevicehubReader(this.#repo.inTransaction(trx));
  }

  onChange(listener: (change: DevicehubChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  setTagStatusSource(source: TagStatusSource | null): void {
    this.#tagStatus = source;
  }

  /** Where tag runtime state is read, if a reader set one. */
  get tagStatusSource(): TagStatusSource | null {
    return this.#tagStatus;
  }

  /** Tells the listeners about a committed change (nothing when it touched nothing). */
  emit(change: DevicehubChange): void {
    if (change.devices.length === 0 && change.tags.length === 0) return;
    for (const l of this.#listeners) l(change);
  }
}
