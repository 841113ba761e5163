/**
 * A module's part of a configuration template (the configuration module of the edge builds the
 * documents, sessions, snapshots and the REST API on top of this). A section is plain JSON data
 * that a module can export, check, compare and apply.
 *
 * Secrets inside a section are marked: an object `{ "$secret": "<text>" }` wherever a value is a
 * secret. The configuration module encrypts them when a template leaves the edge with an
 * encryption key, strips them without one, and hands them back decrypted to `apply`.
 *
 * Applying is all-or-nothing across sections: every section writes through the one transaction of
 * `SectionApplyContext.trx` (the sections of a service share its database), and tells its runtime
 * about the change only in `afterCommit`.
 */
import type { Tx } from '../db/index.js';

/** One problem in a section, naming the item (`devices[3].Name`). */
export interface SectionIssue {
  path: string;
  message: string;
}

/** What an apply of a section would change, by item key. */
export interface SectionDiff {
  added: string[];
  changed: string[];
  removed: string[];
  /** Services (or modules) the apply restarts, for people. */
  restarts: string[];
}

export type ApplyMode = 'legacy' | 'use' | 'merge-apply';
export const APPLY_MODES: readonly ApplyMode[] = ['legacy', 'use', 'merge-apply'];

/** A secret value inside a section (see the file comment). */
export interface SecretValue {
  $secret: string;
}

export const isSecretValue = (v: unknown): v is SecretValue =>
  typeof v === 'object' &&
  v !== null &&
  !Array.isArray(v) &&
  typeof (v as SecretValue).$secret === 'string' &&
  Object.keys(v).length === 1;

/** What a section's `apply` gets besides the content. */
export interface SectionApplyContext {
  readonly mode: ApplyMode;
  /** The one transaction of the whole apply: every write goes through it. */
  readonly trx: Tx;
  /**
   * true: the first failing item aborts the apply (throw). false: an item that fails is reported
   * with `fail` and skipped, and the rest is applied.
   */
  readonly failFast: boolean;
  /** Reports an item that failed and was skipped (only when `failFast` is false). */
  fail(item: string, message: string): void;
  /** Runs after the transaction committed: change events, caches, connections. */
  afterCommit(fn: () => void | Promise<void>): void;
  /** For long applies: items done out of items to do in this section. */
  progress(done: number, total: number): void;
}

export interface ConfigSection<T = unknown> {
  /** The key of the section in a template (`devicehub`). */
  readonly name: string;
  /** The current configuration of the module (secrets marked as `SecretValue`). */
  export(): Promise<T>;
  /**
   * The export as JSON text with every `{{` of its strings escaped as `\{{`: byte for byte
   * `JSON.stringify` of the escaped `export()`, when the section can write it without making the
   * export's objects (the DeviceHub's 100,000 tags). Exports to a document use it when there is one.
   */
  exportJson?(): Promise<string>;
  /**
   * `exportJson`'s text as UTF-8 bytes, in pieces (joined in order): what a save and a snapshot
   * store, without a string of the whole section. `each`, when given, is handed every piece in
   * order as soon as it is written (a save gzips them while the rest is being read).
   */
  exportJsonBytes?(each?: (piece: Buffer) => void): Promise<Buffer[]>;
  /** Problems of `doc` as this section (empty when it can be applied). */
  validate(doc: unknown): Promise<SectionIssue[]> | SectionIssue[];
  /** What applying `next` (valid) over `current` (an export) would change. */
  diff(current: T, next: T, mode: ApplyMode): SectionDiff;
  /**
   * `diff` over the current configuration as stored, when the section can tell it without making
   * its export (the DeviceHub's 100,000 tags): preview and apply use it when there is one.
   */
  diffCurrent?(next: T, mode: ApplyMode): Promise<SectionDiff>;
  /**
   * The union of `current` and `template` (template items added, items of both merged, template
   * values first): what a merge saves. `overwrites` names the items of `current` it changes.
   */
  merge(current: T, template: T): { merged: T; overwrites: string[] };
  /** Applies `next` (valid) in `ctx.trx`. */
  apply(next: T, ctx: SectionApplyContext): Promise<void>;
}
