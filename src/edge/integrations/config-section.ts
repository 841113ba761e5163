/**
 * The integrations' section of a configuration template: instances with their subscriptions.
 *
 *     { "instances": [ { "Name", "ProviderID", "Enabled"?, "ExecCommandEnabled"?, "Description"?,
 *                        "Config"?: { "<property>": value, "<secret property>": { "$secret": ... } },
 *                        "Subscriptions"?: [ { "IsLocalToRemote", "LocalName", "RemoteName",
 *                                              "Enabled"?, "Config"?, "Description"? } ] } ] }
 *
 * Instances are keyed by `Name` (their IDs, and so their queue files, are the edge's own), and
 * subscriptions by direction and names (`LocalName -> RemoteName` or `LocalName <- RemoteName`).
 * `ProviderID` is the provider's ID (or its name). The properties a provider marks secret
 * (passwords, tokens, private keys, URLs with credentials) are always `{ "$secret": ... }`: sealed
 * under the encryption key when the template leaves the edge, left out without one. A secret the
 * template leaves out keeps the value the instance has; an instance the edge does not have cannot
 * be created without the secrets its provider requires. A secret written in clear text in a
 * template is refused.
 *
 * `validate` checks every instance against the provider catalogue as `CreateInstance` does
 * (properties, defaults, rules) and every subscription as `CreateSubscription` does. `apply`
 * writes through `IntegrationsRepository.inTransaction(ctx.trx)`; after the commit, the runners of
 * created and changed instances start (again) from the stored rows and those of removed instances
 * stop and their queues go (`IntegrationService.committed`). Subscriptions the template does not
 * name stay, but with mode `use`. No `restarts`: no other module restarts for an integration.
 */
import { randomUUID } from 'node:crypto';
import type {
  ApplyMode,
  ConfigSection,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { badRequest } from '../../kernel/errors.js';
import { isSecretValue } from '../../kernel/service/config-section.js';
import { applyKeyed, planKeyed } from '../../kernel/service/keyed-section.js';
import { canonical, checkObject, diffByKey, issueOf, join } from '../../kernel/service/section-shape.js';
import { findProvider, PROVIDERS, type ProviderDef } from './catalogue.js';
import type { InstanceRow, IntegrationsRepository, SubscriptionRow } from './repository.js';
import {
  checkSubscription,
  MAX_INSTANCES,
  MAX_NAME,
  MAX_SUBSCRIPTIONS,
  type IntegrationService,
} from './service.js';
import { validateConfig, type InstanceConfig } from './validation.js';

export interface TemplateSubscription {
  IsLocalToRemote: boolean;
  LocalName: string;
  RemoteName: string;
  Enabled?: boolean;
  Config?: Record<string, unknown>;
  Description?: string;
}

export interface TemplateInstance {
  Name: string;
  /** The provider's ID (as `ListProviders` answers it), or its name. */
  ProviderID: string;
  Enabled?: boolean;
  ExecCommandEnabled?: boolean;
  Description?: string;
  /** The provider's properties; the secret ones as `{ "$secret": ... }`. */
  Config?: Record<string, unknown>;
  Subscriptions?: TemplateSubscription[];
}

export interface IntegrationsSection {
  instances: TemplateInstance[];
}

const INSTANCE_FIELDS = {
  Name: 'string',
  ProviderID: 'string',
  'Enabled?': 'boolean',
  'ExecCommandEnabled?': 'boolean',
  'Description?': 'string',
  'Config?': 'object',
  'Subscriptions?': 'array',
} as const;

const SUBSCRIPTION_FIELDS = {
  IsLocalToRemote: 'boolean',
  LocalName: 'string',
  RemoteName: 'string',
  'Enabled?': 'boolean',
  'Config?': 'object',
  'Description?': 'string',
} as const;

/** A provider by ID or by name. */
const providerOf = (idOrName: string): ProviderDef | undefined =>
  findProvider(idOrName) ?? PROVIDERS.find((p) => p.name === idOrName);

/** The key of a subscription in its instance. */
export const subscriptionKey = (
  s: Pick<TemplateSubscription, 'IsLocalToRemote' | 'LocalName' | 'RemoteName'>,
) => `${s.LocalName} ${s.IsLocalToRemote ? '->' : '<-'} ${s.RemoteName}`;

const secretNames = (provider: ProviderDef) => provider.properties.filter((d) => d.secret).map((d) => d.name);

/**
 * The stored config of `given` (a template's, secrets as `{ "$secret" }`): secrets unwrapped, the
 * secrets it leaves out taken from `previous` (the instance's stored config), checked and with
 * defaults as `CreateInstance` makes it.
 */
function resolveConfig(
  provider: ProviderDef,
  given: Record<string, unknown> | undefined,
  previous: InstanceConfig | undefined,
): InstanceConfig {
  const input: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(given ?? {})) input[k] = isSecretValue(v) ? v.$secret : v;
  const missing: string[] = [];
  for (const name of secretNames(provider)) {
    if (input[name] !== undefined) continue;
    if (previous?.[name] !== undefined) input[name] = previous[name];
    else missing.push(name);
  }
  try {
    return validateConfig(provider, input);
  } catch (err) {
    const hint = missing.find((m) => err instanceof Error && err.message.includes(`"${m}"`));
    if (!hint) throw err;
    throw badRequest(
      `${(err as Error).message}: the secret "${hint}" is not in the template (exported without an encryptionKey?) and the edge has no instance of this name to keep it from`,
    );
  }
}

