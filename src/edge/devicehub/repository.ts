/** The DeviceHub's tables (`dh_device`, `dh_register`) through the query layer. */
import type { SelectQueryBuilder, SqlBool } from 'kysely';
import { sql, type Database, type Kysely, type Transaction } from '../../kernel/db/index.js';

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

/** A register with what its topics need of its device. */
export interface RegisterWithDevice extends RegisterRow {
  device_name: string;
  alias_topics: number;
}

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

/** Rows per multi-row INSERT (13 columns each, well under SQLite's 32,766 parameters). */
const INSERT_CHUNK = 500;

export class DevicehubRepository {
  constructor(readonly database: Database) {}

  get db(): Kysely<any> {
    return this.database.db;
  }

  transaction<T>(fn: (trx: Transaction<any>) => Promise<T>): Promise<T> {
    return this.database.transaction(fn);
  }

  // --- devices

  async insertDevice(row: DeviceRow, db: Kysely<any> = this.db): Promise<void> {
    await db.insertInto('dh_device').values(row).execute();
  }

  async updateDevice(row: DeviceRow, db: Kysely<any> = this.db): Promise<void> {
    const { id, ...rest } = row;
    await db.updateTable('dh_device').set(rest).where('id', '=', id).execute();
  }

  async deleteDevices(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return this.transaction(async (trx) => {
      // Explicit, so that it does not depend on the dialect's foreign-key enforcement.
      await trx.deleteFrom('dh_register').where('device_id', 'in', ids).execute();
      const res = await trx.deleteFrom('dh_device').where('id', 'in', ids).executeTakeFirst();
      return Number(res.numDeletedRows);
    });
  }

  async getDevice(id: string, db: Kysely<any> = this.db): Promise<DeviceRow | undefined> {
    return (await db.selectFrom('dh_device').selectAll().where('id', '=', id).executeTakeFirst()) as
      DeviceRow | undefined;
  }

  async getDevicesByNames(names: string[]): Promise<DeviceRow[]> {
    if (names.length === 0) return [];
    const out: DeviceRow[] = [];
    for (let i = 0; i < names.length; i += 500) {
      out.push(
        ...((await this.db
          .selectFrom('dh_device')
          .selectAll()
          .where('name', 'in', names.slice(i, i + 500))
          .execute()) as DeviceRow[]),
      );
    }
    return out;
  }

  /** Base query of ListDevices (paging.ts applies filter, sort and page). */
  deviceListQuery(ids?: string[]): SelectQueryBuilder<any, any, DeviceRow> {
    let q = this.db.selectFrom('dh_device').selectAll('dh_device');
    if (ids) q = q.where('dh_device.id', 'in', ids.length > 0 ? ids : ['']);
    return q as unknown as SelectQueryBuilder<any, any, DeviceRow>;
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

  async insertRegisters(rows: RegisterRow[], db: Kysely<any> = this.db): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await db
        .insertInto('dh_register')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .execute();
    }
  }

  async updateRegister(row: RegisterRow, db: Kysely<any> = this.db): Promise<void> {
    const { id, ...rest } = row;
    await db.updateTable('dh_register').set(rest).where('id', '=', id).execute();
  }

  async deleteRegisters(ids: string[]): Promise<number> {
    let n = 0;
    for (let i = 0; i < ids.length; i += 500) {
      const res = await this.db
        .deleteFrom('dh_register')
        .where('id', 'in', ids.slice(i, i + 500))
        .executeTakeFirst();
      n += Number(res.numDeletedRows);
    }
    return n;
  }

  async getRegister(id: string, db: Kysely<any> = this.db): Promise<RegisterWithDevice | undefined> {
    return (await db
      .selectFrom('dh_register as r')
      .innerJoin('dh_device as d', 'd.id', 'r.device_id')
      .select([...REGISTER_COLUMNS])
      .where('r.id', '=', id)
      .executeTakeFirst()) as RegisterWithDevice | undefined;
  }

  async getRegistersByIds(ids: string[]): Promise<RegisterWithDevice[]> {
    const out: RegisterWithDevice[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      out.push(
        ...((await this.db
          .selectFrom('dh_register as r')
          .innerJoin('dh_device as d', 'd.id', 'r.device_id')
          .select([...REGISTER_COLUMNS])
          .where('r.id', 'in', ids.slice(i, i + 500))
          .execute()) as RegisterWithDevice[]),
      );
    }
    return out;
  }

  /** Registers of the given devices keyed by tag name (for uploads: create or update). */
  async registersOfDevices(deviceIds: string[]): Promise<RegisterRow[]> {
    const out: RegisterRow[] = [];
    for (let i = 0; i < deviceIds.length; i += 500) {
      out.push(
        ...((await this.db
          .selectFrom('dh_register')
          .selectAll()
          .where('device_id', 'in', deviceIds.slice(i, i + 500))
          .execute()) as RegisterRow[]),
      );
    }
    return out;
  }

  /** One page of registers, keyset-ordered by ID, and the count of all that match. */
  async listRegisters(q: RegisterQuery): Promise<{ rows: RegisterWithDevice[]; total: number }> {
    const where = (query: SelectQueryBuilder<any, any, any>, alias: string) => {
      let w = query;
      if (q.deviceId !== undefined) w = w.where(`${alias}.device_id`, '=', q.deviceId);
      if (q.pattern) w = w.where(this.patternCondition(`${alias}.tag_name`, q.pattern));
      return w;
    };
    const counted = await where(this.db.selectFrom('dh_register as c'), 'c')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    let page = where(
      this.db
        .selectFrom('dh_register as r')
        .innerJoin('dh_device as d', 'd.id', 'r.device_id')
        .select([...REGISTER_COLUMNS]),
      'r',
    );
    if (q.after !== undefined) page = page.where('r.id', '>', q.after);
    const rows = (await page.orderBy('r.id').limit(q.limit).offset(q.skip).execute()) as RegisterWithDevice[];
    return { rows, total: Number((counted as { n: unknown }).n) };
  }

  /** Every register with its device name, ordered by device name and then ID (CSV export). */
  async allRegisters(deviceIds?: string[]): Promise<RegisterWithDevice[]> {
    let q = this.db
      .selectFrom('dh_register as r')
      .innerJoin('dh_device as d', 'd.id', 'r.device_id')
      .select([...REGISTER_COLUMNS]);
    if (deviceIds) q = q.where('r.device_id', 'in', deviceIds.length > 0 ? deviceIds : ['']);
    return (await q.orderBy('d.name').orderBy('r.id').execute()) as RegisterWithDevice[];
  }

  private patternCondition(column: string, pattern: { text: string; option: PatternOption }) {
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
