/**
 * The sync of the OPC UA tree with the DeviceHub: manual and automatic runs (one at a time, in
 * the service's queue of mutations, recorded in the repository), and, with automatic sync off,
 * the sync states of the nodes whose DeviceHub origin changed. The service hands it a host: its
 * tree, its queue, its commit and its events.
 */
import type { Logger } from 'pino';
import { uuidv7 } from '../../kernel/ids.js';
import type { DevicehubChange, DevicehubReadModel } from '../devicehub/index.js';
import { syncDevicehubFolder } from './devicehub-sync.js';
import type { OpcuaRepository } from './repository.js';
import type { NodeTree } from './tree.js';
import type { OpcuaEvent, OpcuaNode, SyncRun, TreeChange } from './types.js';

/** Wait after a DeviceHub change before an automatic sync (changes in a burst make one sync). */
const AUTO_SYNC_DELAY_MS = 200;

/** What a sync needs of the OPC UA service. */
export interface SyncHost {
  /** The service's tree (it is replaced by a reload: read it each time). */
  tree(): NodeTree;
  autoSync(): boolean;
  setAutoSync(on: boolean): Promise<void>;
  /** Runs `fn` after every earlier mutation of the tree finished. */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** Persists and publishes a tree change made in memory. */
  commit(
    reason: TreeChange['reason'],
    upserts: OpcuaNode[],
    removed: OpcuaNode[],
    added: string[],
    modified: string[],
  ): Promise<void>;
  /** Persists nodes whose sync state changed and brings the address space in line. */
  saveStates(changed: OpcuaNode[]): Promise<void>;
  emit(e: OpcuaEvent): void;
}

