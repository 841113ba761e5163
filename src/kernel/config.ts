/**
 * Configuration of a service: every option is a command-line flag (`--data-dir`), an environment
 * variable (`MILLWRIGHT_EDGE_DATA_DIR`) and a key of an optional JSON config file
 * (`{ "data-dir": "..." }`, given by `--config FILE` or `MILLWRIGHT_EDGE_CONFIG`). Precedence:
 * flag, then environment, then file, then the default. Values are validated at start; a bad one
 * stops the start with a `ConfigError` naming the key and where it came from.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export type OptionType = 'int' | 'string' | 'bool' | 'path' | 'enum' | 'url';

export interface OptionSpec {
  /** kebab-case name: the flag is `--<name>`, the file key `<name>`. */
  name: string;
  type: OptionType;
  description: string;
  default?: string | number | boolean;
  min?: number;
  max?: number;
  values?: readonly string[];
  /** Never echoed in messages or logs. */
  secret?: boolean;
  /** The heading it is listed under in `--help` and the docs: the service, or the module that owns it. */
  group?: string;
  /** A single-letter or alternative flag is not offered; keep options discoverable by name. */
}

export type ConfigValue = string | number | boolean | undefined;
export type ConfigValues = Record<string, ConfigValue>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** A port that is taken; `up` answers it by picking a free one, the single services by stopping. */
export class PortInUseError extends ConfigError {
  /** The option that sets the taken port (`datahub-port`), when known. */
  readonly option: string | undefined;
  constructor(message: string, option?: string) {
    super(message);
    this.option = option;
    this.name = 'PortInUseError';
  }
}

export function envName(service: string, option: string): string {
  return `MILLWRIGHT_${service.toUpperCase()}_${option.toUpperCase().replace(/-/g, '_')}`;
}

export function defaultDataDir(service: string): string {
  return join(homedir(), '.millwright', service);
}

interface Source {
  value: unknown;
  where: string;
}

/**
 * Resolves and validates the options of `service` from flags (already parsed, keyed by option
 * name; `undefined` for absent), the environment and the config file.
 */
export function loadConfig(
  service: string,
  specs: readonly OptionSpec[],
  flags: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
  /** Filled with where each option came from: `flag`, `env`, `file` or `default`. */
  sources: Record<string, 'flag' | 'env' | 'file' | 'default'> = {},
): ConfigValues {
  const configPath = (flags.config as string | undefined) ?? env[envName(service, 'config')];
  let file: Record<string, unknown> = {};
  if (configPath) {
    let text: string;
    try {
      text = readFileSync(configPath, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read config file "${configPath}": ${(err as Error).message}`);
    }
    try {
      const parsed: unknown = JSON.parse(text);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('expected a JSON object');
      file = parsed as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`config file "${configPath}" is not valid: ${(err as Error).message}`);
    }
    const known = new Set(specs.map((s) => s.name));
    for (const key of Object.keys(file)) {
      if (!known.has(key)) {
        throw new ConfigError(
          `unknown key "${key}" in config file "${configPath}"; known keys: ${[...known].sort().join(', ')}`,
        );
      }
    }
  }
  const out: ConfigValues = {};
  for (const spec of specs) {
    const camel = spec.name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    const flag = flags[spec.name] ?? flags[camel];
    const ev = env[envName(service, spec.name)];
    let src: Source | undefined;
    sources[spec.name] = 'default';
    if (flag !== undefined) {
      src = { value: flag, where: `flag --${spec.name}` };
      sources[spec.name] = 'flag';
    } else if (ev !== undefined && ev !== '') {
      src = { value: ev, where: `environment variable ${envName(service, spec.name)}` };
      sources[spec.name] = 'env';
    } else if (file[spec.name] !== undefined) {
      src = { value: file[spec.name], where: `key "${spec.name}" of ${configPath}` };
      sources[spec.name] = 'file';
    }
    out[spec.name] = src ? coerce(spec, src) : spec.default;
    if (spec.type === 'path' && typeof out[spec.name] === 'string')
      out[spec.name] = resolve(out[spec.name] as string);
  }
  return out;
}

function coerce(spec: OptionSpec, src: Source): ConfigValue {
  const shown = spec.secret ? '(hidden)' : JSON.stringify(src.value);
  const fail = (expected: string): never => {
    throw new ConfigError(
      `invalid value for "${spec.name}" (${src.where}): expected ${expected}, got ${shown}`,
    );
  };
  const v = src.value;
  switch (spec.type) {
    case 'int': {
      const n =
        typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
      const range = `an integer${spec.min !== undefined ? ` from ${spec.min}` : ''}${spec.max !== undefined ? ` to ${spec.max}` : ''}`;
      if (!Number.isInteger(n)) return fail(range);
      if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max))
        return fail(range);
      return n;
    }
    case 'bool': {
      if (typeof v === 'boolean') return v;
      const s = String(v).toLowerCase();
      if (['1', 'true', 'yes', 'on'].includes(s)) return true;
      if (['0', 'false', 'no', 'off'].includes(s)) return false;
      return fail('true or false');
    }
    case 'enum': {
      const s = String(v);
      if (!spec.values?.includes(s)) return fail(`one of ${spec.values?.join(', ')}`);
      return s;
    }
    case 'url': {
      const s = String(v);
      try {
        new URL(s);
      } catch {
        return fail('a URL');
      }
      return s;
    }
    case 'path':
    case 'string': {
      if (typeof v !== 'string' || v === '') return fail('a non-empty string');
      return v;
    }
  }
}

/** Resolved options as a service's config object: each kebab-case name becomes a camelCase key. */
export function toConfigObject<T>(values: ConfigValues): T {
  const out: Record<string, ConfigValue> = {};
  for (const [name, value] of Object.entries(values)) {
    out[name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  return out as T;
}

/** The defaults of `specs` with `overrides` on top: for tests and for services composed in one process. */
export function configWith<T>(specs: readonly OptionSpec[], overrides: Partial<T>): T {
  const defaults: ConfigValues = {};
  for (const spec of specs) defaults[spec.name] = spec.default;
  return { ...toConfigObject<T>(defaults), ...overrides };
}
