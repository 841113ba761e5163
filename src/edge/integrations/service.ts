/**
 * The integration domain: the provider catalogue, instances and their subscriptions (stored),
 * and one running `InstanceRunner` per instance with its disk queue. Any change to an instance or
 * its subscriptions restarts its runner; the queue file stays (only deleting the instance deletes
 * it). Plain classes: no GraphQL here.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { badRequest, conflict, notFound } from '../../kernel/errors.js';
import { parseListInput, runList, type ListDefinition, type ListInput } from '../../kernel/paging.js';
import type { DataHub } from '../datahub/index.js';
import { isValidPattern, isValidSubject } from '../datahub/index.js';
import { findProvider, PROVIDERS, UUID_PATTERN, type ProviderDef, type Transport } from './catalogue.js';
import type { ConnectorFactory } from './connectors/types.js';
import { DiskQueue, type QueueFullPolicy } from './queue.js';
import { IntegrationsRepository, type InstanceRow, type SubscriptionRow } from './repository.js';
import { InstanceRunner, type RunnerSubscription } from './runner.js';
import type {
  CreateInstanceRequest,
  CreateSubscriptionRequest,
  InstanceView,
  QueueView,
  StatusView,
  SubscriptionView,
  UpdateInstanceRequest,
  UpdateSubscriptionRequest,
} from './shapes.js';
import { maskSecrets, validateConfig, type InstanceConfig } from './validation.js';

export type * from './shapes.js';

/** Most instances on one edge. */
export const MAX_INSTANCES = 200;
/** Most subscriptions of one instance. */
export const MAX_SUBSCRIPTIONS = 1000;
/** Longest name, local name or remote name. */
export const MAX_NAME = 1024;

const INSTANCE_LIST: ListDefinition = {
  fields: {
    Name: 'name',
    ProviderID: 'provider_id',
    Description: 'description',
    Enabled: { column: 'enabled', type: 'boolean' },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'Name', order: 'asc' }],
};

const SUBSCRIPTION_LIST: ListDefinition = {
  fields: {
    LocalName: 'local_name',
    RemoteName: 'remote_name',
    Description: 'description',
    Enabled: { column: 'enabled', type: 'boolean' },
    IsLocalToRemote: { column: 'is_local_to_remote', type: 'boolean' },
  },
  tiebreak: 'id',
  defaultSort: [{ field: 'LocalName', order: 'asc' }],
};

const iso = (ms: number) => new Date(ms).toISOString();

function text(value: string | null | undefined, field: string, required: boolean): string {
  const v = (value ?? '').trim();
  if (required && v === '') throw badRequest(`${field} is required`);
  if (v.length > MAX_NAME) throw badRequest(`${field} is longer than ${MAX_NAME} characters`);
  return v;
}

function checkUuid(id: string, field: string): void {
  if (!UUID_PATTERN.test(id)) throw badRequest(`${field} must be a UUID, got ${JSON.stringify(id)}`);
}

/**
 * The rules of a subscription of an instance of `provider` (its direction, names and transport);
 * a broken one throws a 400 that says which.
 */
