/**
 * A module's part of a configuration template (the configuration templates issue builds the
 * documents, sessions, snapshots and the REST API on top of this). A section is plain data that a
 * module can export, check, compare and apply; secrets are marked so that a template encrypts
 * them.
 */

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

export interface ConfigSection<T = unknown> {
  /** The key of the section in a template (`devicehub`). */
  readonly name: string;
  /** The current configuration of the module. */
  export(): Promise<T>;
  /** Problems of `doc` as this section (empty when it can be applied). */
  validate(doc: unknown): Promise<SectionIssue[]> | SectionIssue[];
  diff(current: T, next: T, mode: ApplyMode): SectionDiff;
  apply(next: T, mode: ApplyMode): Promise<void>;
}
