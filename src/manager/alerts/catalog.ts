/**
 * The platform rules: what the manager watches over what the fleet reports. Each rule reads one
 * device's facts (online flag, last heartbeat, the metrics of its heartbeats, its recent links,
 * its latest failed subtask) and says whether its condition holds now (`Reading`), with the time
 * the condition began when the facts tell it (an edge offline since its last heartbeat). The
 * evaluator (`evaluator.ts`) adds the waits (`forSeconds` before opening, `clearSeconds` before
 * resolving) and the hysteresis: an open incident of a threshold rule stays open until the value
 * falls below the threshold minus `hysteresis`.
 */
import type { DeviceFacts } from '../fleet/index.js';

export const SEVERITIES = ['INFO', 'WARNING', 'MAJOR', 'CRITICAL'] as const;
export type Severity = (typeof SEVERITIES)[number];

export function severityRank(s: Severity): number {
  return SEVERITIES.indexOf(s);
}

export interface ParamSpec {
  description: string;
  minimum: number;
  maximum: number;
  default: number;
}

/** What a rule reads besides the device: the latest failed subtask of each device. */
export interface RuleInputs {
  now: number;
  /** When this evaluator started: an edge offline before it is counted offline from then. */
  startedAt: number;
  failures: Map<
    string,
    { subtaskId: string; taskId: string; type: string; error: string | null; at: number }
  >;
}

export interface Reading {
  /** The condition holds. */
  active: boolean;
  /** When the condition began, when the facts tell it (else the evaluator's first sight). */
  since?: number;
  /** The value read (seconds offline, percent, days left...). */
  value?: number | string | null;
  summary: string;
}

export interface RuleDefinition {
  key: string;
  name: string;
  description: string;
  severity: Severity;
  params: Record<string, ParamSpec>;
  /** Reads one device; `open` when the device has an open incident of this rule (hysteresis). */
  read(device: DeviceFacts, params: Record<string, number>, inputs: RuleInputs, open: boolean): Reading;
}

const forSeconds = (def: number): ParamSpec => ({
  description: 'seconds the condition must hold before an incident opens',
  minimum: 0,
  maximum: 86_400,
  default: def,
});
const clearSeconds = (def: number): ParamSpec => ({
  description: 'seconds the condition must be clear before the incident resolves',
  minimum: 0,
  maximum: 86_400,
  default: def,
});
const percent = (def: number): ParamSpec => ({
  description: 'percent above which the condition holds',
  minimum: 1,
  maximum: 100,
  default: def,
});
const hysteresis: ParamSpec = {
  description: 'percentage points under the threshold the value must fall to before the incident can resolve',
  minimum: 0,
  maximum: 50,
  default: 5,
};

/** A threshold rule over one percent metric of the heartbeats. */
function thresholdRule(
  key: string,
  name: string,
  metric: string,
  what: string,
  severity: Severity,
): RuleDefinition {
  return {
    key,
    name,
    description: `${what} above \`threshold\` percent for \`forSeconds\` (heartbeat metric \`${metric}\`)`,
    severity,
    params: {
      threshold: percent(90),
      hysteresis,
      forSeconds: forSeconds(300),
      clearSeconds: clearSeconds(60),
    },
    read(device, p, _inputs, open) {
      const v = device.metrics[metric];
      if (!device.online || typeof v !== 'number' || !Number.isFinite(v))
        return { active: false, value: null, summary: `${what} not reported` };
      const limit = open ? p.threshold! - p.hysteresis! : p.threshold!;
      return {
        active: v > limit,
        value: v,
        summary: `${what} of ${device.name} at ${v.toFixed(1)}% (threshold ${p.threshold}%)`,
      };
    },
  };
}

function timeOf(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isFinite(t) ? t : null;
  }
  return null;
}

