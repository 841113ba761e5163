/** The link module's tables: the manager processes sharing the database and the links they hold. */
import type { Database, Kysely } from '../../kernel/db/index.js';

/** The link module's tables as Kysely sees them (migrations/0001-create-link-peers.ts). */
export interface LinkTables {
  mgr_link_instance: {
    id: string;
    url: string;
    fingerprint: string | null;
    started_at: number;
    seen_at: number;
  };
  mgr_link_owner: { device_id: string; instance_id: string; since: number };
  mgr_link_setting: { key: string; value: string };
}

export type LinkInstanceRow = LinkTables['mgr_link_instance'];

export class LinkRepository {
  readonly #db: Kysely<LinkTables>;

  constructor(database: Database) {
    this.#db = database.typed<LinkTables>();
  }

  /** Sets the setting unless it has a value; answers the value in force (ours or an earlier one). */
  async initSetting(key: string, value: string): Promise<string> {
    try {
      await this.#db.insertInto('mgr_link_setting').values({ key, value }).execute();
    } catch {
      // another process made it first
    }
    const row = await this.#db
      .selectFrom('mgr_link_setting')
      .select('value')
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    return row.value;
  }

  /** Forgets every process and link holder. */
  async forgetAll(): Promise<void> {
    await this.#db.deleteFrom('mgr_link_owner').execute();
    await this.#db.deleteFrom('mgr_link_instance').execute();
  }

  /** Devices whose links processes other than `instance`, seen after `seenAfter`, hold. */
  async heldElsewhere(instance: string, seenAfter: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('mgr_link_owner as o')
      .innerJoin('mgr_link_instance as i', 'i.id', 'o.instance_id')
      .select('o.device_id')
      .where('i.seen_at', '>', seenAfter)
      .where('i.id', '!=', instance)
      .execute();
    return rows.map((r) => r.device_id);
  }

  async insertInstance(row: LinkInstanceRow): Promise<void> {
    await this.#db.insertInto('mgr_link_instance').values(row).execute();
  }

  async deleteInstancesSeenBefore(time: number): Promise<void> {
    await this.#db.deleteFrom('mgr_link_instance').where('seen_at', '<', time).execute();
  }

  async heartbeat(instance: string, now: number): Promise<void> {
    await this.#db
      .updateTable('mgr_link_instance')
      .set({ seen_at: now })
      .where('id', '=', instance)
      .execute();
  }

  /** Records `instance` as the holder of the device's link (replacing any other). */
  async setOwner(deviceId: string, instance: string, since: number): Promise<void> {
    await this.#db.deleteFrom('mgr_link_owner').where('device_id', '=', deviceId).execute();
    await this.#db
      .insertInto('mgr_link_owner')
      .values({ device_id: deviceId, instance_id: instance, since })
      .execute();
  }

  /** Forgets `instance` as the holder of the device's link (not another holder). */
  async releaseOwner(deviceId: string, instance: string): Promise<void> {
    await this.#db
      .deleteFrom('mgr_link_owner')
      .where('device_id', '=', deviceId)
      .where('instance_id', '=', instance)
      .execute();
  }

  /** The process holding the device's link, if it was seen after `seenAfter`. */
  liveOwner(
    deviceId: string,
    seenAfter: number,
  ): Promise<{ id: string; url: string; fingerprint: string | null } | undefined> {
    return this.#db
      .selectFrom('mgr_link_owner as o')
      .innerJoin('mgr_link_instance as i', 'i.id', 'o.instance_id')
      .select(['i.id', 'i.url', 'i.fingerprint'])
      .where('o.device_id', '=', deviceId)
      .where('i.seen_at', '>', seenAfter)
      .executeTakeFirst();
  }
}
