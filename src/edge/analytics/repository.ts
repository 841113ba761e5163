/**
 * The analytics tables, through the kernel's query layer. No other module reads them. The service
 * keeps the configuration in memory (it is bounded, see docs/security.md) and writes through this
 * repository; rows have snake_case columns, booleans as 0/1, JSON as text and times as epoch ms.
 *
 * `AnalyticsRepository.inTransaction(trx)` is the same repository bound to a transaction someone
 * else owns (the configuration apply's): every read and write goes through `trx`, and
 * `transaction` runs its steps in it instead of opening one of its own.
 */
import { sql, typed, type Database, type Kysely, type Tx } from '../../kernel/db/index.js';
import type { InputSpec } from './catalogue.js';

export interface Workspace {
  id: string;
  name: string;
  description: string;
  createdAt: number;
  updatedAt: number;
}

export interface Group {
  id: string;
  workspaceId: string;
  name: string;
  description: string;
  createdAt: number;
  updatedAt: number;
}

export interface Position {
  x: number;
  y: number;
}

export interface Instance {
  id: string;
  workspaceId: string;
  groupId: string | null;
  name: string;
  kind: string;
  parameters: Record<string, unknown> & { inputs: InputSpec[] };
  enabled: boolean;
  position: Position;
  createdAt: number;
  updatedAt: number;
}

export interface Variable {
  name: string;
  value: unknown;
  updatedAt: number;
}

export interface ComponentVariable extends Variable {
  component: string;
}

/** The analytics tables as Kysely sees them (migrations/0001-create-analytics.ts). */
export interface AnalyticsTables {
  analytics_workspace: {
    id: string;
    name: string;
    description: string;
    created_at: number;
    updated_at: number;
  };
  analytics_group: {
    id: string;
    workspace_id: string;
    name: string;
    description: string;
    created_at: number;
    updated_at: number;
  };
  analytics_instance: {
    id: string;
    workspace_id: string;
    group_id: string | null;
    name: string;
    kind: string;
    parameters: string;
    enabled: number;
    position_x: number;
    position_y: number;
    created_at: number;
    updated_at: number;
  };
  analytics_variable: { name: string; value: string; updated_at: number };
  analytics_component_variable: { component: string; name: string; value: string; updated_at: number };
  analytics_state: { instance_id: string; config_key: string; state: string; saved_at: number };
}

export type WorkspaceRow = AnalyticsTables['analytics_workspace'];
export type GroupRow = AnalyticsTables['analytics_group'];
export type InstanceRow = AnalyticsTables['analytics_instance'];
export type VariableRow = AnalyticsTables['analytics_variable'];
export type ComponentVariableRow = AnalyticsTables['analytics_component_variable'];
export type StateRow = AnalyticsTables['analytics_state'];

/** Everything the service keeps in memory, as read from the tables. */
export interface AnalyticsContent {
  workspaces: Workspace[];
  groups: Group[];
  /** In ID order (UUIDv7: creation order). */
  instances: Instance[];
  variables: Variable[];
  componentVariables: ComponentVariable[];
}

/** Saved window state of one instance. */
export interface SavedState {
  id: string;
  configKey: string;
  state: unknown;
}