/** `config` as a template writes it: secrets wrapped. */
function configOut(provider: ProviderDef | undefined, config: InstanceConfig): Record<string, unknown> {
  const secret = new Set(provider ? secretNames(provider) : []);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) out[k] = secret.has(k) ? { $secret: String(v) } : v;
  return out;
}

function subscriptionOut(r: SubscriptionRow): Required<TemplateSubscription> {
  return {
    IsLocalToRemote: r.is_local_to_remote === 1,
    LocalName: r.local_name,
    RemoteName: r.remote_name,
    Enabled: r.enabled === 1,
    Config: JSON.parse(r.config) as Record<string, unknown>,
    Description: r.description,
  };
}

/** The section of the stored `instances` with their `subscriptions`, by name. */
function exportOf(instances: InstanceRow[], subscriptions: SubscriptionRow[]): IntegrationsSection {
  const subs = new Map<string, SubscriptionRow[]>();
  for (const s of subscriptions) {
    const list = subs.get(s.instance_id);
    if (list) list.push(s);
    else subs.set(s.instance_id, [s]);
  }
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return {
    instances: [...instances]
      .sort((a, b) => byName(a.name, b.name))
      .map((r) => ({
        Name: r.name,
        ProviderID: r.provider_id,
        Enabled: r.enabled === 1,
        ExecCommandEnabled: r.exec_command_enabled === 1,
        Description: r.description,
        Config: configOut(findProvider(r.provider_id), JSON.parse(r.config) as InstanceConfig),
        Subscriptions: (subs.get(r.id) ?? [])
          .map(subscriptionOut)
          .sort((a, b) => byName(subscriptionKey(a), subscriptionKey(b))),
      })),
  };
}

/** A template subscription with its defaults, as it is stored. */
const subscriptionNormal = (s: TemplateSubscription) => ({
  IsLocalToRemote: s.IsLocalToRemote,
  LocalName: s.LocalName.trim(),
  RemoteName: s.RemoteName.trim(),
  Enabled: s.Enabled !== false,
  Config: s.Config ?? {},
  Description: (s.Description ?? '').trim(),
});

/**
 * What the instance `t` of a template makes of `cur` (the export of the instance of that name, if
 * any) once applied: every field with its default, the config stored, the subscriptions (those of
 * `cur` it does not name kept, but with `use`), by key. Equal texts: nothing to apply.
 */
