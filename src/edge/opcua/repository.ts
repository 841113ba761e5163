/**
 * The OPC UA module's tables (`opcua_*`), private to it.
 *
 * `OpcuaRepository.inTransaction(trx)` is the same repository bound to a transaction that someone
 * else owns (the configuration apply's): every read and write goes through `trx`, and the writes
 * that take a transaction of their own (`saveNodes`, `commitStage`) run in it instead.
 */
import { typed, type Database, type Db, type Kysely, type Tx } from '../../kernel/db/index.js';
import { SettingsTable } from '../../kernel/db/settings.js';
import { DEFAULT_SETTINGS, type OpcuaNode, type ServerSettings, type SyncRun } from './types.js';

interface NodeRow {
  ref: string;
  parent_ref: string | null;
  kind: string;
  node_id: string;
  name: string;
  description: string;
  origin_id: string | null;
  data_type: string | null;
  access_control: string;
  version: number;
  sync_state: string;
  sync_failure_reason: string | null;
  position: number;
  updated_at: number | string;
}

const toRow = (n: OpcuaNode): NodeRow => ({
  ref: n.ref,
  parent_ref: n.parentRef,
  kind: n.kind,
  node_id: n.id,
  name: n.name,
  description: n.description,
  origin_id: n.originId,
  data_type: n.dataType,
  access_control: n.accessControl,
  version: n.version,
  sync_state: n.syncState,
  sync_failure_reason: n.syncFailureReason,
  position: n.position,
  updated_at: n.updatedAt,
});

const fromRow = (r: NodeRow): OpcuaNode => ({
  ref: r.ref,
  parentRef: r.parent_ref,
  kind: r.kind as OpcuaNode['kind'],
  id: r.node_id,
  name: r.name,
  description: r.description,
  originId: r.origin_id,
  dataType: r.data_type,
  accessControl: r.access_control as OpcuaNode['accessControl'],
  version: Number(r.version),
  syncState: r.sync_state as OpcuaNode['syncState'],
  syncFailureReason: r.sync_failure_reason,
  position: Number(r.position),
  updatedAt: Number(r.updated_at),
});

interface SyncRow {
  id: string;
  state: string;
  trigger: string;
  started_at: number | string;
  finished_at: number | string | null;
  added: number;
  removed: number;
  modified: number;
  error: string | null;
}

const syncFromRow = (r: SyncRow): SyncRun => ({
  id: r.id,
  state: r.state as SyncRun['state'],
  trigger: r.trigger as SyncRun['trigger'],
  startedAt: Number(r.started_at),
  finishedAt: r.finished_at === null ? null : Number(r.finished_at),
  added: Number(r.added),
  removed: Number(r.removed),
  modified: Number(r.modified),
  error: r.error,
});

/** The OPC UA module's tables as Kysely sees them (migrations/0001-create-opcua.ts). */
export interface OpcuaTables {
  opcua_node: NodeRow;
  opcua_sync: SyncRow;
  opcua_stage: { id: string; tree: string; node_count: number; created_at: number };
  opcua_user: { username: string; password_hash: string; created_at: number };
  opcua_setting: { key: string; value: string };
}

const CHUNK = 200;

export class OpcuaRepository {
  readonly #db: Kysely<OpcuaTables>;
  /** null: bound to a transaction owned elsewhere (`inTransaction`). */
  readonly #database: Database | null;
  readonly settings: SettingsTable;

  /** `trx`: bind to a transaction owned elsewhere; use `inTransaction` for that. */
  constructor(database: Database | null, trx?: Tx) {
    if (!database && !trx) throw new Error('OpcuaRepository needs a database or a transaction');
    this.#database = trx ? null : database;
    const db: Db = trx ?? database!.db;
    this.#db = typed<OpcuaTables>(db);
    this.settings = new SettingsTable(db, 'opcua_setting');
  }

  /** The repository bound to `trx` (see the file comment); `trx` is not committed here. */
  static inTransaction(trx: Tx): OpcuaRepository {
    return new OpcuaRepository(null, trx);
  }