const workspaceOf = (r: WorkspaceRow): Workspace => ({
  id: r.id,
  name: r.name,
  description: r.description,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const groupOf = (r: GroupRow): Group => ({
  id: r.id,
  workspaceId: r.workspace_id,
  name: r.name,
  description: r.description,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const instanceOf = (r: InstanceRow): Instance => ({
  id: r.id,
  workspaceId: r.workspace_id,
  groupId: r.group_id,
  name: r.name,
  kind: r.kind,
  parameters: JSON.parse(r.parameters) as Instance['parameters'],
  enabled: Boolean(r.enabled),
  position: { x: Number(r.position_x), y: Number(r.position_y) },
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const instanceRow = (i: Instance): InstanceRow => ({
  id: i.id,
  workspace_id: i.workspaceId,
  group_id: i.groupId,
  name: i.name,
  kind: i.kind,
  parameters: JSON.stringify(i.parameters),
  enabled: i.enabled ? 1 : 0,
  position_x: i.position.x,
  position_y: i.position.y,
  created_at: i.createdAt,
  updated_at: i.updatedAt,
});

/** IDs per statement of an `in` list (well under SQLite's and PostgreSQL's parameter limits). */
const CHUNK = 500;

export class AnalyticsRepository {
  readonly #db: Kysely<AnalyticsTables>;
  /** null: bound to a transaction owned elsewhere (`inTransaction`). */
  readonly #database: Database | null;

  constructor(database: Database | null, trx?: Kysely<AnalyticsTables>) {
    if (!database && !trx) throw new Error('AnalyticsRepository needs a database or a transaction');
    this.#database = trx ? null : database;
    this.#db = trx ?? database!.typed<AnalyticsTables>();
  }

  /** The repository bound to `trx` (see the file comment); `trx` is not committed here. */
  static inTransaction(trx: Tx): AnalyticsRepository {
    return new AnalyticsRepository(null, typed<AnalyticsTables>(trx));
  }

  /** true when bound to a transaction owned elsewhere. */
  get bound(): boolean {
    return this.#database === null;
  }

  /** Runs `fn` over one transaction (the bound one, with `inTransaction`). */
  async transaction<T>(fn: (repo: AnalyticsRepository) => Promise<T>): Promise<T> {
    if (!this.#database) return fn(this);
    return this.#db.transaction().execute((trx) => fn(new AnalyticsRepository(null, trx)));
  }

  /**
   * Savepoints of the bound transaction (the configuration apply's): one item's writes undone
   * alone when it fails (`ItemGuard` of `kernel/service/keyed-section.ts`).
   */
  async savepoint(name: string): Promise<void> {
    await sql`savepoint ${sql.raw(name)}`.execute(this.#db);
  }

  async releaseSavepoint(name: string): Promise<void> {
    await sql`release savepoint ${sql.raw(name)}`.execute(this.#db);
  }

  async rollbackToSavepoint(name: string): Promise<void> {
    await sql`rollback to savepoint ${sql.raw(name)}`.execute(this.#db);
    await sql`release savepoint ${sql.raw(name)}`.execute(this.#db);
  }

  /** The whole configuration (not the saved state). */
  async load(): Promise<AnalyticsContent> {
    const db = this.#db;
    return {
      workspaces: (await db.selectFrom('analytics_workspace').selectAll().execute()).map(workspaceOf),
      groups: (await db.selectFrom('analytics_group').selectAll().execute()).map(groupOf),
      instances: (await db.selectFrom('analytics_instance').selectAll().orderBy('id').execute()).map(
        instanceOf,
      ),
      variables: (await db.selectFrom('analytics_variable').selectAll().execute()).map((r) => ({
        name: r.name,
        value: JSON.parse(r.value) as unknown,
        updatedAt: Number(r.updated_at),
      })),
      componentVariables: (await db.selectFrom('analytics_component_variable').selectAll().execute()).map(
        (r) => ({
          component: r.component,
          name: r.name,
          value: JSON.parse(r.value) as unknown,
          updatedAt: Number(r.updated_at),
        }),
      ),
    };
  }

  // --- workspaces

  async insertWorkspace(w: Workspace): Promise<void> {
    await this.#db
      .insertInto('analytics_workspace')
      .values({
        id: w.id,
        name: w.name,
        description: w.description,
        created_at: w.createdAt,
        updated_at: w.updatedAt,
      })
      .execute();
  }

  async updateWorkspace(w: Workspace): Promise<void> {
    await this.#db
      .updateTable('analytics_workspace')
      .set({ name: w.name, description: w.description, updated_at: w.updatedAt })
      .where('id', '=', w.id)
      .execute();
  }

  async deleteWorkspace(id: string): Promise<void> {
    await this.#db.deleteFrom('analytics_workspace').where('id', '=', id).execute();
  }

  // --- groups

  async insertGroup(g: Group): Promise<void> {
    await this.#db
      .insertInto('analytics_group')
      .values({
        id: g.id,
        workspace_id: g.workspaceId,
        name: g.name,
        description: g.description,
        created_at: g.createdAt,
        updated_at: g.updatedAt,
      })
      .execute();
  }

  async updateGroup(g: Group): Promise<void> {
    await this.#db
      .updateTable('analytics_group')
      .set({ name: g.name, description: g.description, updated_at: g.updatedAt })
      .where('id', '=', g.id)
      .execute();
  }

  async deleteGroups(ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += CHUNK)
      await this.#db
        .deleteFrom('analytics_group')
        .where('id', 'in', ids.slice(i, i + CHUNK))
        .execute();
  }

  // --- processor instances

  async insertInstance(i: Instance): Promise<void> {
    await this.#db.insertInto('analytics_instance').values(instanceRow(i)).execute();
  }

  async updateInstance(i: Instance): Promise<void> {
    const { id, ...set } = instanceRow(i);
    await this.#db.updateTable('analytics_instance').set(set).where('id', '=', id).execute();
  }

  async deleteInstances(ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += CHUNK)
      await this.#db
        .deleteFrom('analytics_instance')
        .where('id', 'in', ids.slice(i, i + CHUNK))
        .execute();
  }

  /** Moves instances into a group (or out of any: null). */
  async setGroup(ids: readonly string[], groupId: string | null, now: number): Promise<void> {
    for (let i = 0; i < ids.length; i += CHUNK)
      await this.#db
        .updateTable('analytics_instance')
        .set({ group_id: groupId, updated_at: now })
        .where('id', 'in', ids.slice(i, i + CHUNK))
        .execute();
  }

  /** Sets the canvas positions of instances, in one transaction. */
  async setPositions(list: ReadonlyArray<{ id: string; x: number; y: number }>, now: number): Promise<void> {
    await this.transaction(async (repo) => {
      for (const p of list)
        await repo.#db
          .updateTable('analytics_instance')
          .set({ position_x: p.x, position_y: p.y, updated_at: now })
          .where('id', '=', p.id)
          .execute();
    });
  }

  // --- variables

  async upsertVariable(v: Variable): Promise<void> {
    const value = JSON.stringify(v.value ?? null);
    await this.#db
      .insertInto('analytics_variable')
      .values({ name: v.name, value, updated_at: v.updatedAt })
      .onConflict((oc) => oc.column('name').doUpdateSet({ value, updated_at: v.updatedAt }))
      .execute();
  }

  async deleteVariable(name: string): Promise<void> {
    await this.#db.deleteFrom('analytics_variable').where('name', '=', name).execute();
  }

  async upsertComponentVariable(v: ComponentVariable): Promise<void> {
    const value = JSON.stringify(v.value ?? null);
    await this.#db
      .insertInto('analytics_component_variable')
      .values({ component: v.component, name: v.name, value, updated_at: v.updatedAt })
      .onConflict((oc) => oc.columns(['component', 'name']).doUpdateSet({ value, updated_at: v.updatedAt }))
      .execute();
  }

  async deleteComponentVariable(component: string, name: string): Promise<void> {
    await this.#db
      .deleteFrom('analytics_component_variable')
      .where('component', '=', component)
      .where('name', '=', name)
      .execute();
  }

  // --- saved window state (the runtime's)

  async loadState(id: string): Promise<{ configKey: string; state: unknown } | undefined> {
    const row = await this.#db
      .selectFrom('analytics_state')
      .selectAll()
      .where('instance_id', '=', id)
      .executeTakeFirst();
    return row ? { configKey: row.config_key, state: JSON.parse(row.state) as unknown } : undefined;
  }

  /** Saves the state of several instances in one transaction. */
  async saveState(rows: readonly SavedState[], now = Date.now()): Promise<void> {
    await this.transaction(async (repo) => {
      for (const r of rows) {
        const values: StateRow = {
          instance_id: r.id,
          config_key: r.configKey,
          state: JSON.stringify(r.state),
          saved_at: now,
        };
        await repo.#db
          .insertInto('analytics_state')
          .values(values)
          .onConflict((oc) =>
            oc
              .column('instance_id')
              .doUpdateSet({ config_key: values.config_key, state: values.state, saved_at: now }),
          )
          .execute();
      }
    });
  }

  async removeState(id: string): Promise<void> {
    await this.#db.deleteFrom('analytics_state').where('instance_id', '=', id).execute();
  }
}