function outcome(t: TemplateInstance, cur: TemplateInstance | undefined, use: boolean): string {
  const provider = providerOf(t.ProviderID);
  const previous =
    cur && providerOf(cur.ProviderID)?.id === provider?.id
      ? resolveConfig(provider!, cur.Config, undefined)
      : undefined;
  const subs = new Map<string, ReturnType<typeof subscriptionNormal>>();
  if (!use) for (const s of cur?.Subscriptions ?? []) subs.set(subscriptionKey(s), subscriptionNormal(s));
  for (const s of t.Subscriptions ?? []) subs.set(subscriptionKey(s), subscriptionNormal(s));
  return canonical({
    Name: t.Name.trim(),
    ProviderID: provider?.id ?? t.ProviderID,
    Enabled: t.Enabled !== false,
    ExecCommandEnabled: t.ExecCommandEnabled === true,
    Description: (t.Description ?? '').trim(),
    Config: provider ? resolveConfig(provider, t.Config, previous) : t.Config,
    Subscriptions: [...subs.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  });
}

/** Whether applying `t` over `cur` changes nothing (a template that cannot apply changes). */
function unchanged(cur: TemplateInstance, t: TemplateInstance, use: boolean): boolean {
  try {
    return outcome(t, cur, use) === outcome(cur, cur, true);
  } catch {
    return false;
  }
}

export class IntegrationsConfigSection implements ConfigSection<IntegrationsSection> {
  readonly name = 'integrations';
  readonly #repo: IntegrationsRepository;
  readonly #service: IntegrationService;

  constructor(service: IntegrationService) {
    this.#service = service;
    this.#repo = service.repo;
  }

  async export(): Promise<IntegrationsSection> {
    return exportOf(await this.#repo.allInstances(), await this.#repo.allSubscriptions());
  }

  async validate(doc: unknown): Promise<SectionIssue[]> {
    const issues: SectionIssue[] = [];
    if (!checkObject(issues, '', doc, { instances: 'array' })) return issues;
    const instances = (doc as IntegrationsSection).instances;
    if (instances.length > MAX_INSTANCES)
      issues.push({
        path: 'instances',
        message: `an edge holds at most ${MAX_INSTANCES} integration instances`,
      });
    const stored = new Map((await this.#repo.allInstances()).map((r) => [r.name, r]));
    const seen = new Map<string, number>();
    for (const [i, t] of instances.entries()) {
      const path = join('instances', i);
      if (!checkObject(issues, path, t, INSTANCE_FIELDS)) continue;
      const name = t.Name.trim();
      if (name === '' || name.length > MAX_NAME)
        issues.push({ path: join(path, 'Name'), message: `must have 1 to ${MAX_NAME} characters` });
      const dup = seen.get(name);
      if (dup !== undefined)
        issues.push({
          path: join(path, 'Name'),
          message: `instance "${name}" is given twice (instances[${dup}])`,
        });
      seen.set(name, i);
      const provider = providerOf(t.ProviderID);
      if (!provider) {
        issues.push({
          path: join(path, 'ProviderID'),
          message: `${JSON.stringify(t.ProviderID)} is not a provider of the catalogue (ListProviders)`,
        });
        continue;
      }
      this.#checkConfig(issues, path, provider, t, stored.get(name));
      this.#checkSubscriptions(issues, path, provider, t.Subscriptions ?? []);
    }
    return issues;
  }

  #checkConfig(
    issues: SectionIssue[],
    path: string,
    provider: ProviderDef,
    t: TemplateInstance,
    stored: InstanceRow | undefined,
  ): void {
    const secrets = new Set(secretNames(provider));
    const before = issues.length;
    for (const [k, v] of Object.entries(t.Config ?? {})) {
      const p = join(join(path, 'Config'), k);
      if (secrets.has(k) && !isSecretValue(v))
        issues.push({
          path: p,
          message: `"${k}" is a secret of provider "${provider.name}": give it as {"$secret": "..."}, never in clear text`,
        });
      else if (!secrets.has(k) && isSecretValue(v))
        issues.push({ path: p, message: `"${k}" is not a secret of provider "${provider.name}"` });
    }
    if (issues.length > before) return;
    const previous =
      stored && stored.provider_id === provider.id
        ? (JSON.parse(stored.config) as InstanceConfig)
        : undefined;
    issueOf(issues, join(path, 'Config'), () => resolveConfig(provider, t.Config, previous));
  }

  #checkSubscriptions(
    issues: SectionIssue[],
    path: string,
    provider: ProviderDef,
    subscriptions: TemplateSubscription[],
  ): void {
    const list = join(path, 'Subscriptions');
    if (subscriptions.length > MAX_SUBSCRIPTIONS)
      issues.push({
        path: list,
        message: `an integration instance holds at most ${MAX_SUBSCRIPTIONS} subscriptions`,
      });
    const seen = new Map<string, number>();
    for (const [j, s] of subscriptions.entries()) {
      const p = join(list, j);
      if (!checkObject(issues, p, s, SUBSCRIPTION_FIELDS)) continue;
      const n = subscriptionNormal(s);
      if (n.LocalName === '' || n.RemoteName === '') {
        issues.push({ path: p, message: 'LocalName and RemoteName are required' });
        continue;
      }
      if (n.LocalName.length > MAX_NAME || n.RemoteName.length > MAX_NAME)
        issues.push({ path: p, message: `LocalName and RemoteName have at most ${MAX_NAME} characters` });
      issueOf(issues, p, () =>
        checkSubscription(provider, {
          is_local_to_remote: n.IsLocalToRemote ? 1 : 0,
          local_name: n.LocalName,
          remote_name: n.RemoteName,
        }),
      );
      const key = subscriptionKey(n);
      const dup = seen.get(key);
      if (dup !== undefined)
        issues.push({ path: p, message: `subscription "${key}" is given twice (${join(list, dup)})` });
      seen.set(key, j);
    }
  }

  diff(current: IntegrationsSection, next: IntegrationsSection, mode: ApplyMode): SectionDiff {
    const target = mode === 'merge-apply' ? this.merge(current, next).merged : next;
    const use = mode === 'use';
    return diffByKey(
      current.instances,
      target.instances,
      (x) => x.Name.trim(),
      (was, t) => unchanged(was, t, use),
      mode,
    );
  }

  merge(
    current: IntegrationsSection,
    template: IntegrationsSection,
  ): { merged: IntegrationsSection; overwrites: string[] } {
    const byName = new Map(current.instances.map((c) => [c.Name, c]));
    const overwrites: string[] = [];
    for (const t of template.instances) {
      const c = byName.get(t.Name.trim());
      if (!c) {
        byName.set(t.Name.trim(), t);
        continue;
      }
      const m = mergeInstance(c, t);
      if (!unchanged(c, m, true)) overwrites.push(c.Name);
      byName.set(c.Name, m);
    }
    return { merged: { instances: [...byName.values()] }, overwrites };
  }

  async apply(next: IntegrationsSection, ctx: SectionApplyContext): Promise<void> {
    const repo = this.#repo.inTransaction(ctx.trx);
    const rows = await repo.allInstances();
    const subs = await repo.allSubscriptions();
    const current = exportOf(rows, subs);
    const curByName = new Map(current.instances.map((c) => [c.Name, c]));
    const target = ctx.mode === 'merge-apply' ? this.merge(current, next).merged : next;
    const use = ctx.mode === 'use';
    const changed: string[] = [];
    const now = Date.now();
    let count = rows.length;
    const done = await applyKeyed(
      rows,
      target.instances,
      { ...ctx, mode: use ? 'use' : 'legacy' },
      {
        section: 'integrations',
        path: 'instances',
        key: (t) => t.Name.trim(),
        rowKey: (r) => r.name,
        same: (r, t) => unchanged(curByName.get(r.name)!, t, use),
        create: async (t) => {
          if (count >= MAX_INSTANCES)
            throw badRequest(`an edge holds at most ${MAX_INSTANCES} integration instances`);
          const row = instanceRow(t, undefined, now);
          await repo.insertInstance(row);
          count++;
          await applySubscriptions(repo, row, [], t.Subscriptions ?? [], use, now);
          changed.push(row.id);
        },
        update: async (t, was) => {
          const row = instanceRow(t, was, now);
          await repo.updateInstance(row);
          const mine = subs.filter((s) => s.instance_id === was.id);
          await applySubscriptions(repo, row, mine, t.Subscriptions ?? [], use, now);
          changed.push(row.id);
        },
        remove: async (gone) => {
          for (const r of gone) await repo.deleteInstance(r.id);
          count -= gone.length;
        },
      },
    );
    const removed = done.removed.map((r) => r.id);
    if (changed.length + removed.length > 0)
      ctx.afterCommit(() => this.#service.committed({ changed, removed }));
  }
}

/** The stored row of the template instance `t` (over `was`, the row of that name, if any). */
function instanceRow(t: TemplateInstance, was: InstanceRow | undefined, now: number): InstanceRow {
  const provider = providerOf(t.ProviderID);
  if (!provider) throw badRequest(`${JSON.stringify(t.ProviderID)} is not a provider of the catalogue`);
  const previous =
    was && was.provider_id === provider.id ? (JSON.parse(was.config) as InstanceConfig) : undefined;
  return {
    id: was?.id ?? randomUUID(),
    name: t.Name.trim(),
    provider_id: provider.id,
    config: JSON.stringify(resolveConfig(provider, t.Config, previous)),
    enabled: t.Enabled === false ? 0 : 1,
    exec_command_enabled: t.ExecCommandEnabled === true ? 1 : 0,
    description: (t.Description ?? '').trim(),
    created_at: was?.created_at ?? now,
    updated_at: now,
  };
}

/** The subscriptions of `instance`: the template's `given` over the stored `rows`. */
async function applySubscriptions(
  repo: IntegrationsRepository,
  instance: InstanceRow,
  rows: SubscriptionRow[],
  given: TemplateSubscription[],
  use: boolean,
  now: number,
): Promise<void> {
  const provider = findProvider(instance.provider_id)!;
  const rowOf = (s: TemplateSubscription, was: SubscriptionRow | undefined): SubscriptionRow => {
    const n = subscriptionNormal(s);
    const row: SubscriptionRow = {
      id: was?.id ?? randomUUID(),
      instance_id: instance.id,
      is_local_to_remote: n.IsLocalToRemote ? 1 : 0,
      enabled: n.Enabled ? 1 : 0,
      local_name: n.LocalName,
      remote_name: n.RemoteName,
      config: JSON.stringify(n.Config),
      description: n.Description,
      created_at: was?.created_at ?? now,
      updated_at: now,
    };
    checkSubscription(provider, row);
    return row;
  };
  const plan = planKeyed(rows, given, use ? 'use' : 'legacy', {
    key: subscriptionKey,
    rowKey: (r) => subscriptionKey(subscriptionOut(r)),
    same: (r, s) => canonical(subscriptionOut(r)) === canonical(subscriptionNormal(s)),
  });
  if (rows.length - plan.remove.length + plan.create.length > MAX_SUBSCRIPTIONS)
    throw badRequest(`an integration instance holds at most ${MAX_SUBSCRIPTIONS} subscriptions`);
  for (const r of plan.remove) await repo.deleteSubscription(r.id);
  for (const { item, row } of plan.update) await repo.updateSubscription(rowOf(item, row));
  for (const { item } of plan.create) await repo.insertSubscription(rowOf(item, undefined));
}

/** `t` over `c`: template values first, config property by property, subscriptions by key. */
function mergeInstance(c: TemplateInstance, t: TemplateInstance): TemplateInstance {
  const sameProvider = providerOf(c.ProviderID)?.id === providerOf(t.ProviderID)?.id;
  const subs = new Map((c.Subscriptions ?? []).map((s) => [subscriptionKey(s), s]));
  for (const s of t.Subscriptions ?? [])
    subs.set(subscriptionKey(s), { ...subs.get(subscriptionKey(s)), ...s });
  return {
    ...c,
    ...t,
    Name: c.Name,
    Config: sameProvider ? { ...c.Config, ...t.Config } : (t.Config ?? {}),
    Subscriptions: [...subs.values()],
  };
}

export function integrationsConfigSection(service: IntegrationService): IntegrationsConfigSection {
  return new IntegrationsConfigSection(service);
}
