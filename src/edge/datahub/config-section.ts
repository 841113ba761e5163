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
import { conflict } from '../../kernel/errors.js';
import type {
  ApplyMode,
  ConfigSection,
  SecretValue,
  SectionApplyContext,
  SectionDiff,
  SectionIssue,
} from '../../kernel/service/index.js';
import { canonical, checkObject, diffByKey, join, mergeByKey } from '../../kernel/service/section-shape.js';
import type { DataHubTables } from './repository.js';
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
  readonly #db: Kysely<DataHubTables>;
  readonly #keys: AccessKeyService;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- pending (issue 24, another's work in progress): the section queries its table through `db` until its SQL is in DataHubRepository
  constructor(db: Kysely<any>, keys: AccessKeyService) {
    this.#db = db as Kysely<DataHubTables>;
    this.#keys = keys;
  }

  export(): Promise<DatahubSection> {
    return exportIn(this.#db);
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
    const target = ctx.mode === 'merge-apply' ? this.merge(await exportIn(trx), next).merged : next;
    const rows = await trx.selectFrom('datahub_access_key').selectAll().execute();
    const cur = new Map(rows.map((r) => [r.id, r]));
    const changed: string[] = [];
    const removed: string[] = [];
    const now = Date.now();
    for (const [i, k] of target.accessKeys.entries()) {
      const was = cur.get(k.id);
      cur.delete(k.id);
      const publish = k.publish === null ? null : JSON.stringify([...new Set(k.publish)]);
      const subscribe = k.subscribe === null ? null : JSON.stringify([...new Set(k.subscribe)]);
      if (!was) {
        if (!k.key) {
          const message = `section datahub: accessKeys[${i}]: access key "${k.name}" (${k.id}) has no key in the template (exported without an encryptionKey) and does not exist on this edge`;
          if (ctx.failFast) throw conflict(message);
          ctx.fail(`datahub: accessKeys[${i}] (${k.id})`, message);
          continue;
        }
        await trx
          .insertInto('datahub_access_key')
          .values({
            id: k.id,
            name: k.name,
            key_hash: k.key.$secret,
            key_prefix: k.prefix ?? '',
            publish,
            subscribe,
            created_at: now,
          })
          .execute();
        continue;
      }
      const hash = k.key?.$secret ?? was.key_hash;
      if (
        was.name === k.name &&
        was.publish === publish &&
        was.subscribe === subscribe &&
        was.key_hash === hash
      )
        continue;
      await trx
        .updateTable('datahub_access_key')
        .set({
          name: k.name,
          publish,
          subscribe,
          key_hash: hash,
          key_prefix: k.key ? (k.prefix ?? was.key_prefix) : was.key_prefix,
        })
        .where('id', '=', k.id)
        .execute();
      (hash !== was.key_hash ? removed : changed).push(k.id);
    }
    if (ctx.mode === 'use' && cur.size > 0) {
      const gone = [...cur.keys()];
      await trx.deleteFrom('datahub_access_key').where('id', 'in', gone).execute();
      removed.push(...gone);
    }
    ctx.afterCommit(() => {
      for (const id of changed) this.#keys.forget(id);
      // A removed key (or one whose key changed) stops working at once, as a revoked key does.
      for (const id of removed) {
        this.#keys.forget(id);
        this.#keys.onRevoke?.(id);
      }
    });
  }
}

async function exportIn(db: Kysely<DataHubTables>): Promise<DatahubSection> {
  const rows = await db.selectFrom('datahub_access_key').selectAll().orderBy('id').execute();
  return {
    accessKeys: rows.map((r) => ({
      id: r.id,
      name: r.name,
      prefix: r.key_prefix,
      publish: r.publish === null ? null : (JSON.parse(r.publish) as string[]),
      subscribe: r.subscribe === null ? null : (JSON.parse(r.subscribe) as string[]),
      key: { $secret: r.key_hash },
    })),
  };
}
