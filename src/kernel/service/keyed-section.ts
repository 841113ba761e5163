/**
 * The one apply of a configuration section that is a keyed collection (API clients by
 * `client_id`, access keys by `id`, devices by `Name`, twins' models by `Name`, integration
 * instances by `Name`...): the template's items are matched with the stored rows by key, and each
 * is created, updated, left unchanged or (with mode `use`) removed.
 *
 * The modes are those of `ApplyMode`:
 * - `legacy`: the template's items are created or replaced; rows it does not name stay;
 * - `use`: the collection becomes exactly the template's: rows it does not name are removed;
 * - `merge-apply`: like `legacy`, but an item that exists is the union of the row and the template
 *   item (`merge`, template values first), so that fields the template leaves out keep theirs.
 *
 * Secrets follow the sections' rule: a secret the template leaves out (it was exported without an
 * encryption key) keeps the stored value; `create` refuses an item that needs one and has none
 * (`missingSecret` gives the message). Sealing and unsealing is the configuration module's
 * (`protectSecrets`, `revealSecrets`): a section sees `{ "$secret": ... }` values in the clear.
 *
 * An item that fails (its `create`, `update` or `remove` throws) aborts the apply with
 * `failFast` (the error, its message prefixed with the section and the item), or is reported with
 * `ctx.fail` and skipped. Writes go through whatever the callbacks close over: the apply's
 * transaction, through the module's repository.
 */
import { AppError, conflict } from '../errors.js';
import type { ApplyMode, SectionApplyContext } from './config-section.js';

/** How the items of a collection are matched and compared. */
export interface KeyedMatch<T, R> {
  /** The key of a template item. */
  key(item: T): string;
  /** The key of a stored row. */
  rowKey(row: R): string;
  /** Whether applying `item` over `row` would change nothing. */
  same(row: R, item: T): boolean;
  /** merge-apply: the item that `item` becomes over the existing `row` (default: `item`). */
  merge?(row: R, item: T): T;
}

/** One item of a template, where it is in the template's list. */
export interface KeyedItem<T> {
  item: T;
  index: number;
}

/** What an apply of a keyed collection does, item by item. */
export interface KeyedPlan<T, R> {
  create: KeyedItem<T>[];
  update: Array<KeyedItem<T> & { row: R }>;
  unchanged: Array<KeyedItem<T> & { row: R }>;
  /** Only with mode `use`: the rows the template does not name. */
  remove: R[];
}

/** Sorts the template's `items` against the stored `rows` (no writes). */
export function planKeyed<T, R>(
  rows: readonly R[],
  items: readonly T[],
  mode: ApplyMode,
  match: KeyedMatch<T, R>,
): KeyedPlan<T, R> {
  const left = new Map(rows.map((r) => [match.rowKey(r), r]));
  const plan: KeyedPlan<T, R> = { create: [], update: [], unchanged: [], remove: [] };
  for (const [index, given] of items.entries()) {
    const key = match.key(given);
    const row = left.get(key);
    if (row === undefined) {
      plan.create.push({ item: given, index });
      continue;
    }
    left.delete(key);
    const item = mode === 'merge-apply' && match.merge ? match.merge(row, given) : given;
    (match.same(row, item) ? plan.unchanged : plan.update).push({ item, index, row });
  }
  if (mode === 'use') plan.remove.push(...left.values());
  return plan;
}

/** The writes of a keyed collection, and how its items are named in messages. */
export interface KeyedApply<T, R> extends KeyedMatch<T, R> {
  /** The section's name (`auth`). */
  section: string;
  /** The collection's path in the section (`apiClients`, `models[2].Instances`). */
  path: string;
  create(item: T, index: number): Promise<void>;
  update(item: T, row: R, index: number): Promise<void>;
  /** Removes rows (mode `use`); called once with all of them unless `removeOneByOne`. */
  remove(rows: R[]): Promise<void>;
  /** Each removal is an item of its own (it may fail alone): `remove` gets one row at a time. */
  removeOneByOne?: boolean;
  /**
   * When the removals run: `before` the creates (names and limits free up: default), `after`
   * them, or `later`: not here, the caller removes `leftOut` (`removeKeyed`) when it is time.
   */
  removeWhen?: 'before' | 'after' | 'later';
  /** Undoes a failed item's writes alone (see `ItemGuard`); without it, a failed item's writes stay. */
  guard?: ItemGuard;
  /** Called after each item (created, updated, unchanged or failed), for `ctx.progress`. */
  step?(item: T): void;
}

/** What an apply of a keyed collection did. */
export interface KeyedOutcome<T, R> {
  created: T[];
  updated: Array<{ item: T; row: R }>;
  unchanged: Array<{ item: T; row: R }>;
  removed: R[];
  /** The rows the template leaves out that mode `use` removes (now, or later: `removeWhen`). */
  leftOut: R[];
  /** Items that failed and were skipped (`failFast` false). */
  failed: number;
}

