/** The fleet's tables: companies, projects, devices, activation codes and connection history. */
import type { Database, Kysely } from '../../kernel/db/index.js';
import { sql } from '../../kernel/db/index.js';

export interface FleetTables {
  mgr_company: { id: string; name: string; created_at: number };
  mgr_project: { id: string; company_id: string; name: string; created_at: number };
  mgr_device: {
    id: string;
    project_id: string;
    name: string;
    pretty_name: string | null;
    online: number;
    last_seen: number | null;
    edge_version: string | null;
    host_facts: string | null;
    metrics: string | null;
    cpu: number | null;
    memory: number | null;
    link_secret_hash: string;
    edge_credential: string;
    activated_at: number;
  };
  mgr_activation_code: {
    id: string;
    code_hash: string;
    project_id: string;
    device_name: string | null;
    expires_at: number;
    used_at: number | null;
    device_id: string | null;
    created_by: string;
    created_at: number;
  };
  mgr_connection: {
    id: string;
    device_id: string;
    connected_at: number;
    disconnected_at: number | null;
    remote_address: string | null;
    reason: string | null;
  };
}

export type CompanyRow = FleetTables['mgr_company'];
export type ProjectRow = FleetTables['mgr_project'];
export type DeviceRow = FleetTables['mgr_device'];
export type CodeRow = FleetTables['mgr_activation_code'];

export class FleetRepository {
  readonly database: Database;
  readonly db: Kysely<FleetTables>;

  constructor(database: Database) {
    this.database = database;
    this.db = database.typed<FleetTables>();
  }

  async insertCompany(row: CompanyRow): Promise<void> {
    await this.db.insertInto('mgr_company').values(row).execute();
  }
  getCompany(id: string) {
    return this.db.selectFrom('mgr_company').selectAll().where('id', '=', id).executeTakeFirst();
  }
  getCompanyByName(name: string) {
    return this.db.selectFrom('mgr_company').selectAll().where('name', '=', name).executeTakeFirst();
  }
  /** Companies with their project and device counts (for the paged list). */
  companyListQuery() {
    return this.db
      .selectFrom('mgr_company as c')
      .select([
        'c.id',
        'c.name',
        'c.created_at',
        sql<number>`(select count(*) from mgr_project p where p.company_id = c.id)`.as('projects'),
        sql<number>`(select count(*) from mgr_device d join mgr_project p on p.id = d.project_id where p.company_id = c.id)`.as(
          'devices',
        ),
      ]);
  }

  async insertProject(row: ProjectRow): Promise<void> {
    await this.db.insertInto('mgr_project').values(row).execute();
  }
  getProject(id: string) {
    return this.db
      .selectFrom('mgr_project as p')
      .innerJoin('mgr_company as c', 'c.id', 'p.company_id')
      .select(['p.id', 'p.name', 'p.company_id', 'p.created_at', 'c.name as company_name'])
      .where('p.id', '=', id)
      .executeTakeFirst();
  }
  projectListQuery() {
    return this.db
      .selectFrom('mgr_project as p')
      .innerJoin('mgr_company as c', 'c.id', 'p.company_id')
      .select([
        'p.id',
        'p.name',
        'p.company_id',
        'p.created_at',
        'c.name as company_name',
        sql<number>`(select count(*) from mgr_device d where d.project_id = p.id)`.as('devices'),
      ]);
  }