export class DevicehubSync {
  readonly #host: SyncHost;
  readonly #repo: OpcuaRepository;
  readonly #readModel: DevicehubReadModel;
  readonly #log: Logger | undefined;
  #current: SyncRun | null = null;
  #last: SyncRun | null;
  /** The end of the run in progress. */
  #running: Promise<SyncRun> | undefined;
  /** A DeviceHub change arrived (auto-sync) while a sync ran: one more sync follows it. */
  #resyncAfter = false;
  #autoTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    host: SyncHost,
    repo: OpcuaRepository,
    readModel: DevicehubReadModel,
    last: SyncRun | null,
    logger?: Logger,
  ) {
    this.#host = host;
    this.#repo = repo;
    this.#readModel = readModel;
    this.#last = last;
    this.#log = logger;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#autoTimer);
  }

  /** The run in progress, else the last one. */
  get current(): SyncRun | null {
    return this.#current ?? this.#last;
  }

  get running(): SyncRun | null {
    return this.#current;
  }

  get last(): SyncRun | null {
    return this.#last;
  }

  /**
   * Starts a sync (or answers the one running). It runs in the background; `wait` answers when it
   * ended. `autoSync` (when given) turns following DeviceHub changes on or off.
   */
  async start(options: { autoSync?: boolean | null; trigger?: SyncRun['trigger'] } = {}): Promise<{
    run: SyncRun;
    done: Promise<SyncRun>;
  }> {
    if (
      options.autoSync !== null &&
      options.autoSync !== undefined &&
      options.autoSync !== this.#host.autoSync()
    ) {
      await this.#host.setAutoSync(options.autoSync);
    }
    if (this.#current) return { run: this.#current, done: this.#running! };
    const run: SyncRun = {
      id: uuidv7(),
      state: 'Running',
      trigger: options.trigger ?? 'Manual',
      startedAt: Date.now(),
      finishedAt: null,
      added: 0,
      removed: 0,
      modified: 0,
      error: null,
    };
    this.#current = run;
    // The promise is there before the first await, for a second caller that finds this run.
    const saved = this.#repo.saveSync(run).then(() => this.#host.emit({ type: 'sync', run: { ...run } }));
    const running = saved
      .then(() => this.#host.exclusive(() => this.#runSync(run)))
      .catch(async (err: unknown) => {
        // The Running row could not be saved: the run fails without touching the tree.
        Object.assign(run, { state: 'Failed', finishedAt: Date.now(), error: errorText(err) });
        this.#current = null;
        this.#last = { ...run };
        this.#host.emit({ type: 'sync', run: { ...run } });
        return { ...run };
      })
      .finally(() => {
        this.#running = undefined;
        if (this.#resyncAfter && !this.#closed) {
          this.#resyncAfter = false;
          void this.start({ trigger: 'Auto' }).catch((err: unknown) =>
            this.#log?.warn({ err }, 'opcua automatic sync failed'),
          );
        }
      });
    this.#running = running;
    await saved.catch(() => undefined);
    return { run: { ...run }, done: running };
  }

  async #runSync(run: SyncRun): Promise<SyncRun> {
    try {
      const counts = await this.#syncTree();
      Object.assign(run, counts, { state: 'Succeeded', finishedAt: Date.now() });
    } catch (err) {
      this.#log?.error({ err }, 'opcua sync failed');
      Object.assign(run, { state: 'Failed', finishedAt: Date.now(), error: errorText(err) });
    }
    this.#current = null;
    this.#last = { ...run };
    if (!this.#closed) {
      await this.#repo
        .saveSync(run)
        .catch((err: unknown) => this.#log?.warn({ err }, 'opcua sync not saved'));
      this.#host.emit({ type: 'sync', run: { ...run } });
    }
    return { ...run };
  }

  /** Builds or refreshes the DeviceHub part of the tree; answers the counts. */
  async #syncTree(): Promise<{ added: number; removed: number; modified: number }> {
    const devices = await this.#readModel.devices();
    const tags = await this.#readModel.tagsOfDevices(devices.map((d) => d.id));
    const tree = this.#host.tree();
    const { upserts, removed, added, modified, stateChanged } = syncDevicehubFolder(tree, devices, tags);
    const removedRefs = new Set(removed.map((n) => n.ref));
    await this.#host.commit(
      'Sync',
      upserts.filter((n) => !removedRefs.has(n.ref) && tree.get(n.ref) === n),
      removed,
      added.filter((r) => !removedRefs.has(r)),
      modified.filter((r) => !removedRefs.has(r)),
    );
    for (const n of stateChanged)
      if (tree.get(n.ref)) this.#host.emit({ type: 'node-state', node: tree.get(n.ref)! });
    return { added: added.length, removed: removed.length, modified: modified.length };
  }

  /** A DeviceHub change: an automatic sync soon (auto-sync), else the nodes' sync states. */
  onDevicehubChange(change: DevicehubChange): void {
    if (this.#closed) return;
    if (this.#host.autoSync()) {
      clearTimeout(this.#autoTimer);
      this.#autoTimer = setTimeout(() => {
        // A running sync may have read the DeviceHub before this change: sync again after it.
        if (this.#current) {
          this.#resyncAfter = true;
          return;
        }
        void this.start({ trigger: 'Auto' }).catch((err: unknown) =>
          this.#log?.warn({ err }, 'opcua automatic sync failed'),
        );
      }, AUTO_SYNC_DELAY_MS);
      return;
    }
    void this.#host
      .exclusive(() => this.#markPending(change))
      .catch((err: unknown) => this.#log?.warn({ err }, 'opcua sync states not updated'));
  }

  /** Without auto-sync: nodes whose origin changed are Pending, those whose origin is gone Orphaned. */
  async #markPending(change: DevicehubChange): Promise<void> {
    const deviceIds = new Set(change.devices);
    const tagIds = new Set(change.tags.map((t) => t.id));
    const touched = [...this.#host.tree().all()].filter(
      (n) =>
        n.originId &&
        ((n.kind === 'Device' && deviceIds.has(n.originId)) || (n.kind === 'Tag' && tagIds.has(n.originId))),
    );
    // Tags of a changed device: their subjects follow the device's name.
    const underDevice = [...this.#host.tree().all()].filter((n) => {
      if (n.kind !== 'Tag' || !n.originId || tagIds.has(n.originId)) return false;
      const parent = n.parentRef ? this.#host.tree().get(n.parentRef) : undefined;
      return parent?.kind === 'Device' && parent.originId !== null && deviceIds.has(parent.originId);
    });
    if (touched.length + underDevice.length === 0) return;
    const [devices, tags] = await Promise.all([
      this.#readModel.devices([...deviceIds]),
      this.#readModel.tags([...tagIds]),
    ]);
    const liveDevices = new Set(devices.map((d) => d.id));
    const liveTags = new Set(tags.map((t) => t.id));
    const changed: OpcuaNode[] = [];
    for (const n of [...touched, ...underDevice]) {
      const alive =
        n.kind === 'Device'
          ? liveDevices.has(n.originId!)
          : liveTags.has(n.originId!) || !tagIds.has(n.originId!);
      const state = alive ? 'Pending' : 'Orphaned';
      if (n.syncState === state) continue;
      const next: OpcuaNode = {
        ...n,
        syncState: state,
        syncFailureReason: alive
          ? null
          : `DeviceHub ${n.kind === 'Tag' ? 'tag' : 'device'} ${n.originId} was deleted`,
      };
      this.#host.tree().put(next);
      changed.push(next);
    }
    await this.#host.saveStates(changed);
    for (const n of changed) this.#host.emit({ type: 'node-state', node: n });
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
