/**
 * The fleet's tables: companies, projects, devices, activation codes and connection history.
 * The paged lists are run here (their definitions map the API's fields to these columns), each
 * restricted to what a caller may see (`Visible`, from the service: null for everything).
 */
import type { Transaction } from '../../kernel/db/index.js';
import { BoundRepository } from '../../kernel/db/bound-repository.js';
import { sql } from '../../kernel/db/index.js';
import { runList, type ListDefinition, type ListSpec } from '../../kernel/paging.js';

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

/** The companies and projects a caller holds a role on (null: a global role, everything). */
export type Visible = { companyIds: string[]; projectIds: string[] } | null;

/** An `in` list that matches nothing when empty (`in ()` is not SQL). */
const ids = (list: string[]) => (list.length ? list : ['']);

export const COMPANY_LIST: ListDefinition = {
  fields: {
    companyName: 'c.name',
    createdAt: { column: 'c.created_at', type: 'integer', filterable: false },
  },
  tiebreak: 'c.id',
  defaultSort: [{ field: 'companyName', order: 'asc' }],
  maxLimit: 1000,
};

export const PROJECT_LIST: ListDefinition = {
  fields: {
    name: 'p.name',
    companyName: 'c.name',
    createdAt: { column: 'p.created_at', type: 'integer', filterable: false },
  },
  tiebreak: 'p.id',
  defaultSort: [{ field: 'name', order: 'asc' }],
  maxLimit: 1000,
};

export const DEVICE_LIST: ListDefinition = {
  fields: {
    name: 'd.name',
    prettyName: 'd.pretty_name',
    projectId: 'd.project_id',
    online: { column: 'd.online', type: 'boolean' },
    lastSeen: { column: 'd.last_seen', type: 'integer' },
    edgeVersion: 'd.edge_version',
    activatedAt: { column: 'd.activated_at', type: 'integer' },
  },
  tiebreak: 'd.id',
  defaultSort: [{ field: 'name', order: 'asc' }],
  maxLimit: 1000,
};

export const CODE_LIST: ListDefinition = {
  fields: {
    projectId: 'a.project_id',
    deviceName: 'a.device_name',
    expiresAt: { column: 'a.expires_at', type: 'integer' },
    createdAt: { column: 'a.created_at', type: 'integer' },
  },
  tiebreak: 'a.id',
  defaultSort: [{ field: 'createdAt', order: 'desc' }],
  maxLimit: 1000,
};

export const CONNECTION_LIST: ListDefinition = {
  fields: { connectedAt: { column: 'connected_at', type: 'integer' } },
  tiebreak: 'id',
  defaultSort: [{ field: 'connectedAt', order: 'desc' }],
  maxLimit: 1000,
};

