/**
 * The broker's verdict on a topic, shared by its hooks (`authorizePublish`, `authorizeSubscribe`)
 * and the console's rule tester (`testRule`), so that the tester answers what a real connection of
 * the account would be told: the same limits, the same reserved names, and the account's rules
 * through `ConnectionRules`, the object each connection holds. Also the publish meter of
 * `brokerMetrics`.
 */
import {
  CompiledRules,
  ConnectionRules,
  filterProblem,
  type AccountService,
  type Rule,
} from '../accounts/index.js';
import { reservedProblem, topicProblem } from './aedes-support.js';
import type { BrokerLimits } from './options.js';
import { sharedProblem, underlyingFilter } from './wire.js';

/** Why the broker refuses a PUBLISH to `topic` whatever the account, or null. */
export function publishProblem(topic: string, limits: BrokerLimits): string | null {
  return topicProblem(topic, limits) ?? reservedProblem(topic);
}

/** Why the broker refuses a SUBSCRIBE to `topic` (a filter, maybe `$share/...`) whatever the account, or null. */
export function subscribeProblem(topic: string, limits: BrokerLimits): string | null {
  return sharedProblem(topic) ?? topicProblem(underlyingFilter(topic), limits);
}

export type RuleAction = 'publish' | 'subscribe';

export interface RuleVerdict {
  allowed: boolean;
  /** Why, in words: the rules that allow it, or what refuses it. */
  reason: string;
  /** The account's rules that allow it (empty when refused). */
  matchedRules: Rule[];
}

/**
 * Whether the account `accountId` may publish to (subscribe to) `topic`, as the broker decides it
 * for a connection of that account; undefined when there is no such account.
 */
export function ruleVerdict(
  accounts: AccountService,
  limits: BrokerLimits,
  accountId: string,
  action: RuleAction,
  topic: string,
): RuleVerdict | undefined {
  const account = accounts.get(accountId);
  const compiled = accounts.compiled(accountId);
  if (!account || !compiled) return undefined;
  const refused = (reason: string): RuleVerdict => ({ allowed: false, reason, matchedRules: [] });
  if (!account.enabled) return refused(`the account "${account.username}" is disabled: it cannot connect`);
  // A PUBLISH with an empty or wildcard topic is a protocol error: the MQTT parser closes it first.
  if (action === 'publish' && (topic === '' || /[+#]/.test(topic)))
    return refused('a topic name is not empty and has no wildcard (+, #)');
  if (action === 'subscribe' && filterProblem(underlyingFilter(topic)))
    return refused(`not a topic filter: ${filterProblem(underlyingFilter(topic))}`);
  const problem = action === 'publish' ? publishProblem(topic, limits) : subscribeProblem(topic, limits);
  if (problem) return refused(`the broker refuses this topic: ${problem}`);
  const filter = underlyingFilter(topic);
  const rules = new ConnectionRules(compiled);
  const allowed = action === 'publish' ? rules.canPublish(topic) : rules.canSubscribe(filter);
  if (!allowed) {
    return refused(
      `no ${action === 'publish' ? 'Pub or PubSub rule matches' : 'Sub or PubSub rule covers'} "${topic}"`,
    );
  }
  const matchedRules = account.rules.filter((r) => {
    const one = new CompiledRules([r]);
    return action === 'publish' ? one.canPublish(topic) : one.canSubscribe(filter);
  });
  return {
    allowed: true,
    reason: `allowed by ${matchedRules.map((r) => `${r.perm} ${r.path}`).join(', ')}`,
    matchedRules,
  };
}

/** Width of the meter's window, seconds. */
const WINDOW_S = 10;

/** Messages per second over the last full `WINDOW_S` seconds: a fixed ring of one-second counts. */
export class MessageMeter {
  readonly #counts = new Float64Array(WINDOW_S + 1);
  #second = Math.floor(Date.now() / 1000);
  total = 0;

  mark(now = Date.now()): void {
    this.#advance(now);
    this.#counts[this.#second % this.#counts.length]!++;
    this.total++;
  }

  /** Messages per second over the last `WINDOW_S` full seconds. */
  rate(now = Date.now()): number {
    this.#advance(now);
    let sum = 0;
    for (let i = 1; i <= WINDOW_S; i++) sum += this.#counts[(this.#second - i) % this.#counts.length]!;
    return sum / WINDOW_S;
  }

  #advance(now: number): void {
    const second = Math.floor(now / 1000);
    if (second <= this.#second) return;
    const steps = Math.min(second - this.#second, this.#counts.length);
    for (let i = 1; i <= steps; i++) this.#counts[(this.#second + i) % this.#counts.length] = 0;
    this.#second = second;
  }
}
