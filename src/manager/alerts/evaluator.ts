/**
 * The rule evaluator: every `intervalMs`, each enabled rule reads each device of the fleet (one
 * query for the fleet, one for the recent subtasks) and incidents open and resolve:
 *
 * | incident | condition                                  | then                                        |
 * | -------- | ------------------------------------------ | ------------------------------------------- |
 * | none     | holds for `forSeconds` (since it began)     | open (one per rule and device, even with two managers: `open_key`) |
 * | open     | clear for `clearSeconds` (hysteresis: a threshold rule clears under threshold minus `hysteresis`) | resolve (`manager:auto`), when the instance's `autoResolve` is on |
 * | open     | the rule is disabled, or the device removed | resolve (`manager:rule-disabled`, `manager:device-removed`) |
 *
 * An incident a person resolved does not open again until its condition cleared once (a
 * condition that began before that resolution is the same episode). The times a condition began
 * or cleared are kept in memory, one entry per rule and device at most (pruned each pass); a
 * manager started again counts them from its start, unless the facts tell (an edge offline since
 * its last heartbeat). Two managers on one database both evaluate; the database keeps one
 * incident open per rule and device and one resolution.
 */
import type { Logger } from 'pino';
import type { DeviceFacts, FleetService } from '../fleet/index.js';
import type { TaskService } from '../tasks/index.js';
import { ruleOf, type RuleInputs } from './catalog.js';
import type { AlertService, RuleSettings } from './service.js';

interface Watch {
  trueSince?: number | undefined;
  falseSince?: number | undefined;
}

export interface EvaluatorOptions {
  intervalMs: number;
  logger: Logger;
}

export class AlertEvaluator {
  readonly #alerts: AlertService;
  readonly #fleet: FleetService;
  readonly #tasks: TaskService;
  readonly #o: EvaluatorOptions;
  readonly #watch = new Map<string, Watch>();
  readonly startedAt = Date.now();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(alerts: AlertService, fleet: FleetService, tasks: TaskService, options: EvaluatorOptions) {
    this.#alerts = alerts;
    this.#fleet = fleet;
    this.#tasks = tasks;
    this.#o = options;
  }

  /** Entries of the condition watch (at most rules × devices). */
  get watched(): number {
    return this.#watch.size;
  }

  start(): void {
    this.#stopped = false;
    const loop = () => {
      if (this.#stopped) return;
      this.#running = this.evaluate()
        .catch((err: unknown) => this.#o.logger.warn({ err }, 'evaluating the platform rules failed'))
        .finally(() => {
          this.#running = null;
          if (!this.#stopped) this.#timer = setTimeout(loop, this.#o.intervalMs);
        });
    };
    this.#timer = setTimeout(loop, this.#o.intervalMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  /** One pass over every rule and device. */
  async evaluate(): Promise<void> {
    const now = Date.now();
    const rules = await this.#alerts.ruleSettings();
    const param = (key: string, name: string) => rules.find((r) => r.rule.key === key)?.params[name] ?? 0;
    const devices = await this.#fleet.alertFacts(now - param('link-flapping', 'windowSeconds') * 1000);
    const failures = await this.#tasks.latestFailures(now - param('task-failed', 'windowSeconds') * 1000);
    const open = new Map(
      (await this.#alerts.openIncidents()).map((i) => [`${i.rule_key}|${i.device_id}`, i]),
    );
    const autoResolve = (await this.#alerts.instanceSettings()).autoResolve;
    const inputs: RuleInputs = { now, startedAt: this.startedAt, failures };
    const seen = new Set<string>();
    for (const s of rules) {
      if (!s.enabled) continue;
      for (const d of devices) {
        const key = `${s.rule.key}|${d.id}`;
        seen.add(key);
        const incident = open.get(key);
        await this.#step(s, d, key, incident?.id, inputs, autoResolve);
      }
    }
    for (const k of this.#watch.keys()) if (!seen.has(k)) this.#watch.delete(k);
    // Incidents of a disabled rule or of a removed device resolve.
    const byDevice = new Set(devices.map((d) => d.id));
    for (const [key, incident] of open) {
      if (seen.has(key)) continue;
      const enabled = rules.find((r) => r.rule.key === incident.rule_key)?.enabled ?? false;
      const why =
        !ruleOf(incident.rule_key) || !enabled
          ? 'manager:rule-disabled'
          : !byDevice.has(incident.device_id)
            ? 'manager:device-removed'
            : null;
      if (why) await this.#alerts.resolve(incident.id, why);
    }
  }

  async #step(
    s: RuleSettings,
    d: DeviceFacts,
    key: string,
    incidentId: string | undefined,
    inputs: RuleInputs,
    autoResolve: boolean,
  ): Promise<void> {
    const reading = s.rule.read(d, s.params, inputs, incidentId !== undefined);
    const w = this.#watch.get(key) ?? {};
    if (reading.active) {
      w.falseSince = undefined;
      w.trueSince = reading.since ?? w.trueSince ?? inputs.now;
      this.#watch.set(key, w);
      if (incidentId !== undefined) return;
      if (inputs.now - w.trueSince < (s.params.forSeconds ?? 0) * 1000) return;
      if (await this.#alerts.resolvedByHandSince(s.rule.key, d.id, w.trueSince)) return;
      await this.#alerts.open(s, d, reading.summary, {
        value: reading.value ?? null,
        since: new Date(w.trueSince).toISOString(),
        params: s.params,
      });
      return;
    }
    w.trueSince = undefined;
    if (incidentId === undefined) {
      this.#watch.delete(key);
      return;
    }
    w.falseSince = w.falseSince ?? inputs.now;
    this.#watch.set(key, w);
    if (!autoResolve || inputs.now - w.falseSince < (s.params.clearSeconds ?? 0) * 1000) return;
    await this.#alerts.resolve(incidentId, 'manager:auto');
    this.#watch.delete(key);
  }
}