  async insertDevice(row: DeviceRow): Promise<void> {
    await this.db.insertInto('mgr_device').values(row).execute();
  }
  getDevice(id: string) {
    return this.db
      .selectFrom('mgr_device as d')
      .innerJoin('mgr_project as p', 'p.id', 'd.project_id')
      .selectAll('d')
      .select(['p.company_id'])
      .where('d.id', '=', id)
      .executeTakeFirst();
  }
  deviceListQuery() {
    return this.db
      .selectFrom('mgr_device as d')
      .innerJoin('mgr_project as p', 'p.id', 'd.project_id')
      .select([
        'd.id',
        'd.project_id',
        'd.name',
        'd.pretty_name',
        'd.online',
        'd.last_seen',
        'd.edge_version',
        'd.host_facts',
        'd.metrics',
        'd.cpu',
        'd.memory',
        'd.activated_at',
        'p.company_id',
      ]);
  }
  async deleteDevice(id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('mgr_device').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
  async setPrettyName(projectId: string, deviceId: string, prettyName: string | null): Promise<boolean> {
    const res = await this.db
      .updateTable('mgr_device')
      .set({ pretty_name: prettyName })
      .where('id', '=', deviceId)
      .where('project_id', '=', projectId)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }
  async setOnline(
    id: string,
    online: boolean,
    now: number,
    facts?: { version: string; host: string },
  ): Promise<void> {
    await this.db
      .updateTable('mgr_device')
      .set({
        online: online ? 1 : 0,
        last_seen: now,
        ...(facts ? { edge_version: facts.version, host_facts: facts.host } : {}),
      })
      .where('id', '=', id)
      .execute();
  }
  async recordHeartbeats(
    beats: { id: string; at: number; metrics: string; cpu: number | null; memory: number | null }[],
  ): Promise<void> {
    if (beats.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      for (const b of beats) {
        await trx
          .updateTable('mgr_device')
          .set({ last_seen: b.at, metrics: b.metrics, cpu: b.cpu, memory: b.memory })
          .where('id', '=', b.id)
          .execute();
      }
    });
  }
  /** At start: nobody is connected yet; open connection rows end with the last run. */
  async resetOnline(now: number, keep: string[] = []): Promise<void> {
    if (keep.length > 30_000) return;
    let devices = this.db.updateTable('mgr_device').set({ online: 0 }).where('online', '=', 1);
    let connections = this.db
      .updateTable('mgr_connection')
      .set({ disconnected_at: now, reason: 'manager restarted' })
      .where('disconnected_at', 'is', null);
    if (keep.length) {
      devices = devices.where('id', 'not in', keep);
      connections = connections.where('device_id', 'not in', keep);
    }
    await devices.execute();
    await connections.execute();
  }

  async insertCodes(rows: CodeRow[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const row of rows) await trx.insertInto('mgr_activation_code').values(row).execute();
    });
  }
  getCodeByHash(hash: string) {
    return this.db
      .selectFrom('mgr_activation_code')
      .selectAll()
      .where('code_hash', '=', hash)
      .executeTakeFirst();
  }
  codeListQuery() {
    return this.db
      .selectFrom('mgr_activation_code as a')
      .innerJoin('mgr_project as p', 'p.id', 'a.project_id')
      .select([
        'a.id',
        'a.project_id',
        'a.device_name',
        'a.expires_at',
        'a.used_at',
        'a.device_id',
        'a.created_at',
        'p.company_id',
      ]);
  }
  /** Uses a code and creates its device in one transaction; false when the code was used meanwhile. */
  async activate(codeId: string, device: DeviceRow): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('mgr_activation_code')
        .set({ used_at: device.activated_at, device_id: device.id })
        .where('id', '=', codeId)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return false;
      await trx.insertInto('mgr_device').values(device).execute();
      return true;
    });
  }

  async openConnection(row: FleetTables['mgr_connection']): Promise<void> {
    await this.db.insertInto('mgr_connection').values(row).execute();
  }
  async closeConnection(id: string, at: number, reason: string): Promise<void> {
    await this.db
      .updateTable('mgr_connection')
      .set({ disconnected_at: at, reason })
      .where('id', '=', id)
      .execute();
  }
  connectionListQuery() {
    return this.db
      .selectFrom('mgr_connection')
      .select(['id', 'device_id', 'connected_at', 'disconnected_at', 'remote_address', 'reason']);
  }
}
