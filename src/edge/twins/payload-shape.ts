/**
 * The parts of a twin at run time that its payload is built from: a slot per dynamic attribute, the
 * shape of the model's hierarchy, and the function compiled for a shape that builds the payload.
 */
import type { Twin } from './runtime.js';
import type { Compiled } from './transform.js';
import type { DynamicAttributeRecord } from './types.js';

export interface Slot {
  record: DynamicAttributeRecord;
  name: string;
  value: unknown;
  /** When the last input arrived (epoch ms); 0: none yet. */
  at: number;
  error: string | null;
  compiled: Compiled | null;
  /** Evaluations of the slot's transformation started, and the latest whose result it holds. */
  seq: number;
  applied: number;
  /** Nested instances (NestedInstanceID: one; NestedModelID: every instance of the model). */
  nested: Twin[] | null;
  byName: boolean;
}

export type Shape =
  | { key: string; kind: 'folder'; children: Shape[] }
  | { key: string; kind: 'const'; value: unknown }
  | { key: string; kind: 'slot'; slot: Slot };

/**
 * The payload of an instance is built by a function made for its shape, an object literal with
 * the shape's keys (`{"Nameplate":{"Vendor":c[0]},"Pressure":s[0].value}`): V8 builds such
 * literals far faster than objects grown key by key, and instances of one model share one
 * function. Keys are written with JSON.stringify (so any text is a safe literal key; `__proto__`
 * is refused as a name on save) and values are read from arrays, so no configuration text is code.
 */
export interface CompiledShape {
  data: (consts: unknown[], slots: Slot[], value: (slot: Slot) => unknown) => Record<string, unknown>;
  ages: (
    slots: Slot[],
    now: number,
    age: (slot: Slot, now: number) => number | null,
  ) => Record<string, number | null>;
  consts: unknown[];
  slots: Slot[];
}

/** A function made from generated source (see CompiledShape): its arguments `c`, `s`, `v`. */
type Built = (c: unknown, s: Slot[], v: (slot: Slot, now: number) => unknown) => unknown;

const builders = new Map<string, Built>();

export function builder(source: string): Built {
  let fn = builders.get(source);
  if (!fn) {
    // See CompiledShape: keys are JSON literals, values come from arrays.
    fn = new Function('c', 's', 'v', `return ${source};`) as Built;
    if (builders.size < 10_000) builders.set(source, fn);
  }
  return fn;
}

export function compileShape(shape: Shape[], twinSlots: Slot[]): CompiledShape {
  const consts: unknown[] = [];
  const slots: Slot[] = [];
  const expr = (list: Shape[]): string =>
    `{${list
      .map((x) => {
        const key = JSON.stringify(x.key);
        if (x.kind === 'folder') return `${key}:${expr(x.children)}`;
        if (x.kind === 'const') return `${key}:c[${consts.push(x.value) - 1}]`;
        const i = slots.push(x.slot) - 1;
        return x.slot.nested ? `${key}:v(s[${i}])` : `${key}:s[${i}].value`;
      })
      .join(',')}}`;
  const data = builder(expr(shape));
  const ages = builder(
    `{${twinSlots
      .map((x, i) =>
        x.nested
          ? `${JSON.stringify(x.name)}:v(s[${i}],c)`
          : `${JSON.stringify(x.name)}:s[${i}].at===0?null:c-s[${i}].at`,
      )
      .join(',')}}`,
  );
  return {
    data: data as CompiledShape['data'],
    ages: ((slotsArg: Slot[], now: number, age: (slot: Slot, now: number) => number | null) =>
      ages(now, slotsArg, age)) as CompiledShape['ages'],
    consts,
    slots,
  };
}

/** Milliseconds since a slot's last input (nested: since the oldest payload it embeds), or null. */
export function ageOf(slot: Slot, now: number): number | null {
  if (!slot.nested) return slot.at === 0 ? null : now - slot.at;
  let oldest = Infinity;
  for (const n of slot.nested) oldest = Math.min(oldest, n.lastPublishedAt ?? 0);
  return oldest === 0 || oldest === Infinity ? null : now - oldest;
}

export function slotValue(slot: Slot): unknown {
  if (!slot.nested) return slot.value;
  if (!slot.byName) return (slot.nested[0]?.lastPayload?.data as unknown) ?? null;
  const out: Record<string, unknown> = {};
  for (const n of slot.nested) out[n.record.name] = n.lastPayload?.data ?? null;
  return out;
}
