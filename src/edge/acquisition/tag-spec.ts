/**
 * A tag's spec as the acquisition engine reads and publishes it, made from its DeviceHub
 * configuration: the formula compiled, the subjects made once, the strings its device's tags share
 * interned.
 */
import type { TagConfig } from '../devicehub/index.js';
import { compileFormula, FormulaError, type Formula } from './formula.js';
import { flat } from './subjects.js';
import type { TagSpec } from './types.js';

/** The same few strings (device names and ids, registers, value types) shared by every tag. */
const interned = new Map<string, string>();
const MAX_INTERNED = 10_000;
function intern(s: string): string {
  const known = interned.get(s);
  if (known !== undefined) return known;
  if (interned.size < MAX_INTERNED) interned.set(s, s);
  return s;
}

export function tagSpec(c: TagConfig): { tag: TagSpec; formulaError?: string } {
  let formula: Formula | null = null;
  let formulaError: string | undefined;
  if (c.formula && c.formula.trim() !== '') {
    try {
      formula = compileFormula(c.formula);
    } catch (err) {
      formulaError = `TagFormula ${JSON.stringify(c.formula)}: ${err instanceof FormulaError ? err.message : String(err)}`;
    }
  }
  const path = `${c.deviceName}.${c.tagName}`;
  const tag: TagSpec = {
    id: c.id,
    deviceId: intern(c.deviceId),
    deviceName: intern(c.deviceName),
    tagName: c.tagName,
    register: intern(c.register),
    description: c.description,
    valueType: intern(c.valueType),
    publishCoV: c.publishCoV,
    formula,
    intervalMs: c.intervalMs,
    props: c.properties,
    metadata: c.metadata,
    rawSubject: flat(`devicehub.raw.${path}`),
    aliasSubject: c.aliasTopics ? flat(`devicehub.alias.${path}`) : null,
    valueSubject: undefined,
    writeResponseSubject: undefined,
  };
  return formulaError ? { tag, formulaError } : { tag };
}
