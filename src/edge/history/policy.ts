/**
 * Per-tag recording policies: which values of a tag the history keeps.
 *
 * - `all`: every value;
 * - `change`: a value equal to the last one kept is skipped;
 * - `deadband`: a number within `deadband` of the last one kept is skipped (other values as `change`);
 * - `off`: nothing.
 *
 * `minIntervalMs` (any mode but `off`) skips a value that comes less than that many milliseconds
 * after the last one kept. A policy applies to the tags its `tag` names: `Device.Tag` exactly,
 * `Device.*` every tag of a device, `*` every tag; the most precise one wins.
 */
export type PolicyMode = 'all' | 'change' | 'deadband' | 'off';
export const POLICY_MODES: readonly PolicyMode[] = ['all', 'change', 'deadband', 'off'];

export interface HistoryPolicy {
  /** `Device.Tag`, `Device.*` or `*`. */
  tag: string;
  mode: PolicyMode;
  /** `deadband` mode: the smallest change kept (absolute, in the tag's unit). */
  deadband: number;
  /** Values closer together than this (ms) are skipped; 0: no minimum. */
  minIntervalMs: number;
}

export const DEFAULT_POLICY: HistoryPolicy = { tag: '*', mode: 'all', deadband: 0, minIntervalMs: 0 };

const TAG_PART = /^[A-Za-z0-9_:-]+$/;

/** Why `tag` is not a policy's tag pattern, or null. */
export function policyTagProblem(tag: string): string | null {
  if (tag === '*') return null;
  const parts = tag.split('.');
  if (parts.length !== 2) return 'must be "*", "Device.*" or "Device.Tag"';
  const [device, name] = parts as [string, string];
  if (!TAG_PART.test(device)) return `device name "${device}" may hold letters, digits, "_", "-" and ":"`;
  if (name !== '*' && !TAG_PART.test(name))
    return `tag name "${name}" may hold letters, digits, "_", "-" and ":"`;
  return null;
}

/** The policies by pattern, answering the one that applies to a tag. */
export class PolicyTable {
  readonly #byTag = new Map<string, HistoryPolicy>();

  constructor(policies: readonly HistoryPolicy[]) {
    for (const p of policies) this.#byTag.set(p.tag, p);
  }

  /** The policy of the tag `device.tag` (the default `all` when none names it). */
  of(device: string, tag: string): HistoryPolicy {
    return (
      this.#byTag.get(`${device}.${tag}`) ??
      this.#byTag.get(`${device}.*`) ??
      this.#byTag.get('*') ??
      DEFAULT_POLICY
    );
  }

  list(): HistoryPolicy[] {
    return [...this.#byTag.values()].sort((a, b) => a.tag.localeCompare(b.tag));
  }
}

/** What the recorder remembers of a tag: its policy and the last value kept. */
export interface TagState {
  id: number;
  policy: HistoryPolicy;
  /** Time of the last value kept (-Infinity before the first). */
  lastTs: number;
  /** The last value kept (undefined before the first). */
  last: number | string | undefined;
}

/** Whether the value `v` at `ts` is kept under the tag's policy (and remembers it when it is). */
export function keep(state: TagState, ts: number, v: number | string): boolean {
  const p = state.policy;
  if (p.mode === 'off') return false;
  if (p.minIntervalMs > 0 && ts - state.lastTs < p.minIntervalMs && ts >= state.lastTs) return false;
  if (p.mode !== 'all' && state.last !== undefined) {
    if (p.mode === 'deadband' && typeof v === 'number' && typeof state.last === 'number') {
      if (Math.abs(v - state.last) <= p.deadband) return false;
    } else if (v === state.last) return false;
  }
  state.lastTs = ts;
  state.last = v;
  return true;
}