/**
 * Makes one item's writes undoable alone (a savepoint of the apply's transaction, from the
 * module's repository): with `failFast` false, an item that fails after some of its writes is
 * undone before the rest applies (PostgreSQL refuses every statement after a failed one).
 */
export interface ItemGuard {
  begin(): Promise<void>;
  /** The item succeeded: its writes stay. */
  keep(): Promise<void>;
  /** The item failed: its writes are undone. */
  undo(): Promise<void>;
}

/**
 * Runs `fn` as the item `item` of section `section`: its failure aborts (`failFast`, the error's
 * message prefixed `section <s>: <item>: `) or is undone (`guard`), reported (`ctx.fail`) and
 * answered false.
 */
export async function attemptItem(
  ctx: Pick<SectionApplyContext, 'failFast' | 'fail'>,
  section: string,
  item: string,
  fn: () => Promise<unknown>,
  guard?: ItemGuard,
): Promise<boolean> {
  const guarded = guard !== undefined && !ctx.failFast;
  if (guarded) await guard.begin();
  try {
    await fn();
    if (guarded) await guard.keep();
    return true;
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    const message = `section ${section}: ${item}: ${text}`;
    if (ctx.failFast)
      throw err instanceof AppError
        ? new AppError(err.kind, message, { cause: err, status: err.status })
        : new Error(message, { cause: err });
    if (guarded) await guard.undo();
    ctx.fail(`${section}: ${item}`, message);
    return false;
  }
}

/**
 * Removes `rows` (rows the template leaves out, with mode `use`): all at once, or one by one
 * (`removeOneByOne`), each then an item of its own that may fail alone. Answers those removed.
 */
export async function removeKeyed<T, R>(
  rows: readonly R[],
  ctx: Pick<SectionApplyContext, 'failFast' | 'fail'>,
  spec: KeyedApply<T, R>,
): Promise<{ removed: R[]; failed: number }> {
  if (rows.length === 0) return { removed: [], failed: 0 };
  if (!spec.removeOneByOne) {
    await spec.remove([...rows]);
    return { removed: [...rows], failed: 0 };
  }
  const out = { removed: [] as R[], failed: 0 };
  for (const row of rows) {
    const what = `${spec.path} "${spec.rowKey(row)}" (removing)`;
    if (await attemptItem(ctx, spec.section, what, () => spec.remove([row]), spec.guard))
      out.removed.push(row);
    else out.failed++;
  }
  return out;
}

/** Plans and applies the template's `items` over the stored `rows` (see the file comment). */
export async function applyKeyed<T, R>(
  rows: readonly R[],
  items: readonly T[],
  ctx: Pick<SectionApplyContext, 'mode' | 'failFast' | 'fail'>,
  spec: KeyedApply<T, R>,
): Promise<KeyedOutcome<T, R>> {
  const plan = planKeyed(rows, items, ctx.mode, spec);
  const out: KeyedOutcome<T, R> = {
    created: [],
    updated: [],
    unchanged: [],
    removed: [],
    leftOut: plan.remove,
    failed: 0,
  };
  const removals = async () => {
    const r = await removeKeyed(plan.remove, ctx, spec);
    out.removed.push(...r.removed);
    out.failed += r.failed;
  };
  const when = spec.removeWhen ?? 'before';
  if (when === 'before') await removals();
  // In the template's order: a later item may refer to an earlier one.
  const work = [
    ...plan.create.map((c) => ({ ...c, row: undefined as R | undefined })),
    ...plan.update,
    ...plan.unchanged.map((u) => ({ ...u, unchanged: true })),
  ].sort((a, b) => a.index - b.index);
  for (const w of work) {
    if ('unchanged' in w) {
      out.unchanged.push({ item: w.item, row: w.row! });
      spec.step?.(w.item);
      continue;
    }
    const { item, index, row } = w;
    const name = `${spec.path}[${index}] (${spec.key(item)})`;
    const ok = await attemptItem(
      ctx,
      spec.section,
      name,
      () => (row === undefined ? spec.create(item, index) : spec.update(item, row, index)),
      spec.guard,
    );
    if (!ok) out.failed++;
    else if (row === undefined) out.created.push(item);
    else out.updated.push({ item, row });
    spec.step?.(w.item);
  }
  if (when === 'after') await removals();
  return out;
}

/**
 * The error of an item that the edge does not have and that the template gives without its
 * secret (it was exported without an encryption key): it cannot be created.
 */
export function missingSecret(what: string, field: string): AppError {
  return conflict(
    `${what} has no ${field} in the template (exported without an encryptionKey) and does not exist on this edge`,
  );
}
