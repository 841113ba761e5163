/**
 * The DataHub's section of a configuration template: access keys.
 *
 *     { "accessKeys": [ { "id", "name", "prefix", "publish", "subscribe",
 *                         "key"?: { "$secret": "<hash>" } } ] }
 *
 * Keyed by `id`. `key` is the stored hash of the access key (the key itself is shown once): a
 * template carries it only encrypted, so that NATS clients keep their key on every edge the
 * template is applied to. A key the edge does not have cannot be created without it. After the
 * apply commits, connections of removed keys are closed and changed keys are looked up again.
 */
import type { Kysely } from '../../kernel/db/index.js';
import type {
  ApplyMode,
  ConfigSection,
  SecretValue,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { applyKeyed, missingSecret } from '../../kernel/service/keyed-section.js';
import { canonical, checkObject, diffByKey, join, mergeByKey } from '../../kernel/service/section-shape.js';
import type { AccessKeyRow, DataHubRepository, DataHubTables } from './repository.js';
import type { AccessKeyService } from './service.js';
import { isValidPattern } from './subject.js';

export interface TemplateAccessKey {
  id: string;
  name: string;
  prefix?: string;
  publish: string[] | null;
  subscribe: string[] | null;
  key?: SecretValue;
}

export interface DatahubSection {
  accessKeys: TemplateAccessKey[];
}

const FIELDS = {
  id: 'string',
  name: 'string',
  'prefix?': 'string',
  publish: 'string[]',
  subscribe: 'string[]',
  'key?': 'secret',
} as const;

const config = (k: TemplateAccessKey) => canonical({ n: k.name, p: k.publish, s: k.subscribe });

export class DatahubConfigSection implements ConfigSection<DatahubSection> {
  readonly name = 'datahub';
  readonly #repo: DataHubRepository;
  readonly #keys: AccessKeyService;

  constructor(repo: DataHubRepository, keys: AccessKeyService) {
    this.#repo = repo;
    this.#keys = keys;
  }

  async export(): Promise<DatahubSection> {
    return { accessKeys: (await this.#repo.allKeys()).map(keyOut) };
  }

  validate(doc: unknown): SectionIssue[] {
    const issues: SectionIssue[] = [];
    if (!checkObject(issues, '', doc, { accessKeys: 'array' })) return issues;
    const seen = new Map<string, number>();
    for (const [i, k] of (doc as DatahubSection).accessKeys.entries()) {
      const path = join('accessKeys', i);
      if (!checkObject(issues, path, k, FIELDS, { nullable: ['publish', 'subscribe'] })) continue;
      if (k.id.trim() === '' || k.id.length > 200)
        issues.push({ path: join(path, 'id'), message: 'must have 1 to 200 characters' });
      if (k.name.trim() === '' || k.name.length > 200)
        issues.push({ path: join(path, 'name'), message: 'must have 1 to 200 characters' });
      for (const field of ['publish', 'subscribe'] as const) {
        for (const p of k[field] ?? []) {
          if (!isValidPattern(p))
            issues.push({ path: join(path, field), message: `"${p}" is not a valid subject pattern` });
        }
      }
      const dup = seen.get(k.id);
      if (dup !== undefined)
        issues.push({
          path: join(path, 'id'),
          message: `access key "${k.id}" is given twice (accessKeys[${dup}])`,
        });
      seen.set(k.id, i);
    }
    return issues;
  }

  diff(current: DatahubSection, next: DatahubSection, mode: ApplyMode): SectionDiff {
    const target = mode === 'merge-apply' ? this.merge(current, next).merged : next;
    const out = diffByKey(
      current.accessKeys,
      target.accessKeys,
      (k) => k.id,
      (was, k) => config(was) === config(k) && (!k.key || k.key.$secret === was.key?.$secret),
      mode,
    );
    if (out.removed.length > 0 || out.changed.length > 0)
      out.restarts.push('datahub: NATS connections of changed or removed access keys');
    return out;
  }

  merge(current: DatahubSection, template: DatahubSection): { merged: DatahubSection; overwrites: string[] } {
    const { merged, overwrites } = mergeByKey(current.accessKeys, template.accessKeys, (k) => k.id, 'key');
    return { merged: { accessKeys: merged }, overwrites };
  }

  async apply(next: DatahubSection, ctx: SectionApplyContext): Promise<void> {
    const trx = ctx.trx as unknown as Kysely<DataHubTables>;
    const list = (v: string[] | null) => (v === null ? null : JSON.stringify([...new Set(v)]));
    /** The row `k` makes of `was`. */
    const rowOf = (k: TemplateAccessKey, was: AccessKeyRow): AccessKeyRow => ({
      ...was,
      name: k.name,
      publish: list(k.publish),
      subscribe: list(k.subscribe),
      key_hash: k.key?.$secret ?? was.key_hash,
      key_prefix: k.key ? (k.prefix ?? was.key_prefix) : was.key_prefix,
    });
    const done = await applyKeyed(await this.#repo.allKeys(trx), next.accessKeys, ctx, {
      section: 'datahub',
      path: 'accessKeys',
      key: (k) => k.id,
      rowKey: (r) => r.id,
      same: (was, k) => {
        const now = rowOf(k, was);
        return (
          was.name === now.name &&
          was.publish === now.publish &&
          was.subscribe === now.subscribe &&
          was.key_hash === now.key_hash
        );
      },
      merge: (was, k) => mergeByKey([keyOut(was)], [k], (x) => x.id, 'key').merged[0]!,
      create: async (k) => {
        if (!k.key) throw missingSecret(`access key "${k.name}" (${k.id})`, 'key');
        await this.#repo.insertKeyIn(
          {
            id: k.id,
            name: k.name,
            key_hash: k.key.$secret,
            key_prefix: k.prefix ?? '',
            publish: list(k.publish),
            subscribe: list(k.subscribe),
            created_at: Date.now(),
          },
          trx,
        );
      },
      update: (k, was) => this.#repo.replaceKey(rowOf(k, was), trx),
      remove: (rows) =>
        this.#repo.deleteKeys(
          rows.map((r) => r.id),
          trx,
        ),
    });
    // A removed key (or one whose key changed) stops working at once, as a revoked key does.
    const changed: string[] = [];
    const removed = done.removed.map((r) => r.id);
    for (const { item, row } of done.updated)
      ((item.key?.$secret ?? row.key_hash) !== row.key_hash ? removed : changed).push(row.id);
    ctx.afterCommit(() => {
      for (const id of changed) this.#keys.forget(id);
      for (const id of removed) {
        this.#keys.forget(id);
        this.#keys.onRevoke?.(id);
      }
    });
  }
}

function keyOut(r: AccessKeyRow): TemplateAccessKey {
  return {
    id: r.id,
    name: r.name,
    prefix: r.key_prefix,
    publish: r.publish === null ? null : (JSON.parse(r.publish) as string[]),
    subscribe: r.subscribe === null ? null : (JSON.parse(r.subscribe) as string[]),
    key: { $secret: r.key_hash },
  };
}