export function checkSubscription(
  provider: ProviderDef,
  row: Pick<SubscriptionRow, 'is_local_to_remote' | 'local_name' | 'remote_name'>,
): void {
  const local = row.local_name;
  const remote = row.remote_name;
  if (row.is_local_to_remote === 1) {
    if (!isValidPattern(local)) {
      throw badRequest(
        `LocalName "${local}" is not a DataHub subject pattern (tokens separated by ".", "*" or ">" as whole tokens)`,
      );
    }
    if ((provider.transport === 'mqtt' || provider.transport === 'sparkplug') && /[+#]/.test(remote)) {
      throw badRequest(`RemoteName "${remote}": a local-to-remote MQTT topic has no wildcards (+, #)`);
    }
    if (
      (provider.transport === 'postgres' || provider.transport === 'mysql') &&
      !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(remote)
    ) {
      throw badRequest(
        `RemoteName "${remote}": a table name is letters, digits and _ (at most 63), not starting with a digit`,
      );
    }
  } else {
    if (!isValidSubject(local.replace(/\{topic\}/g, 'x'))) {
      throw badRequest(
        `LocalName "${local}" is not a DataHub subject (no wildcards; "{topic}" stands for the remote topic)`,
      );
    }
    if (
      provider.transport === 'postgres' ||
      provider.transport === 'mysql' ||
      provider.transport === 'http'
    ) {
      throw badRequest(`provider "${provider.name}" only sends data: IsLocalToRemote must be true`);
    }
  }
  if (remote === '') throw badRequest('RemoteName is required');
}

export interface IntegrationServiceOptions {
  repo: IntegrationsRepository;
  hub: DataHub;
  dataDir: string;
  logger: Logger;
  factories: Partial<Record<Transport, ConnectorFactory>>;
  /** The edge's trust store (`ConnectorContext.trustedCa`). */
  trustedCa?: () => string[] | undefined;
}

interface Running {
  runner: InstanceRunner;
  queue: DiskQueue;
  provider: ProviderDef;
  row: InstanceRow;
}

export class IntegrationService {
  readonly repo: IntegrationsRepository;
  readonly #o: IntegrationServiceOptions;
  readonly #running = new Map<string, Running>();
  /** Serialises changes per instance (a restart must not overlap another). */
  readonly #locks = new Map<string, Promise<unknown>>();
  #closed = false;

  constructor(options: IntegrationServiceOptions) {
    this.#o = options;
    this.repo = options.repo;
  }

  queuePath(instanceId: string): string {
    return join(this.#o.dataDir, 'integrations', `queue-${instanceId}.db`);
  }

  /** Starts every stored instance. */
  async start(): Promise<void> {
    for (const row of await this.repo.allInstances()) await this.#restart(row.id);
  }

  // --- providers

  listProviders(input: (ListInput & { IncludeHidden?: boolean | null }) | null | undefined): {
    Items: ProviderDef[];
    Total: number;
  } {
    let items = PROVIDERS.filter((p) => input?.IncludeHidden === true || !p.hidden);
    const filter = input?.Filter ?? {};
    for (const [field, cond] of Object.entries(filter)) {
      if (!cond) continue;
      const get = (p: ProviderDef): unknown =>
        field === 'Name'
          ? p.name
          : field === 'Group'
            ? p.group
            : field === 'IsExperimental'
              ? p.experimental
              : undefined;
      if (!['Name', 'Group', 'IsExperimental'].includes(field)) {
        throw badRequest(
          `Filter.${field} is not supported; ListProviders filters Name, Group, IsExperimental`,
        );
      }
      for (const [op, value] of Object.entries(cond)) {
        if (value === undefined || value === null) continue;
        items = items.filter((p) => {
          const v = get(p);
          if (op === 'Eq') return v === value;
          if (op === 'Ne') return v !== value;
          if (op === 'Contains') return String(v).toLowerCase().includes(String(value).toLowerCase());
          if (op === 'StartsWith') return String(v).toLowerCase().startsWith(String(value).toLowerCase());
          if (op === 'In') return (value as unknown[]).includes(v);
          throw badRequest(`Filter.${field}.${op} is not supported`);
        });
      }
    }
    const total = items.length;
    const offset = input?.Offset ?? 0;
    const limit = input?.Limit ?? 1000;
    if (offset < 0) throw badRequest(`Offset must be an integer of 0 or more, got ${offset}`);
    if (limit < 1 || limit > 1000) throw badRequest(`Limit must be an integer from 1 to 1000, got ${limit}`);
    return { Items: items.slice(offset, offset + limit), Total: total };
  }

  provider(id: string): ProviderDef {
    checkUuid(id, 'ProviderID');
    const p = findProvider(id);
    if (!p) throw notFound(`provider ${id} not found`);
    return p;
  }

  // --- instances

  #view(row: InstanceRow): InstanceView {
    const provider = findProvider(row.provider_id);
    return {
      ID: row.id,
      InstanceID: row.id,
      Name: row.name,
      ProviderID: row.provider_id,
      ProviderName: provider?.name ?? '',
      Config: maskSecrets(provider, JSON.parse(row.config) as InstanceConfig),
      Enabled: row.enabled === 1,
      ExecCommandEnabled: row.exec_command_enabled === 1,
      Description: row.description,
      CreationTime: iso(row.created_at),
      UpdateTime: iso(row.updated_at),
    };
  }

  async #row(id: string): Promise<InstanceRow> {
    checkUuid(id, 'InstanceID');
    const row = await this.repo.getInstance(id);
    if (!row) throw notFound(`integration instance ${id} not found`);
    return row;
  }

  async getInstance(id: string): Promise<InstanceView> {
    return this.#view(await this.#row(id));
  }

  async listInstances(
    input: ListInput | null | undefined,
  ): Promise<{ Items: InstanceView[]; Total: number }> {
    const spec = parseListInput(input, INSTANCE_LIST);
    const page = await runList(this.repo.database, this.repo.instanceListQuery(), INSTANCE_LIST, spec);
    return { Items: page.items.map((r) => this.#view(r)), Total: page.total };
  }

  async createInstance(input: CreateInstanceRequest): Promise<InstanceView> {
    const provider = this.provider(input.ProviderID);
    const name = text(input.Name, 'Name', true);
    const config = validateConfig(provider, input.Config);
    if ((await this.repo.countInstances()) >= MAX_INSTANCES) {
      throw badRequest(`an edge holds at most ${MAX_INSTANCES} integration instances`);
    }
    if (await this.repo.getInstanceByName(name))
      throw conflict(`an integration instance named "${name}" exists`);
    const now = Date.now();
    const row: InstanceRow = {
      id: randomUUID(),
      name,
      provider_id: provider.id,
      config: JSON.stringify(config),
      enabled: input.Enabled === false ? 0 : 1,
      exec_command_enabled: input.ExecCommandEnabled === true ? 1 : 0,
      description: text(input.Description, 'Description', false),
      created_at: now,
      updated_at: now,
    };
    await this.repo.insertInstance(row);
    this.#o.logger.info({ instance: row.id, name, provider: provider.name }, 'integration instance created');
    await this.#restart(row.id);
    return this.#view(row);
  }

  async updateInstance(input: UpdateInstanceRequest): Promise<InstanceView> {
    const row = await this.#row(input.InstanceID);
    const provider = this.provider(row.provider_id);
    const next: InstanceRow = { ...row, updated_at: Date.now() };
    if (input.Name !== undefined && input.Name !== null) {
      next.name = text(input.Name, 'Name', true);
      const other = await this.repo.getInstanceByName(next.name);
      if (other && other.id !== row.id) throw conflict(`an integration instance named "${next.name}" exists`);
    }
    if (input.Config !== undefined && input.Config !== null) {
      next.config = JSON.stringify(
        validateConfig(provider, input.Config, JSON.parse(row.config) as InstanceConfig),
      );
    }
    if (input.Enabled !== undefined && input.Enabled !== null) next.enabled = input.Enabled ? 1 : 0;
    if (input.ExecCommandEnabled !== undefined && input.ExecCommandEnabled !== null) {
      next.exec_command_enabled = input.ExecCommandEnabled ? 1 : 0;
    }
    if (input.Description !== undefined && input.Description !== null) {
      next.description = text(input.Description, 'Description', false);
    }
    await this.repo.updateInstance(next);
    await this.#restart(row.id);
    return this.#view(next);
  }

  /** Deletes the instance, its subscriptions and its queue (what was queued is lost: the one way to drop it). */
  async deleteInstance(id: string): Promise<boolean> {
    const row = await this.#row(id);
    await this.#locked(id, async () => {
      await this.#drop(id);
      await this.repo.deleteInstance(row.id);
    });
    this.#o.logger.info({ instance: id }, 'integration instance deleted');
    return true;
  }

  /** The names of the running instances that are Disconnected (the manager's heartbeat reports them). */
  downInstances(): string[] {
    const out: string[] = [];
    for (const r of this.#running.values()) if (r.runner.state === 'Disconnected') out.push(r.row.name);
    return out.slice(0, 100);
  }

  status(id: string): Promise<StatusView> {
    return this.#row(id).then((row) => {
      const r = this.#running.get(id);
      const provider = findProvider(row.provider_id);
      const queue = this.#queueView(id);
      const runner = r?.runner;
      return {
        InstanceID: id,
        InstanceState: runner?.state ?? 'Configured',
        Reason: runner?.machine.reason ?? '',
        Since: iso(runner?.machine.since ?? row.updated_at),
        LastError: runner?.lastError ?? '',
        LastErrorTime: runner?.lastErrorAt ? iso(runner.lastErrorAt) : null,
        ProviderName: provider?.name ?? '',
        ExecCommandEnabled: row.exec_command_enabled === 1,
        Counters: {
          Sent: runner?.counters.sent ?? 0,
          Received: runner?.counters.received ?? 0,
          Queued: queue.Depth,
          Enqueued: runner?.counters.enqueued ?? 0,
          Dropped: queue.Dropped,
          Malformed: runner?.counters.malformed ?? 0,
        },
        Queue: queue,
      };
    });
  }

  async queue(id: string): Promise<QueueView> {
    await this.#row(id);
    return this.#queueView(id);
  }

  #queueView(id: string): QueueView {
    const r = this.#running.get(id);
    const config = r ? (JSON.parse(r.row.config) as InstanceConfig) : {};
    const stats = r?.queue.stats() ?? { depth: 0, bytes: 0, fileBytes: 0, oldestTs: null };
    return {
      InstanceID: id,
      Depth: stats.depth,
      Bytes: stats.bytes,
      FileBytes: stats.fileBytes,
      OldestMessageAgeMs: stats.oldestTs === null ? null : Math.max(0, Date.now() - stats.oldestTs),
      OldestMessageTime: stats.oldestTs === null ? null : iso(stats.oldestTs),
      MaxBytes: Number(config.queueMaxBytes ?? 0),
      MaxMessages: Number(config.queueMaxMessages ?? 0),
      FullPolicy: String(config.queueFullPolicy ?? ''),
      Dropped: r?.queue.dropped ?? 0,
    };
  }

  // --- subscriptions

  #subscriptionView(row: SubscriptionRow): SubscriptionView {
    return {
      TopicID: row.id,
      InstanceID: row.instance_id,
      IsLocalToRemote: row.is_local_to_remote === 1,
      Enabled: row.enabled === 1,
      LocalName: row.local_name,
      RemoteName: row.remote_name,
      Config: JSON.parse(row.config) as Record<string, unknown>,
      Description: row.description,
    };
  }

  async listSubscriptions(
    input: ListInput & { InstanceID: string },
  ): Promise<{ Items: SubscriptionView[]; Total: number }> {
    await this.#row(input.InstanceID);
    const spec = parseListInput(input, SUBSCRIPTION_LIST);
    const page = await runList(
      this.repo.database,
      this.repo.subscriptionListQuery(input.InstanceID),
      SUBSCRIPTION_LIST,
      spec,
    );
    return { Items: page.items.map((r) => this.#subscriptionView(r)), Total: page.total };
  }

  #checkSubscription(provider: ProviderDef, row: SubscriptionRow): void {
    checkSubscription(provider, row);
  }

  async createSubscription(input: CreateSubscriptionRequest): Promise<SubscriptionView> {
    const instance = await this.#row(input.InstanceID);
    const provider = this.provider(instance.provider_id);
    const existing = await this.repo.subscriptionsOf(instance.id);
    if (existing.length >= MAX_SUBSCRIPTIONS) {
      throw badRequest(`an integration instance holds at most ${MAX_SUBSCRIPTIONS} subscriptions`);
    }
    const now = Date.now();
    const row: SubscriptionRow = {
      id: randomUUID(),
      instance_id: instance.id,
      is_local_to_remote: input.IsLocalToRemote ? 1 : 0,
      enabled: input.Enabled === false ? 0 : 1,
      local_name: text(input.LocalName, 'LocalName', true),
      remote_name: text(input.RemoteName, 'RemoteName', true),
      config: JSON.stringify(input.Config ?? {}),
      description: text(input.Description, 'Description', false),
      created_at: now,
      updated_at: now,
    };
    this.#checkSubscription(provider, row);
    await this.repo.insertSubscription(row);
    await this.#restart(instance.id);
    return this.#subscriptionView(row);
  }

  async updateSubscription(input: UpdateSubscriptionRequest): Promise<SubscriptionView> {
    checkUuid(input.TopicID, 'TopicID');
    const row = await this.repo.getSubscription(input.TopicID);
    if (!row) throw notFound(`subscription ${input.TopicID} not found`);
    const instance = await this.#row(row.instance_id);
    const next: SubscriptionRow = { ...row, updated_at: Date.now() };
    if (input.IsLocalToRemote !== undefined && input.IsLocalToRemote !== null) {
      next.is_local_to_remote = input.IsLocalToRemote ? 1 : 0;
    }
    if (input.LocalName !== undefined && input.LocalName !== null)
      next.local_name = text(input.LocalName, 'LocalName', true);
    if (input.RemoteName !== undefined && input.RemoteName !== null) {
      next.remote_name = text(input.RemoteName, 'RemoteName', true);
    }
    if (input.Enabled !== undefined && input.Enabled !== null) next.enabled = input.Enabled ? 1 : 0;
    if (input.Config !== undefined && input.Config !== null) next.config = JSON.stringify(input.Config);
    if (input.Description !== undefined && input.Description !== null) {
      next.description = text(input.Description, 'Description', false);
    }
    this.#checkSubscription(this.provider(instance.provider_id), next);
    await this.repo.updateSubscription(next);
    await this.#restart(instance.id);
    return this.#subscriptionView(next);
  }

  async deleteSubscription(id: string): Promise<boolean> {
    checkUuid(id, 'TopicID');
    const row = await this.repo.getSubscription(id);
    if (!row) throw notFound(`subscription ${id} not found`);
    await this.repo.deleteSubscription(id);
    await this.#restart(row.instance_id);
    return true;
  }

  // --- runners

  /**
   * Follows a configuration apply that committed (`config-section.ts`): the runners of `changed`
   * instances start again from the stored rows (new ones start), those of `removed` stop and their
   * queues are deleted (as `deleteInstance` does).
   */
  async committed(change: { changed: readonly string[]; removed: readonly string[] }): Promise<void> {
    for (const id of change.removed) await this.#locked(id, () => this.#drop(id));
    for (const id of change.changed) await this.#restart(id);
  }

  /** Stops the instance's runner and deletes its queue. */
  async #drop(id: string): Promise<void> {
    const running = this.#running.get(id);
    this.#running.delete(id);
    if (running) {
      await running.runner.stop();
      running.queue.destroy();
    } else {
      new DiskQueue(this.queuePath(id), { maxBytes: 1, maxMessages: 1, policy: 'drop-newest' }).destroy();
    }
  }

  #locked<T>(id: string, run: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(id) ?? Promise.resolve();
    const next = prev.then(run, run);
    const settled = next.catch(() => undefined);
    this.#locks.set(id, settled);
    void settled.then(() => {
      if (this.#locks.get(id) === settled) this.#locks.delete(id);
    });
    return next;
  }

  /** Stops the instance's runner (if any) and starts a new one from the stored rows; the queue stays open. */
  #restart(id: string): Promise<void> {
    return this.#locked(id, async () => {
      if (this.#closed) return;
      const running = this.#running.get(id);
      if (running) await running.runner.stop();
      const row = await this.repo.getInstance(id);
      if (!row) {
        running?.queue.close();
        this.#running.delete(id);
        return;
      }
      const provider = findProvider(row.provider_id);
      if (!provider) {
        this.#o.logger.error(
          { instance: id, provider: row.provider_id },
          'integration provider unknown: not started',
        );
        return;
      }
      const config = JSON.parse(row.config) as InstanceConfig;
      const limits = {
        maxBytes: Number(config.queueMaxBytes),
        maxMessages: Number(config.queueMaxMessages),
        policy: config.queueFullPolicy as QueueFullPolicy,
        sync: config.queueSync === 'full' ? ('full' as const) : ('normal' as const),
      };
      if (running) running.queue.close();
      const queue = new DiskQueue(this.queuePath(id), limits);
      const subs: RunnerSubscription[] = (await this.repo.subscriptionsOf(id)).map((s) => ({
        id: s.id,
        isLocalToRemote: s.is_local_to_remote === 1,
        enabled: s.enabled === 1,
        localName: s.local_name,
        remoteName: s.remote_name,
        config: JSON.parse(s.config) as Record<string, unknown>,
      }));
      const factory = this.#o.factories[provider.transport];
      const runner = new InstanceRunner({
        instanceId: id,
        provider,
        config,
        enabled: row.enabled === 1,
        subscriptions: subs,
        hub: this.#o.hub,
        queue,
        logger: this.#o.logger,
        trustedCa: this.#o.trustedCa,
        factory:
          factory ??
          (() => {
            throw new Error(`no connector for transport ${provider.transport} in this build`);
          }),
      });
      this.#running.set(id, { runner, queue, provider, row });
      runner.start();
    });
  }

  /** Stops every runner and closes every queue (committing what waits). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#locks.values()]);
    for (const r of this.#running.values()) {
      await r.runner.stop();
      r.queue.close();
    }
    this.#running.clear();
  }
}
