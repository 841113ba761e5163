/**
 * The OPC UA server's domain: the node tree (folders, devices, tags) with versions and sync
 * states, the sync with the DeviceHub (through its read model), uploads (direct and two-phase),
 * server settings and users. No GraphQL here; the node-opcua server is `UaServer` (server.ts),
 * attached when it runs.
 */
import type { Logger } from 'pino';
import { AppError, badRequest, conflict, notFound, ERRORS } from '../../kernel/errors.js';
import { hashPassword, verifyPassword } from '../../kernel/crypto.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { DevicehubReadModel, TagConfig } from '../devicehub/index.js';
import type { Tx } from '../../kernel/db/index.js';
import type { OpcuaRepository } from './repository.js';
import { DEVICEHUB_FOLDER } from './devicehub-sync.js';
import { DevicehubSync, type SyncHost } from './sync-runs.js';
import { checkId, hierarchyOf, MAX_DESCRIPTION, planUpload } from './hierarchy.js';
import { MAX_PAGE, NodeReads, page } from './node-reads.js';
import { resolveSettings } from './settings.js';
import { NodeTree } from './tree.js';
import {
  RESTART_SETTINGS,
  type AccessControl,
  type HierarchyInput,
  type HierarchyResult,
  type OpcuaEvent,
  type OpcuaNode,
  type ServerSettings,
  type SyncRun,
  type TreeChange,
} from './types.js';

export { DEVICEHUB_FOLDER, hierarchyOf, MAX_PAGE, page, resolveSettings };

/** Most nodes in one uploaded hierarchy. */
export const MAX_UPLOAD_NODES = 100_000;

/** What the service needs of the node-opcua server while it runs. */
export interface AddressSpaceSink {
  /** Brings the address space in line with the tree. */
  reconcile(tree: NodeTree): void;
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(ERRORS.conflict, message);
  }
}

export class OpcuaService extends NodeReads {
  readonly #repo: OpcuaRepository;
  readonly #readModel: DevicehubReadModel;
  readonly #log: Logger | undefined;
  #tree: NodeTree;
  #settings: ServerSettings;
  /** Settings as the running server was started with (for RestartRequired). */
  #startedSettings: ServerSettings;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #listeners = new Set<(e: OpcuaEvent) => void>();
  #sink: AddressSpaceSink | null = null;
  readonly #sync: DevicehubSync;
  #unsubscribe: () => void;

  private constructor(
    repo: OpcuaRepository,
    readModel: DevicehubReadModel,
    nodes: OpcuaNode[],
    settings: ServerSettings,
    lastSync: SyncRun | null,
    logger?: Logger,
  ) {
    super();
    this.#repo = repo;
    this.#readModel = readModel;
    this.#log = logger;
    this.#tree = new NodeTree(nodes);
    this.#settings = settings;
    this.#startedSettings = settings;
    // The sync runs see the service through this host: its tree, its queue, commits and events.
    const host: SyncHost = {
      tree: () => this.#tree,
      autoSync: () => this.#settings.autoSync,
      setAutoSync: async (on) => void (await this.updateSettings({ autoSync: on })),
      exclusive: (fn) => this.#exclusive(fn),
      commit: (reason, upserts, removed, added, modified) =>
        this.#commit(reason, upserts, removed, added, modified),
      saveStates: async (changed) => {
        await this.#repo.saveNodes(changed, []);
        this.#sink?.reconcile(this.#tree);
      },
      emit: (e) => this.#emit(e),
    };
    this.#sync = new DevicehubSync(host, repo, readModel, lastSync, logger);
    this.#unsubscribe = readModel.onChange((c) => this.#sync.onDevicehubChange(c));
  }

  static async open(
    repo: OpcuaRepository,
    readModel: DevicehubReadModel,
    logger?: Logger,
  ): Promise<OpcuaService> {
    await repo.failInterruptedSyncs(Date.now());
    const settings = await repo.loadSettings();
    return new OpcuaService(repo, readModel, await repo.loadNodes(), settings, await repo.lastSync(), logger);
  }

  close(): void {
    this.#sync.close();
    this.#unsubscribe();
    this.#listeners.clear();
  }

  // --- events and the address space

