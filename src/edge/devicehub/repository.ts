/**
 * The DeviceHub's tables (`dh_device`, `dh_register`) through the query layer, typed. Private to
 * the module: other modules read devices and tags through the read model (`read-model.ts`).
 */
import type { Expression, SelectQueryBuilder, SqlBool } from 'kysely';
import {
  selectArrays,
  sql,
  type Database,
  type Kysely,
  type Transaction,
  type Tx,
} from '../../kernel/db/index.js';

export interface DeviceRow {
  id: string;
  name: string;
  driver_id: string;
  description: string;
  properties: string;
  metadata: string;
  dh_params: string;
  worker_params: string;
  alias_topics: number;
  debug: number;
  created_at: number;
  updated_at: number;
}

export interface RegisterRow {
  id: string;
  device_id: string;
  name: string;
  tag_name: string;
  description: string;
  value_type: string;
  publish_cov: number;
  tag_formula: string;
  interval_ms: number;
  properties: string;
  metadata: string;
  created_at: number;
  updated_at: number;
}

/** The module's tables, as the query layer sees them. */
export interface DevicehubTables {
  dh_device: DeviceRow;
  dh_register: RegisterRow;
}

type Db = Kysely<DevicehubTables>;
type Trx = Transaction<DevicehubTables>;

/** A register with what its topics need of its device. */
export interface RegisterWithDevice extends RegisterRow {
  device_name: string;
  alias_topics: number;
}

/** A register as a configuration export reads it: the values of `EXPORT_COLUMNS`, in order. */
export type ExportArray = [
  id: string,
  device_id: string,
  name: string,
  tag_name: string,
  description: string,
  value_type: string,
  publish_cov: number,
  tag_formula: string,
  interval_ms: number,
  properties: string,
  metadata: string,
];

/** A register as the values of `REGISTER_ROW_COLUMNS`, in that order (see `selectArrays`). */
export type RegisterArray = [...ExportArray, created_at: number, updated_at: number];

/**
 * A register with its device's name and `alias_topics`, as the values of `REGISTER_COLUMNS` in
 * their order (an array: a page of 1,000 reads without an object per row, see `selectArrays`).
 */
export type RegisterTuple = [...RegisterArray, device_name: string, alias_topics: number];

export type PatternOption = 'CONTAINS' | 'STARTS_WITH' | 'ENDS_WITH' | 'EXACT';

export interface RegisterQuery {
  deviceId?: string;
  /** Keyset: registers with an ID after this one. */
  after?: string;
  skip: number;
  limit: number;
  pattern?: { text: string; option: PatternOption };
}

const REGISTER_COLUMNS = [
  'r.id',
  'r.device_id',
  'r.name',
  'r.tag_name',
  'r.description',
  'r.value_type',
  'r.publish_cov',
  'r.tag_formula',
  'r.interval_ms',
  'r.properties',
  'r.metadata',
  'r.created_at',
  'r.updated_at',
  'd.name as device_name',
  'd.alias_topics',
] as const;

/** The columns of a register that its configuration export writes (`ExportArray`). */
const EXPORT_COLUMNS = [
  'id',
  'device_id',
  'name',
  'tag_name',
  'description',
  'value_type',
  'publish_cov',
  'tag_formula',
  'interval_ms',
  'properties',
  'metadata',
] as const;

const REGISTER_ROW_COLUMNS = [...EXPORT_COLUMNS, 'created_at', 'updated_at'] as const;

/** The row of a register read as an array. */
export const registerRowOf = (a: RegisterArray): RegisterRow => ({
  id: a[0],
  device_id: a[1],
  name: a[2],
  tag_name: a[3],
  description: a[4],
  value_type: a[5],
  publish_cov: a[6],
  tag_formula: a[7],
  interval_ms: a[8],
  properties: a[9],
  metadata: a[10],
  created_at: a[11],
  updated_at: a[12],
});

/** Rows per multi-row INSERT (13 columns each, well under SQLite's 32,766 parameters). */
const INSERT_CHUNK = 500;
/** Values per `in (...)` list. */
const IN_CHUNK = 500;

/** Runs `query` on chunks of `values` and concatenates the answers. */
async function chunked<V, T>(values: readonly V[], query: (chunk: V[]) => Promise<T[]>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < values.length; i += IN_CHUNK) out.push(...(await query(values.slice(i, i + IN_CHUNK))));
  return out;
}

export class DevicehubRepository {
  readonly db: Db;

  constructor(readonly database: Database) {
    this.db = database.typed<DevicehubTables>();
  }

  /**
   * The repository reading through `trx`, a transaction someone else owns (a configuration apply's);
   * for reads (writes that open a transaction of their own would not be part of `trx`).
   */
  inTransaction(trx: Tx): DevicehubRepository {
    return new DevicehubRepository(Object.create(this.database, { db: { value: trx } }) as Database);
  }