export const RULES: readonly RuleDefinition[] = [
  {
    key: 'device-offline',
    name: 'Device offline',
    description: 'the edge has no link to the manager for `forSeconds`',
    severity: 'CRITICAL',
    params: { forSeconds: forSeconds(60), clearSeconds: clearSeconds(0) },
    read(device, _p, inputs) {
      if (device.online) return { active: false, value: 0, summary: `${device.name} is online` };
      const since = Math.max(device.lastSeen ?? device.activatedAt, inputs.startedAt);
      const secs = Math.max(0, Math.round((inputs.now - since) / 1000));
      return { active: true, since, value: secs, summary: `${device.name} is offline for ${secs} s` };
    },
  },
  thresholdRule('device-cpu', 'CPU high', 'cpuPercent', 'CPU use', 'WARNING'),
  thresholdRule('device-memory', 'Memory high', 'memoryPercent', 'memory use', 'WARNING'),
  thresholdRule('device-disk', 'Disk full', 'diskPercent', 'disk use', 'MAJOR'),
  {
    key: 'link-flapping',
    name: 'Link flapping',
    description: 'the edge opened `count` links or more within `windowSeconds`',
    severity: 'WARNING',
    params: {
      count: { description: 'links within the window', minimum: 2, maximum: 10_000, default: 5 },
      windowSeconds: { description: 'the window, seconds', minimum: 10, maximum: 86_400, default: 600 },
      forSeconds: forSeconds(0),
      clearSeconds: clearSeconds(0),
    },
    read(device, p) {
      return {
        active: device.linksSince >= p.count!,
        value: device.linksSince,
        summary: `${device.name} linked ${device.linksSince} times in ${p.windowSeconds} s`,
      };
    },
  },
  {
    key: 'task-failed',
    name: 'Template task failed',
    description:
      "the device's latest subtask (a template apply...) within `windowSeconds` failed; clears when a later one succeeds",
    severity: 'MAJOR',
    params: {
      windowSeconds: {
        description: 'how far back, seconds',
        minimum: 60,
        maximum: 2_592_000,
        default: 86_400,
      },
      forSeconds: forSeconds(0),
      clearSeconds: clearSeconds(0),
    },
    read(device, _p, inputs) {
      const f = inputs.failures.get(device.id);
      if (!f) return { active: false, value: null, summary: `no failed task on ${device.name}` };
      return {
        active: true,
        since: f.at,
        value: f.taskId,
        summary: `${f.type} task ${f.taskId} failed on ${device.name}: ${f.error ?? 'no reason given'}`,
      };
    },
  },
  {
    key: 'certificate-expiry',
    name: 'Certificate near expiry',
    description: "the edge's HTTPS certificate expires within `days` (heartbeat metric `certNotAfter`)",
    severity: 'WARNING',
    params: {
      days: { description: 'days before expiry', minimum: 1, maximum: 3650, default: 30 },
      forSeconds: forSeconds(0),
      clearSeconds: clearSeconds(0),
    },
    read(device, p, inputs) {
      const at = timeOf(device.metrics.certNotAfter);
      if (at === null) return { active: false, value: null, summary: 'certificate expiry not reported' };
      const days = Math.floor((at - inputs.now) / 86_400_000);
      return {
        active: at - inputs.now < p.days! * 86_400_000,
        value: days,
        summary: `the certificate of ${device.name} expires on ${new Date(at).toISOString()} (${days} days)`,
      };
    },
  },
  {
    key: 'integration-down',
    name: 'Integration down',
    description:
      'an integration of the edge is disconnected for `forSeconds` (heartbeat metric `integrationsDown`)',
    severity: 'MAJOR',
    params: { forSeconds: forSeconds(120), clearSeconds: clearSeconds(30) },
    read(device) {
      const down = device.metrics.integrationsDown;
      const names = Array.isArray(down) ? down.filter((x): x is string => typeof x === 'string') : [];
      if (!device.online || names.length === 0)
        return { active: false, value: 0, summary: `no integration of ${device.name} is down` };
      return {
        active: true,
        value: names.length,
        summary: `integrations down on ${device.name}: ${names.slice(0, 10).join(', ')}`,
      };
    },
  },
];

const BY_KEY = new Map(RULES.map((r) => [r.key, r]));

export function ruleOf(key: string): RuleDefinition | undefined {
  return BY_KEY.get(key);
}

/** The parameters of a rule: its defaults with `stored` on top (unknown keys dropped). */
export function paramsOf(rule: RuleDefinition, stored: Record<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, spec] of Object.entries(rule.params)) {
    const v = stored[k];
    out[k] = typeof v === 'number' && v >= spec.minimum && v <= spec.maximum ? v : spec.default;
  }
  return out;
}

/** Checks parameters given to a rule; answers the problem, or null. */
export function paramProblem(rule: RuleDefinition, given: Record<string, unknown>): string | null {
  for (const [k, v] of Object.entries(given)) {
    const spec = rule.params[k];
    if (!spec)
      return `rule "${rule.key}" has no parameter "${k}" (it has ${Object.keys(rule.params).join(', ')})`;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < spec.minimum || v > spec.maximum)
      return `${k} must be a number from ${spec.minimum} to ${spec.maximum}`;
  }
  return null;
}
