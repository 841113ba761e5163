/**
 * The high-availability pairs and their leases (`mgr_ha_pair`). A lease change is one
 * conditional UPDATE (compare-and-set on the epoch), so that manager processes sharing a
 * PostgreSQL database never grant the role twice.
 */
import type { Database, Kysely } from '../../kernel/db/index.js';

export interface HaTables {
  mgr_ha_pair: {
    id: string;
    project_id: string;
    primary_device_id: string;
    secondary_device_id: string;
    enabled: number;
    active_device_id: string;
    epoch: number;
    timeout_ms: number;
    lease_ms: number;
    renewed_at: number;
    interface: string | null;
    created_at: number;
    updated_at: number;
  };
}

export type HaPairRow = HaTables['mgr_ha_pair'];

const num = (row: HaPairRow): HaPairRow => ({
  ...row,
  enabled: Number(row.enabled),
  epoch: Number(row.epoch),
  timeout_ms: Number(row.timeout_ms),
  lease_ms: Number(row.lease_ms),
  renewed_at: Number(row.renewed_at),
  created_at: Number(row.created_at),
  updated_at: Number(row.updated_at),
});

export class HaRepository {
  readonly #db: Kysely<HaTables>;

  constructor(database: Database) {
    this.#db = database.typed<HaTables>();
  }

  /** The pair `deviceId` is in (as primary or secondary), if any. */
  async pairOf(deviceId: string): Promise<HaPairRow | undefined> {
    const row = await this.#db
      .selectFrom('mgr_ha_pair')
      .selectAll()
      .where((eb) =>
        eb.or([eb('primary_device_id', '=', deviceId), eb('secondary_device_id', '=', deviceId)]),
      )
      .executeTakeFirst();
    return row ? num(row) : undefined;
  }

  /** Pairs of which any of `deviceIds` is a member. */
  async pairsOf(deviceIds: string[]): Promise<HaPairRow[]> {
    if (deviceIds.length === 0) return [];
    const rows = await this.#db
      .selectFrom('mgr_ha_pair')
      .selectAll()
      .where((eb) =>
        eb.or([eb('primary_device_id', 'in', deviceIds), eb('secondary_device_id', 'in', deviceIds)]),
      )
      .execute();
    return rows.map(num);
  }

  async insert(row: HaPairRow): Promise<void> {
    await this.#db.insertInto('mgr_ha_pair').values(row).execute();
  }

  /** The timeouts and interface of a pair. */
  async update(
    id: string,
    change: Pick<HaPairRow, 'timeout_ms' | 'lease_ms' | 'interface' | 'updated_at'>,
  ): Promise<void> {
    await this.#db.updateTable('mgr_ha_pair').set(change).where('id', '=', id).execute();
  }

  async setEnabled(id: string, enabled: boolean, at: number): Promise<void> {
    await this.#db
      .updateTable('mgr_ha_pair')
      .set({ enabled: enabled ? 1 : 0, updated_at: at })
      .where('id', '=', id)
      .execute();
  }

  async delete(id: string): Promise<void> {
    await this.#db.deleteFrom('mgr_ha_pair').where('id', '=', id).execute();
  }

  /** Renews the lease of the active `deviceId` under `epoch`; false when the role moved meanwhile. */
  async renew(id: string, epoch: number, deviceId: string, at: number): Promise<boolean> {
    const r = await this.#db
      .updateTable('mgr_ha_pair')
      .set({ renewed_at: at })
      .where('id', '=', id)
      .where('epoch', '=', epoch)
      .where('active_device_id', '=', deviceId)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Moves the lease to `deviceId` with epoch + 1, when the pair is enabled, still at `epoch`, and
   * its active has not renewed since `staleBefore`; answers whether it moved.
   */
  async takeOver(
    id: string,
    epoch: number,
    deviceId: string,
    at: number,
    staleBefore: number,
  ): Promise<boolean> {
    const r = await this.#db
      .updateTable('mgr_ha_pair')
      .set({ active_device_id: deviceId, epoch: epoch + 1, renewed_at: at, updated_at: at })
      .where('id', '=', id)
      .where('epoch', '=', epoch)
      .where('enabled', '=', 1)
      .where('active_device_id', '!=', deviceId)
      .where('renewed_at', '<', staleBefore)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }
}
