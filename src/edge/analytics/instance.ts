/**
 * One processor instance as the runtime runs it: its processor, its status and counters, and the
 * publish of its outputs on `analytics.publish.<id>` in the DataHub's flat payload shape (the
 * `Sink` its processor writes into). Kept in one object: a value on the bus reaches an instance's
 * state through as few objects as possible (with 1,000 instances, each one's objects are out of
 * the CPU's caches by the time its next value comes, and every object a value touches costs a
 * memory access).
 */
import type { DataHub, Outlet } from '../datahub/index.js';
import type { InputSpec } from './catalogue.js';
import type { Processor, Sink } from './processor.js';

export interface InstanceDef {
  id: string;
  workspaceId: string;
  name: string;
  kind: string;
  parameters: Record<string, unknown> & { inputs: InputSpec[] };
  enabled: boolean;
}

export type InstanceState = 'Running' | 'Stopped' | 'Failed';

export interface InstanceStatus {
  state: InstanceState;
  error: string | null;
  messagesIn: number;
  messagesOut: number;
  errors: number;
  console: string[];
}

/** The runtime's totals over every instance. */
export interface Totals {
  messagesIn: number;
  messagesOut: number;
}

export const OUTPUT_PREFIX = 'analytics.publish.';
export const outputSubject = (id: string) => `${OUTPUT_PREFIX}${id}`;

export class Running implements Sink {
  // The fields a value reads first (in this order in the object).
  /** Set while the instance runs (state `Running`), undefined otherwise. */
  processor: Processor | undefined = undefined;
  messagesIn = 0;
  messagesOut = 0;
  /** Where the outputs are published (made on the first output). */
  outlet: Outlet | undefined = undefined;
  /** The output payload's fields, from the definition. */
  readonly id: string;
  workspaceId: string;
  name: string;
  readonly kind: string;
  readonly totals: Totals;
  // The rest.
  def: InstanceDef;
  readonly key: string;
  readonly hub: DataHub;
  state: InstanceState = 'Stopped';
  error: string | null = null;
  errors = 0;
  readonly console: string[] = [];
  subs: Array<{ unsubscribe(): void }> = [];
  persistent = false;
  lastErrorLog = 0;

  constructor(def: InstanceDef, key: string, hub: DataHub, totals: Totals) {
    this.id = def.id;
    this.workspaceId = def.workspaceId;
    this.name = def.name;
    this.kind = def.kind;
    this.totals = totals;
    this.def = def;
    this.key = key;
    this.hub = hub;
  }

  /** The same instance under a new name or in another workspace (its processor goes on). */
  rename(def: InstanceDef): void {
    this.def = def;
    this.workspaceId = def.workspaceId;
    this.name = def.name;
  }

  get status(): InstanceStatus {
    return {
      state: this.state,
      error: this.error,
      messagesIn: this.messagesIn,
      messagesOut: this.messagesOut,
      errors: this.errors,
      console: this.console,
    };
  }

  /** Publishes one output (counted; built only when someone would receive it). */
  emit(v: unknown, timestamp: number, metadata: Record<string, unknown> | undefined): void {
    this.messagesOut++;
    this.totals.messagesOut++;
    // The outlet made apart (once): its code kept out of this path, which should inline into the
    // processor's (a call here boxes the value and the timestamp).
    const outlet = this.outlet ?? this.#outletOf();
    // Nobody reads this output (no subscriber, no external cluster): it is counted, not built.
    if (!outlet.interested()) {
      outlet.skip();
      return;
    }
    const value = v ?? null;
    outlet.publish({
      success: value !== null,
      datatype: typeof value === 'number' ? 'float64' : datatypeOf(value),
      timestamp,
      registerId: this.id,
      value,
      deviceID: this.workspaceId,
      deviceName: 'analytics',
      tagName: this.name,
      description: this.kind,
      metadata: metadata ?? {},
    });
  }

  #outletOf(): Outlet {
    return (this.outlet = this.hub.outlet(outputSubject(this.id)));
  }
}

export function datatypeOf(v: unknown): string {
  switch (typeof v) {
    case 'number':
      return 'float64';
    case 'boolean':
      return 'bool';
    case 'string':
      return 'string';
    default:
      return v === null || v === undefined ? 'null' : 'json';
  }
}