  onEvent(listener: (e: OpcuaEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(e: OpcuaEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch (err) {
        this.#log?.warn({ err }, 'opcua event listener failed');
      }
    }
  }

  /** Attaches the running server (null: detaches); it is brought in line with the tree at once. */
  attach(sink: AddressSpaceSink | null): void {
    this.#sink = sink;
    sink?.reconcile(this.#tree);
    this.#startedSettings = this.#settings;
  }

  override get tree(): NodeTree {
    return this.#tree;
  }

  /** Runs `fn` after every earlier mutation finished (one mutation at a time). */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Persists and publishes a tree change made in memory. */
  async #commit(
    reason: TreeChange['reason'],
    upserts: OpcuaNode[],
    removed: OpcuaNode[],
    added: string[],
    modified: string[],
  ): Promise<void> {
    await this.#repo.saveNodes(
      upserts,
      removed.map((n) => n.ref),
    );
    this.#sink?.reconcile(this.#tree);
    if (added.length + removed.length + modified.length > 0) {
      this.#emit({
        type: 'tree',
        change: { reason, added, removed: removed.map((n) => n.ref), modified },
      });
    }
  }

  // --- node mutations

  #check(node: OpcuaNode, expectedVersion: number | null | undefined): void {
    if (expectedVersion !== null && expectedVersion !== undefined && expectedVersion !== node.version) {
      throw new ConflictError(
        `node ${node.ref} is at version ${node.version}, not ${expectedVersion}: read it again and retry`,
      );
    }
  }

  /** The one node with this ID (and origin, when given); several or none is an error. */
  #byId(id: string, originId: string | null | undefined): OpcuaNode {
    let hits = this.nodesById([id]);
    if (originId) hits = hits.filter((n) => n.originId === originId);
    if (hits.length === 0) {
      throw notFound(
        `no node with ID ${JSON.stringify(id)}${originId ? ` and origin ${JSON.stringify(originId)}` : ''}`,
      );
    }
    if (hits.length > 1) {
      throw new ConflictError(
        `${hits.length} nodes have ID ${JSON.stringify(id)}${originId ? ` and origin ${JSON.stringify(originId)}` : ''}: give originId or use the ByRef operation (references: ${hits.map((n) => n.ref).join(', ')})`,
      );
    }
    return hits[0]!;
  }

  updateNodeByRef(input: {
    Ref: string;
    ExpectedVersion?: number | null;
    ID?: string | null;
    Name?: string | null;
    Description?: string | null;
    AccessControl?: AccessControl | null;
  }): Promise<OpcuaNode> {
    return this.#exclusive(async () => this.#update(this.node(input.Ref), input));
  }

  updateNode(
    input: {
      ID: string;
      ExpectedVersion?: number | null;
      Name?: string | null;
      Description?: string | null;
      AccessControl?: AccessControl | null;
    },
    originId: string | null | undefined,
  ): Promise<OpcuaNode> {
    return this.#exclusive(async () =>
      this.#update(this.#byId(input.ID, originId), { ...input, ID: undefined }),
    );
  }

  async #update(
    node: OpcuaNode,
    input: {
      ExpectedVersion?: number | null;
      ID?: string | null | undefined;
      Name?: string | null;
      Description?: string | null;
      AccessControl?: AccessControl | null;
    },
  ): Promise<OpcuaNode> {
    this.#check(node, input.ExpectedVersion);
    const next = { ...node };
    if (input.ID !== null && input.ID !== undefined && input.ID !== node.id) {
      next.id = checkId(input.ID);
      const sibling = this.#tree.child(node.parentRef, next.id);
      if (sibling) throw new ConflictError(`a sibling node already has ID ${JSON.stringify(next.id)}`);
    }
    if (input.Name !== null && input.Name !== undefined) next.name = checkId(input.Name, 'Name');
    if (input.Description !== null && input.Description !== undefined) {
      if (input.Description.length > MAX_DESCRIPTION)
        throw badRequest(`Description is longer than ${MAX_DESCRIPTION} characters`);
      next.description = input.Description;
    }
    if (input.AccessControl) {
      if (node.kind !== 'Tag')
        throw badRequest(`AccessControl applies to tags; node ${node.ref} is a ${node.kind}`);
      next.accessControl = input.AccessControl;
    }
    const changed =
      next.id !== node.id ||
      next.name !== node.name ||
      next.description !== node.description ||
      next.accessControl !== node.accessControl;
    if (!changed) return node;
    next.version = node.version + 1;
    next.updatedAt = Date.now();
    this.#tree.put(next);
    await this.#commit('Update', [next], [], [], [next.ref]);
    return next;
  }

  deleteNodeByRef(ref: string, expectedVersion: number | null | undefined): Promise<boolean> {
    return this.#exclusive(async () => {
      const node = this.node(ref);
      this.#check(node, expectedVersion);
      await this.#delete(node);
      return true;
    });
  }

  deleteNode(id: string, originId: string | null | undefined, expectedVersion: number | null | undefined) {
    return this.#exclusive(async () => {
      const node = this.#byId(id, originId);
      this.#check(node, expectedVersion);
      await this.#delete(node);
      return true;
    });
  }

  async #delete(node: OpcuaNode): Promise<void> {
    const removed = this.#tree.removeSubtree(node.ref);
    await this.#commit('Delete', [], removed, [], []);
  }

  bulkUpdateTagAccessControl(refs: readonly string[], access: AccessControl): Promise<OpcuaNode[]> {
    return this.#exclusive(async () => {
      const nodes = refs.map((r) => this.node(r));
      for (const n of nodes) {
        if (n.kind !== 'Tag') throw badRequest(`node ${n.ref} is a ${n.kind}: AccessControl applies to tags`);
      }
      const now = Date.now();
      const changed: OpcuaNode[] = [];
      for (const n of nodes) {
        if (n.accessControl === access) continue;
        const next = { ...n, accessControl: access, version: n.version + 1, updatedAt: now };
        this.#tree.put(next);
        changed.push(next);
      }
      await this.#commit(
        'AccessControl',
        changed,
        [],
        [],
        changed.map((n) => n.ref),
      );
      return nodes.map((n) => this.#tree.get(n.ref)!);
    });
  }

  // --- hierarchy uploads

  /** Replaces the tree with an uploaded hierarchy; nodes keep their reference where their path stays. */
  uploadHierarchy(nodes: HierarchyInput[]): Promise<HierarchyResult> {
    return this.#exclusive(async () => {
      const origins = await this.#origins(nodes);
      const plan = planUpload(nodes, origins, this.#tree);
      this.#tree = plan.tree;
      await this.#commit('Upload', plan.upserts, plan.removed, plan.added, plan.modified);
      return plan.result;
    });
  }

  /** The tree as an uploadable hierarchy (what UploadHierarchy takes). */
  exportHierarchy(): HierarchyInput[] {
    return hierarchyOf(this.#tree);
  }

  /**
   * What uploading `nodes` over the tree of `base` (nodes read in a configuration apply's
   * transaction `trx`, where the origins are read too) writes: the rules are those of an upload.
   * Changes nothing here.
   */
  async planHierarchy(
    base: readonly OpcuaNode[],
    nodes: HierarchyInput[],
    trx: Tx,
  ): Promise<{ upserts: OpcuaNode[]; deletes: string[] }> {
    const reader = this.#readModel.inTransaction?.(trx) ?? this.#readModel;
    const plan = planUpload(nodes, await this.#origins(nodes, reader), new NodeTree([...base]));
    return { upserts: plan.upserts, deletes: plan.removed.map((n) => n.ref) };
  }

  /**
   * Reads the tree and the settings again from the database (after a configuration template was
   * applied in a transaction of its own): the running address space follows the tree, the
   * settings that apply live are applied, and those that need a restart stay pending
   * (`restartPending`, RestartRequired).
   */
  reload(): Promise<void> {
    return this.#exclusive(async () => {
      const [nodes, settings] = [await this.#repo.loadNodes(), await this.#repo.loadSettings()];
      const old = this.#tree;
      const tree = new NodeTree(nodes);
      const added: string[] = [];
      const modified: string[] = [];
      for (const n of tree.all()) {
        const was = old.get(n.ref);
        if (!was) added.push(n.ref);
        else if (JSON.stringify(was) !== JSON.stringify(n)) modified.push(n.ref);
      }
      const removed = [...old.all()].filter((n) => !tree.get(n.ref)).map((n) => n.ref);
      this.#tree = tree;
      this.#sink?.reconcile(this.#tree);
      if (added.length + removed.length + modified.length > 0)
        this.#emit({ type: 'tree', change: { reason: 'Template', added, removed, modified } });
      if (JSON.stringify(settings) !== JSON.stringify(this.#settings)) {
        this.#settings = settings;
        this.#emitSettings?.(settings);
      }
    });
  }

  /** Checks a hierarchy as an upload would, changing nothing; answers the problem or null. */
  async checkHierarchy(nodes: HierarchyInput[]): Promise<string | null> {
    try {
      planUpload(nodes, await this.#origins(nodes), this.#tree);
      return null;
    } catch (err) {
      return errorText(err);
    }
  }

  /** Stages a hierarchy (validated, invisible to clients); answers its ID. */
  async stageHierarchy(
    nodes: HierarchyInput[],
  ): Promise<{ id: string; nodeCount: number; createdAt: number }> {
    const origins = await this.#origins(nodes);
    const plan = planUpload(nodes, origins, this.#tree); // validates now, so that a commit cannot fail on input
    const id = uuidv7();
    const createdAt = Date.now();
    await this.#repo.putStage(id, nodes, plan.tree.size, createdAt);
    return { id, nodeCount: plan.tree.size, createdAt };
  }

  /** Commits a staged hierarchy: the tree is replaced at once, in one transaction. */
  commitStagedHierarchy(id: string): Promise<HierarchyResult> {
    return this.#exclusive(async () => {
      const stage = await this.#repo.getStage(id);
      if (!stage) throw notFound(`no staged hierarchy ${JSON.stringify(id)}`);
      const nodes = stage.tree as HierarchyInput[];
      const plan = planUpload(nodes, await this.#origins(nodes), this.#tree);
      await this.#repo.commitStage(
        id,
        plan.tree.ordered(),
        plan.removed.map((n) => n.ref),
      );
      this.#tree = plan.tree;
      this.#sink?.reconcile(this.#tree);
      this.#emit({
        type: 'tree',
        change: {
          reason: 'Commit',
          added: plan.added,
          removed: plan.removed.map((n) => n.ref),
          modified: plan.modified,
        },
      });
      return plan.result;
    });
  }

  async cancelStagedHierarchy(id: string): Promise<boolean> {
    if (!(await this.#repo.deleteStage(id))) throw notFound(`no staged hierarchy ${JSON.stringify(id)}`);
    return true;
  }

  /** The DeviceHub devices and tags an uploaded hierarchy names as origins. */
  async #origins(nodes: HierarchyInput[], reader: DevicehubReadModel = this.#readModel) {
    const deviceIds = new Set<string>();
    const tagIds = new Set<string>();
    let count = 0;
    const walk = (list: HierarchyInput[]) => {
      for (const n of list) {
        if (++count > MAX_UPLOAD_NODES) throw badRequest(`a hierarchy has at most ${MAX_UPLOAD_NODES} nodes`);
        if (n.OriginID) (n.Kind === 'Tag' ? tagIds : deviceIds).add(n.OriginID);
        if (n.Children) walk(n.Children);
      }
    };
    walk(nodes);
    const [devices, tags] = await Promise.all([
      deviceIds.size ? reader.devices([...deviceIds]) : Promise.resolve([]),
      reader.tags([...tagIds]),
    ]);
    return { devices: new Set(devices.map((d) => d.id)), tags: new Map(tags.map((t) => [t.id, t])) };
  }

  // --- sync with the DeviceHub (sync-runs.ts)

  get currentSync(): SyncRun | null {
    return this.#sync.current;
  }

  get runningSync(): SyncRun | null {
    return this.#sync.running;
  }

  syncStatus() {
    const counts: Record<OpcuaNode['syncState'], number> = {
      Local: 0,
      Synced: 0,
      Pending: 0,
      Orphaned: 0,
      Failed: 0,
    };
    for (const n of this.#tree.all()) counts[n.syncState]++;
    return {
      autoSync: this.#settings.autoSync,
      running: this.#sync.running !== null,
      last: this.#sync.last,
      counts,
    };
  }

  /**
   * Starts a sync (or answers the one running). It runs in the background; `done` answers when it
   * ended. `autoSync` (when given) turns following DeviceHub changes on or off.
   */
  sync(options: { autoSync?: boolean | null; trigger?: SyncRun['trigger'] } = {}) {
    return this.#sync.start(options);
  }

  // --- settings and users

  get settings(): ServerSettings {
    return { ...this.#settings };
  }

  /** Settings as the running server uses them. */
  get startedSettings(): ServerSettings {
    return { ...this.#startedSettings };
  }

  /** Keys whose stored value differs from the one the running server started with. */
  restartPending(): Array<keyof ServerSettings> {
    return RESTART_SETTINGS.filter(
      (k) => JSON.stringify(this.#settings[k]) !== JSON.stringify(this.#startedSettings[k]),
    );
  }

  async updateSettings(input: Partial<ServerSettings>): Promise<{
    settings: ServerSettings;
    restartRequired: boolean;
    pending: Array<keyof ServerSettings>;
  }> {
    const next = resolveSettings(this.#settings, input);
    this.#settings = next;
    await this.#repo.saveSettings(next);
    this.#emitSettings?.(next);
    const pending = this.restartPending();
    return { settings: { ...next }, restartRequired: pending.length > 0, pending };
  }

  /** Called with new settings, to apply what applies live (set by the running server). */
  #emitSettings: ((s: ServerSettings) => void) | undefined;
  onSettings(fn: ((s: ServerSettings) => void) | undefined): void {
    this.#emitSettings = fn;
  }

  users() {
    return this.#repo.users();
  }

  async setUser(username: string, password: string): Promise<void> {
    checkId(username, 'Username');
    if (typeof password !== 'string' || password.length < 8 || password.length > 256)
      throw badRequest('Password must have 8 to 256 characters');
    await this.#repo.putUser(username, await hashPassword(password), Date.now());
  }

  async deleteUser(username: string): Promise<boolean> {
    if (!(await this.#repo.deleteUser(username)))
      throw notFound(`no OPC UA user ${JSON.stringify(username)}`);
    return true;
  }

  async checkUser(username: string, password: string): Promise<boolean> {
    const hash = await this.#repo.userHash(username);
    return hash !== undefined && (await verifyPassword(password, hash));
  }

  /** The DeviceHub tag a tag node follows (for writes). */
  async originTag(tagId: string): Promise<TagConfig | undefined> {
    return (await this.#readModel.tags([tagId]))[0];
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export { conflict };