  /** Runs `fn` in a transaction of its own, or in the bound one. */
  #transaction(fn: (trx: Kysely<OpcuaTables>) => Promise<void>): Promise<void> {
    return this.#database ? this.#db.transaction().execute(fn) : fn(this.#db);
  }

  /** The stored server settings over the defaults. */
  async loadSettings(): Promise<ServerSettings> {
    const stored = await this.settings.get('server');
    return { ...DEFAULT_SETTINGS, ...(stored ? (JSON.parse(stored) as object) : {}) };
  }

  async saveSettings(settings: ServerSettings): Promise<void> {
    await this.settings.put('server', JSON.stringify(settings));
  }

  async loadNodes(): Promise<OpcuaNode[]> {
    const rows = await this.#db.selectFrom('opcua_node').selectAll().execute();
    return rows.map(fromRow);
  }

  /** Writes upserted nodes and deletes removed ones in one transaction. */
  async saveNodes(upserts: readonly OpcuaNode[], deletes: readonly string[]): Promise<void> {
    if (upserts.length === 0 && deletes.length === 0) return;
    await this.#transaction(async (trx) => {
      for (let i = 0; i < deletes.length; i += CHUNK) {
        await trx
          .deleteFrom('opcua_node')
          .where('ref', 'in', deletes.slice(i, i + CHUNK))
          .execute();
      }
      for (let i = 0; i < upserts.length; i += CHUNK) {
        const rows = upserts.slice(i, i + CHUNK).map(toRow);
        await trx
          .insertInto('opcua_node')
          .values(rows)
          .onConflict((oc) =>
            oc.column('ref').doUpdateSet((eb) => ({
              parent_ref: eb.ref('excluded.parent_ref'),
              kind: eb.ref('excluded.kind'),
              node_id: eb.ref('excluded.node_id'),
              name: eb.ref('excluded.name'),
              description: eb.ref('excluded.description'),
              origin_id: eb.ref('excluded.origin_id'),
              data_type: eb.ref('excluded.data_type'),
              access_control: eb.ref('excluded.access_control'),
              version: eb.ref('excluded.version'),
              sync_state: eb.ref('excluded.sync_state'),
              sync_failure_reason: eb.ref('excluded.sync_failure_reason'),
              position: eb.ref('excluded.position'),
              updated_at: eb.ref('excluded.updated_at'),
            })),
          )
          .execute();
      }
    });
  }

  async saveSync(run: SyncRun): Promise<void> {
    const row = {
      id: run.id,
      state: run.state,
      trigger: run.trigger,
      started_at: run.startedAt,
      finished_at: run.finishedAt,
      added: run.added,
      removed: run.removed,
      modified: run.modified,
      error: run.error,
    };
    await this.#db
      .insertInto('opcua_sync')
      .values(row)
      .onConflict((oc) =>
        oc.column('id').doUpdateSet({
          state: row.state,
          finished_at: row.finished_at,
          added: row.added,
          removed: row.removed,
          modified: row.modified,
          error: row.error,
        }),
      )
      .execute();
  }

  async lastSync(): Promise<SyncRun | null> {
    const row = await this.#db
      .selectFrom('opcua_sync')
      .selectAll()
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? syncFromRow(row) : null;
  }

  /** A sync that was running when the edge stopped never finishes: it is marked Failed. */
  async failInterruptedSyncs(now: number): Promise<void> {
    await this.#db
      .updateTable('opcua_sync')
      .set({ state: 'Failed', finished_at: now, error: 'the edge stopped during the sync' })
      .where('state', '=', 'Running')
      .execute();
  }

  async putStage(id: string, tree: unknown, nodeCount: number, now: number): Promise<void> {
    await this.#db
      .insertInto('opcua_stage')
      .values({ id, tree: JSON.stringify(tree), node_count: nodeCount, created_at: now })
      .execute();
  }

  async getStage(id: string): Promise<{ tree: unknown; nodeCount: number; createdAt: number } | null> {
    const row = await this.#db.selectFrom('opcua_stage').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return null;
    return {
      tree: JSON.parse(row.tree) as unknown,
      nodeCount: Number(row.node_count),
      createdAt: Number(row.created_at),
    };
  }

  async deleteStage(id: string): Promise<boolean> {
    const r = await this.#db.deleteFrom('opcua_stage').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Commits a staged tree: the node rows are replaced and the stage deleted, in one transaction. */
  async commitStage(id: string, upserts: readonly OpcuaNode[], deletes: readonly string[]): Promise<void> {
    await this.#transaction(async (trx) => {
      const r = await trx.deleteFrom('opcua_stage').where('id', '=', id).executeTakeFirst();
      if (Number(r.numDeletedRows) === 0) throw new Error(`staged hierarchy ${id} is gone`);
      for (let i = 0; i < deletes.length; i += CHUNK) {
        await trx
          .deleteFrom('opcua_node')
          .where('ref', 'in', deletes.slice(i, i + CHUNK))
          .execute();
      }
      for (let i = 0; i < upserts.length; i += CHUNK) {
        const refs = upserts.slice(i, i + CHUNK).map((n) => n.ref);
        await trx.deleteFrom('opcua_node').where('ref', 'in', refs).execute();
        await trx
          .insertInto('opcua_node')
          .values(upserts.slice(i, i + CHUNK).map(toRow))
          .execute();
      }
    });
  }

  async users(): Promise<Array<{ username: string; createdAt: number }>> {
    const rows = await this.#db
      .selectFrom('opcua_user')
      .select(['username', 'created_at'])
      .orderBy('username')
      .execute();
    return rows.map((r) => ({ username: r.username, createdAt: Number(r.created_at) }));
  }

  async userHash(username: string): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom('opcua_user')
      .select('password_hash')
      .where('username', '=', username)
      .executeTakeFirst();
    return row?.password_hash;
  }

  async putUser(username: string, hash: string, now: number): Promise<void> {
    await this.#db
      .insertInto('opcua_user')
      .values({ username, password_hash: hash, created_at: now })
      .onConflict((oc) => oc.column('username').doUpdateSet({ password_hash: hash }))
      .execute();
  }

  async deleteUser(username: string): Promise<boolean> {
    const r = await this.#db.deleteFrom('opcua_user').where('username', '=', username).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }
}