export class FleetRepository extends BoundRepository<FleetTables, FleetRepository> {
  protected bind(trx: Transaction<FleetTables>): FleetRepository {
    return new FleetRepository(this.database, trx);
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
  /** Companies with their project and device counts, paged; those `visible` holds a role in. */
  listCompanies(spec: ListSpec, visible: Visible) {
    let q = this.db
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
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('c.id', 'in', ids(visible.companyIds)),
          eb.exists(
            eb
              .selectFrom('mgr_project as sp')
              .select('sp.id')
              .whereRef('sp.company_id', '=', 'c.id')
              .where('sp.id', 'in', ids(visible.projectIds)),
          ),
        ]),
      );
    return runList(this.database, q, COMPANY_LIST, spec);
  }
  /** Whether one of `projectIds` is a project of the company. */
  async hasProjectIn(companyId: string, projectIds: string[]): Promise<boolean> {
    if (projectIds.length === 0) return false;
    const hit = await this.db
      .selectFrom('mgr_project')
      .select('id')
      .where('company_id', '=', companyId)
      .where('id', 'in', projectIds)
      .executeTakeFirst();
    return hit !== undefined;
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
  /** Projects with their company's name and device count, paged (of one company when given). */
  listProjects(spec: ListSpec, companyId: string | undefined, visible: Visible) {
    let q = this.db
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
    if (companyId !== undefined) q = q.where('p.company_id', '=', companyId);
    if (visible)
      q = q.where((eb) =>
        eb.or([eb('p.company_id', 'in', ids(visible.companyIds)), eb('p.id', 'in', ids(visible.projectIds))]),
      );
    return runList(this.database, q, PROJECT_LIST, spec);
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
  #devices() {
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
  /** Devices (no secrets), paged (of one project when given). */
  listDevices(spec: ListSpec, projectId: string | undefined, visible: Visible) {
    let q = this.#devices();
    if (projectId !== undefined) q = q.where('d.project_id', '=', projectId);
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('p.company_id', 'in', ids(visible.companyIds)),
          eb('d.project_id', 'in', ids(visible.projectIds)),
        ]),
      );
    return runList(this.database, q, DEVICE_LIST, spec);
  }
  /** Every device of a project (no secrets), by name. */
  devicesOf(projectId: string) {
    return this.#devices().where('d.project_id', '=', projectId).orderBy('d.name').execute();
  }
  /** The devices of a project with the highest `cpu` or `memory`, highest first. */
  topDevices(projectId: string, metric: 'cpu' | 'memory', limit: number) {
    const col = metric === 'cpu' ? 'd.cpu' : 'd.memory';
    return this.#devices()
      .where('d.project_id', '=', projectId)
      .where(col, 'is not', null)
      .orderBy(col, 'desc')
      .orderBy('d.id')
      .limit(limit)
      .execute();
  }
  /** Devices, and how many are online. */
  async deviceCounts(): Promise<{ devices: number; online: number }> {
    const row = await this.db
      .selectFrom('mgr_device')
      .select([sql<number>`count(*)`.as('devices'), sql<number>`coalesce(sum(online), 0)`.as('online')])
      .executeTakeFirstOrThrow();
    return { devices: Number(row.devices), online: Number(row.online) };
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
    await this.transaction(async (repo) => {
      const trx = repo.db;
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
    await this.transaction(async (repo) => {
      const trx = repo.db;
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
  /** Activation codes with their project's company, paged (of one project when given). */
  listCodes(spec: ListSpec, projectId: string | undefined, visible: Visible) {
    let q = this.db
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
    if (projectId !== undefined) q = q.where('a.project_id', '=', projectId);
    if (visible)
      q = q.where((eb) =>
        eb.or([
          eb('p.company_id', 'in', ids(visible.companyIds)),
          eb('a.project_id', 'in', ids(visible.projectIds)),
        ]),
      );
    return runList(this.database, q, CODE_LIST, spec);
  }
  /** Uses a code and creates its device in one transaction; false when the code was used meanwhile. */
  async activate(codeId: string, device: DeviceRow): Promise<boolean> {
    return this.transaction(async (repo) => {
      const trx = repo.db;
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
  /**
   * What the alert rules read of every device (no secrets), with the links it opened since
   * `since` (link flapping); one pass over the fleet.
   */
  async alertFacts(since: number) {
    const devices = await this.db
      .selectFrom('mgr_device as d')
      .innerJoin('mgr_project as p', 'p.id', 'd.project_id')
      .select([
        'd.id',
        'd.name',
        'd.project_id',
        'p.company_id',
        'd.online',
        'd.last_seen',
        'd.metrics',
        'd.activated_at',
      ])
      .execute();
    const links = await this.db
      .selectFrom('mgr_connection')
      .select(['device_id', sql<number>`count(*)`.as('n')])
      .where('connected_at', '>=', since)
      .groupBy('device_id')
      .execute();
    return { devices, links: new Map(links.map((l) => [l.device_id, Number(l.n)])) };
  }
  /** A device's connection history, paged. */
  listConnections(spec: ListSpec, deviceId: string) {
    const q = this.db
      .selectFrom('mgr_connection')
      .select(['id', 'device_id', 'connected_at', 'disconnected_at', 'remote_address', 'reason'])
      .where('device_id', '=', deviceId);
    return runList(this.database, q, CONNECTION_LIST, spec);
  }
}