  transaction<T>(fn: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  // --- devices

  async insertDevice(row: DeviceRow, db: Db = this.db): Promise<void> {
    await db.insertInto('dh_device').values(row).execute();
  }

  async updateDevice(row: DeviceRow, db: Db = this.db): Promise<void> {
    const { id, ...rest } = row;
    await db.updateTable('dh_device').set(rest).where('id', '=', id).execute();
  }

  async deleteDevices(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return this.transaction(async (trx) => {
      const found = await trx.selectFrom('dh_device').select('id').where('id', 'in', ids).execute();
      // Explicit, so that it does not depend on the dialect's foreign-key enforcement.
      await trx.deleteFrom('dh_register').where('device_id', 'in', ids).execute();
      await trx.deleteFrom('dh_device').where('id', 'in', ids).execute();
      return found.map((r) => r.id);
    });
  }

  async getDevice(id: string, db: Db = this.db): Promise<DeviceRow | undefined> {
    return db.selectFrom('dh_device').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** A device by ID, or else by name (as DriverID takes a driver's name). */
  async getDeviceByIdOrName(idOrName: string): Promise<DeviceRow | undefined> {
    return (
      (await this.getDevice(idOrName)) ??
      (await this.db.selectFrom('dh_device').selectAll().where('name', '=', idOrName).executeTakeFirst())
    );
  }

  /** Every device (no `ids`), or those of `ids` that exist. */
  async getDevices(ids?: readonly string[]): Promise<DeviceRow[]> {
    if (!ids) return this.db.selectFrom('dh_device').selectAll().orderBy('id').execute();
    return chunked(ids, (c) => this.db.selectFrom('dh_device').selectAll().where('id', 'in', c).execute());
  }

  async getDevicesByNames(names: string[]): Promise<DeviceRow[]> {
    return chunked(names, (c) =>
      this.db.selectFrom('dh_device').selectAll().where('name', 'in', c).execute(),
    );
  }

  /** Base query of ListDevices (paging.ts applies filter, sort and page). */
  deviceListQuery(ids?: string[]): SelectQueryBuilder<DevicehubTables, 'dh_device', DeviceRow> {
    let q = this.db.selectFrom('dh_device').selectAll('dh_device');
    if (ids) q = q.where('dh_device.id', 'in', ids.length > 0 ? ids : ['']);
    return q;
  }

  async countRegistersOfDevice(deviceId: string): Promise<number> {
    const r = await this.db
      .selectFrom('dh_register')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('device_id', '=', deviceId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  // --- registers

  async insertRegisters(rows: RegisterRow[], db: Db = this.db): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await db
        .insertInto('dh_register')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .execute();
    }
  }

  async updateRegister(row: RegisterRow, db: Db = this.db): Promise<void> {
    const { id, ...rest } = row;
    await db.updateTable('dh_register').set(rest).where('id', '=', id).execute();
  }

  /** Deletes the registers of `ids`; answers those that existed, with their device. */
  async deleteRegisters(ids: string[]): Promise<Array<{ id: string; device_id: string }>> {
    return chunked(ids, async (c) => {
      const found = await this.db
        .selectFrom('dh_register')
        .select(['id', 'device_id'])
        .where('id', 'in', c)
        .execute();
      if (found.length > 0)
        await this.db
          .deleteFrom('dh_register')
          .where(
            'id',
            'in',
            found.map((r) => r.id),
          )
          .execute();
      return found;
    });
  }

  // --- the configuration section's (writes through `db`: the apply's transaction)

  /** Deletes the registers of `ids` through `db`. */
  async deleteRegistersIn(ids: readonly string[], db: Db): Promise<void> {
    for (let i = 0; i < ids.length; i += IN_CHUNK)
      await db
        .deleteFrom('dh_register')
        .where('id', 'in', ids.slice(i, i + IN_CHUNK))
        .execute();
  }

  /** Deletes the devices of `ids` and their registers through `db`. */
  async deleteDevicesIn(ids: readonly string[], db: Db): Promise<void> {
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const chunk = ids.slice(i, i + IN_CHUNK);
      await db.deleteFrom('dh_register').where('device_id', 'in', chunk).execute();
      await db.deleteFrom('dh_device').where('id', 'in', chunk).execute();
    }
  }

  /** Those of `ids` that are the IDs of registers. */
  async registerIdsTaken(ids: readonly string[], db: Db = this.db): Promise<Set<string>> {
    const rows = await chunked(ids, (c) =>
      db.selectFrom('dh_register').select('id').where('id', 'in', c).execute(),
    );
    return new Set(rows.map((r) => r.id));
  }

  #withDevice() {
    return this.db
      .selectFrom('dh_register as r')
      .innerJoin('dh_device as d', 'd.id', 'r.device_id')
      .select([...REGISTER_COLUMNS]);
  }

  async getRegister(id: string): Promise<RegisterWithDevice | undefined> {
    return this.#withDevice().where('r.id', '=', id).executeTakeFirst();
  }

  async getRegistersByIds(ids: readonly string[]): Promise<RegisterWithDevice[]> {
    return chunked(ids, (c) => this.#withDevice().where('r.id', 'in', c).execute());
  }

  /** Registers of the given devices (for uploads: create or update). */
  async registersOfDevices(deviceIds: readonly string[]): Promise<RegisterRow[]> {
    return chunked(deviceIds, (c) =>
      this.db.selectFrom('dh_register').selectAll().where('device_id', 'in', c).execute(),
    );
  }

  /** Registers of the given devices with what their topics need of the device. */
  async registersWithDeviceOf(deviceIds: readonly string[]): Promise<RegisterWithDevice[]> {
    return chunked(deviceIds, (c) => this.#withDevice().where('r.device_id', 'in', c).execute());
  }

  /** One page of registers, keyset-ordered by ID, and the count of all that match. */
  async listRegisters(q: RegisterQuery): Promise<{ rows: RegisterTuple[]; total: number }> {
    const conditions = (column: (name: 'device_id' | 'tag_name') => string) => {
      const out: Array<Expression<SqlBool>> = [];
      if (q.deviceId !== undefined) out.push(sql<SqlBool>`${sql.ref(column('device_id'))} = ${q.deviceId}`);
      if (q.pattern) out.push(this.#patternCondition(column('tag_name'), q.pattern));
      return out;
    };
    const count = conditions((n) => `c.${n}`);
    const pageWhere = conditions((n) => `r.${n}`);
    let counting = this.db.selectFrom('dh_register as c').select((eb) => eb.fn.countAll().as('n'));
    if (count.length > 0) counting = counting.where((eb) => eb.and(count));
    const counted = await counting.executeTakeFirstOrThrow();
    let page = this.#withDevice();
    if (pageWhere.length > 0) page = page.where((eb) => eb.and(pageWhere));
    if (q.after !== undefined) page = page.where('r.id', '>', q.after);
    const rows = await selectArrays<RegisterTuple>(page.orderBy('r.id').limit(q.limit).offset(q.skip));
    return { rows, total: Number(counted.n) };
  }

  /** Every register with its device name, ordered by device name and then ID (CSV export). */
  async allRegisters(deviceIds?: string[]): Promise<RegisterWithDevice[]> {
    let q = this.#withDevice();
    if (deviceIds) q = q.where('r.device_id', 'in', deviceIds.length > 0 ? deviceIds : ['']);
    return q.orderBy('d.name').orderBy('r.id').execute();
  }

  /**
   * Every register as an array of values (a configuration export reads all of them: arrays cost
   * half of row objects), ordered by ID, so that each device's registers come in ID order.
   */
  async registerArrays(): Promise<RegisterArray[]> {
    return selectArrays<RegisterArray>(
      this.db.selectFrom('dh_register').select(REGISTER_ROW_COLUMNS).orderBy('id'),
    );
  }

  /** How many registers each device has: `[device ID, count]` (devices without any left out). */
  async registerCounts(): Promise<Array<[string, number]>> {
    const rows = await selectArrays<[string, number | string]>(
      this.db
        .selectFrom('dh_register')
        .select((eb) => ['device_id', eb.fn.countAll().as('n')])
        .groupBy('device_id'),
    );
    return rows.map(([id, n]) => [id, Number(n)]);
  }

  /**
   * The registers of the devices `deviceIds` as arrays of the exported columns (`ExportArray`),
   * ordered by device, then ID: a configuration export reads them a few thousand at a time.
   */
  async exportArrays(deviceIds: readonly string[]): Promise<ExportArray[]> {
    if (deviceIds.length === 0) return [];
    return selectArrays<ExportArray>(
      this.db
        .selectFrom('dh_register')
        .select(EXPORT_COLUMNS)
        .where('device_id', 'in', deviceIds)
        // By device, then ID: the order of the (device_id, id) index, so that SQLite sorts nothing
        // (by ID alone it sorted the batch's rows in a temporary B-tree); each device's tags stay
        // by ID, and the caller groups them by device.
        .orderBy('device_id')
        .orderBy('id'),
    );
  }

  #patternCondition(column: string, pattern: { text: string; option: PatternOption }) {
    const col = sql.ref(column);
    const esc = pattern.text.replace(/[!%_]/g, '!$&');
    const like = (p: string) => sql<SqlBool>`${col} ${sql.raw(this.database.ilike)} ${p} escape '!'`;
    switch (pattern.option) {
      case 'STARTS_WITH':
        return like(`${esc}%`);
      case 'ENDS_WITH':
        return like(`%${esc}`);
      case 'EXACT':
        return sql<SqlBool>`${col} = ${pattern.text}`;
      default:
        return like(`%${esc}%`);
    }
  }
}
