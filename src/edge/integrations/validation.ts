/**
 * Instance configuration checked against its provider's schema. A config that breaks a rule is
 * refused with a message naming the property and the rule; a valid one comes back with defaults
 * applied and unknown keys refused.
 */
import { badRequest } from '../../kernel/errors.js';
import type { PropertyDef, ProviderDef, When } from './catalogue.js';

export type InstanceConfig = Record<string, unknown>;

/** Largest serialised config (certificates included). */
export const MAX_CONFIG_BYTES = 256 * 1024;

const holds = (when: When, config: InstanceConfig) => when.in.includes(config[when.property] as never);

const describeWhen = (w: When) => `when ${w.property} is ${w.in.map((v) => JSON.stringify(v)).join(' or ')}`;

function coerce(def: PropertyDef, value: unknown): unknown {
  const fail = (what: string) =>
    badRequest(`config property "${def.name}": ${what}, got ${JSON.stringify(value)}`);
  switch (def.type) {
    case 'Integer': {
      const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw fail('must be an integer');
      if (def.min !== undefined && n < def.min) throw fail(`must be at least ${def.min}`);
      if (def.max !== undefined && n > def.max) throw fail(`must be at most ${def.max}`);
      return n;
    }
    case 'Boolean': {
      if (value === 'true') return true;
      if (value === 'false') return false;
      if (typeof value !== 'boolean') throw fail('must be true or false');
      return value;
    }
    case 'Json': {
      let v = value;
      if (typeof v === 'string') {
        try {
          v = JSON.parse(v);
        } catch {
          throw fail('must be a JSON object');
        }
      }
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw fail('must be a JSON object');
      return v;
    }
    case 'Pem': {
      if (typeof value !== 'string' || !/-----BEGIN [A-Z0-9 ]+-----/.test(value)) {
        throw badRequest(`config property "${def.name}": must be PEM text (-----BEGIN ...-----)`);
      }
      return value;
    }
    default:
      if (typeof value !== 'string') throw fail('must be a string');
      return value;
  }
}

/**
 * Checks `raw` (a JSON object, or a list of `{ Key, Value }` pairs) against the provider. When
 * `previous` is given (an update), secret properties sent as the mask keep their stored value.
 */
export function validateConfig(
  provider: ProviderDef,
  raw: unknown,
  previous?: InstanceConfig,
): InstanceConfig {
  let input: Record<string, unknown>;
  if (raw === undefined || raw === null) input = {};
  else if (Array.isArray(raw)) {
    input = {};
    for (const kv of raw as Array<{ Key?: unknown; Value?: unknown }>) {
      if (typeof kv?.Key !== 'string') throw badRequest('Config pairs must be { Key, Value }');
      input[kv.Key] = kv.Value;
    }
  } else if (typeof raw === 'object') input = { ...(raw as Record<string, unknown>) };
  else throw badRequest('Config must be a JSON object of provider properties');
  if (JSON.stringify(input).length > MAX_CONFIG_BYTES) {
    throw badRequest(`Config is larger than ${MAX_CONFIG_BYTES} bytes`);
  }

  const defs = new Map(provider.properties.map((d) => [d.name, d]));
  for (const key of Object.keys(input)) {
    if (!defs.has(key)) {
      throw badRequest(
        `config property "${key}" is not a property of provider "${provider.name}"; properties: ${[...defs.keys()].join(', ')}`,
      );
    }
  }
  const out: InstanceConfig = {};
  // Enumerations first: conditions read them.
  for (const def of provider.properties) {
    let value = input[def.name];
    if (def.secret && previous && value === SECRET_MASK) value = previous[def.name];
    if (value === undefined || value === null || value === '') {
      if (def.default !== undefined) out[def.name] = def.default;
      continue;
    }
    const v = coerce(def, value);
    if (def.enum && !def.enum.includes(v as never)) {
      throw badRequest(
        `config property "${def.name}": must be one of ${def.enum.join(', ')}, got ${JSON.stringify(value)}`,
      );
    }
    out[def.name] = v;
  }
  for (const def of provider.properties) {
    if (def.appliesWhen && !holds(def.appliesWhen, out)) {
      delete out[def.name];
      continue;
    }
    if (out[def.name] !== undefined) continue;
    if (def.required) {
      throw badRequest(
        `config property "${def.name}" is required${def.appliesWhen ? ` ${describeWhen(def.appliesWhen)}` : ''}`,
      );
    }
    if (def.requiredWhen && holds(def.requiredWhen, out)) {
      throw badRequest(`config property "${def.name}" is required ${describeWhen(def.requiredWhen)}`);
    }
  }
  return out;
}

/** What reads show instead of a secret value; sending it back on update keeps the secret. */
export const SECRET_MASK = '********';

export function maskSecrets(provider: ProviderDef | undefined, config: InstanceConfig): InstanceConfig {
  if (!provider) return config;
  const out = { ...config };
  for (const def of provider.properties)
    if (def.secret && out[def.name] !== undefined) out[def.name] = SECRET_MASK;
  return out;
}
