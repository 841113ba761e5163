/**
 * The envelope of a configuration template document (format `millwright.config-template`,
 * version 1; docs/configuration-templates.md), shared by the edge, which applies documents, and
 * the edge manager, which keeps and pushes them: the same check on both sides, so that the
 * manager refuses what an edge would refuse. The sections are the edge modules' to check.
 */
import { AppError, ERRORS } from './errors.js';
import type { SectionIssue } from './service/index.js';

export const TEMPLATE_FORMAT = 'millwright.config-template';
export const TEMPLATE_VERSION = 1;

export interface EncryptionHeader {
  kdf: 'scrypt';
  N: number;
  r: number;
  p: number;
  /** base64url, 16 bytes. */
  salt: string;
  cipher: 'aes-256-gcm';
  /** A known text encrypted with the key: tells a wrong key from a damaged secret. */
  check: string;
}

export interface TemplateDocument {
  format: typeof TEMPLATE_FORMAT;
  version: number;
  createdAt?: string;
  /** Values for `{{name}}` placeholders, keyed by section. */
  parameters?: Record<string, Record<string, string>>;
  encryption?: EncryptionHeader;
  sections: Record<string, unknown>;
}

const ENVELOPE_FIELDS = new Set(['format', 'version', 'createdAt', 'parameters', 'encryption', 'sections']);

/** The document when its envelope is one edges read; a 400 `invalid_template` otherwise. */
export function checkEnvelope(doc: unknown): TemplateDocument {
  const bad = (message: string) => new AppError(ERRORS.invalidTemplate, `invalid template: ${message}`);
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw bad('the document must be a JSON object');
  const d = doc as Record<string, unknown>;
  for (const k of Object.keys(d)) if (!ENVELOPE_FIELDS.has(k)) throw bad(`unknown field "${k}"`);
  if (d.format !== TEMPLATE_FORMAT) throw bad(`format must be "${TEMPLATE_FORMAT}"`);
  if (d.version !== TEMPLATE_VERSION)
    throw bad(
      `version ${JSON.stringify(d.version)} is not supported; edges read version ${TEMPLATE_VERSION}`,
    );
  if (!d.sections || typeof d.sections !== 'object' || Array.isArray(d.sections))
    throw bad('sections must be an object keyed by section');
  if (d.parameters !== undefined) checkParameters(d.parameters, 'parameters');
  if (d.encryption !== undefined) {
    const e = d.encryption as Record<string, unknown>;
    if (
      !e ||
      e.kdf !== 'scrypt' ||
      e.cipher !== 'aes-256-gcm' ||
      typeof e.salt !== 'string' ||
      typeof e.check !== 'string' ||
      ![e.N, e.r, e.p].every((n) => Number.isSafeInteger(n) && (n as number) > 0) ||
      (e.N as number) > 1 << 20 ||
      (e.r as number) > 32 ||
      (e.p as number) > 16
    )
      throw bad('encryption must be { kdf: "scrypt", N, r, p, salt, cipher: "aes-256-gcm", check }');
  }
  return d as unknown as TemplateDocument;
}

/** `parameters` is an object keyed by section, each an object of string values. */
export function checkParameters(value: unknown, field: string): Record<string, Record<string, string>> {
  const bad = (m: string) => new AppError(ERRORS.invalidTemplate, `invalid template: ${field}${m}`);
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw bad(' must be an object keyed by section (not an array)');
  for (const [section, values] of Object.entries(value)) {
    if (!values || typeof values !== 'object' || Array.isArray(values))
      throw bad(`.${section} must be an object of parameter values`);
    for (const [k, v] of Object.entries(values)) {
      if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')
        throw bad(`.${section}.${k} must be a string, number or boolean`);
    }
  }
  return value as Record<string, Record<string, string>>;
}

/** A placeholder, or an escaped `{{` (`\{{`: the text `{{`, no placeholder). */
const PLACEHOLDER_OR_ESCAPE = /\\\{\{|\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

/**
 * `content` with every `{{name}}` in its strings replaced by `values[name]`; a string that is only
 * a placeholder takes the value's type. A placeholder without a value is an issue. `\{{` is the
 * text `{{` (see `escapePlaceholders` in src/edge/config/document.ts). The edge applies with it; the
 * manager shows with it what a device would get (its preview's content).
 */
export function substitute(
  content: unknown,
  values: Record<string, unknown>,
  issues: SectionIssue[],
  path = '',
): unknown {
  return substituteAt(content, values, issues, { parent: undefined, key: path });
}

/**
 * Where a value is: its parent's place and its key; the root's key is the path given. The path
 * text is made only for an issue (a document of 100,000 tags has millions of places, few issues).
 */
interface Place {
  parent: Place | undefined;
  key: string | number;
}

function placeText(place: Place): string {
  const keys: Array<string | number> = [];
  for (let p: Place | undefined = place; p; p = p.parent) keys.push(p.key);
  let out = keys[keys.length - 1] as string;
  for (let i = keys.length - 2; i >= 0; i--) {
    const key = keys[i]!;
    out = typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${key}` : key;
  }
  return out;
}

function substituteAt(
  content: unknown,
  values: Record<string, unknown>,
  issues: SectionIssue[],
  place: Place,
): unknown {
  if (typeof content === 'string') {
    if (!content.includes('{{')) return content;
    const path = placeText(place);
    const whole = /^\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}$/.exec(content);
    if (whole) {
      if (!(whole[1]! in values)) {
        issues.push({ path, message: `parameter "${whole[1]}" has no value` });
        return content;
      }
      const v = values[whole[1]!];
      return typeof v === 'string' ? v : String(v);
    }
    return content.replace(PLACEHOLDER_OR_ESCAPE, (m, name: string | undefined) => {
      if (name === undefined) return '{{';
      if (!(name in values)) {
        issues.push({ path, message: `parameter "${name}" has no value` });
        return m;
      }
      return String(values[name]);
    });
  }
  if (content === null || typeof content !== 'object') return content;
  if (Array.isArray(content)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < content.length; i++) {
      const item: unknown = content[i];
      if (typeof item !== 'string' && (item === null || typeof item !== 'object')) continue;
      const v = substituteAt(item, values, issues, { parent: place, key: i });
      if (v !== item) (out ??= [...content])[i] = v;
    }
    return out ?? content;
  }
  let out: Record<string, unknown> | undefined;
  const obj = content as Record<string, unknown>;
  for (const k in obj) {
    if (!Object.hasOwn(obj, k)) continue;
    const v = obj[k];
    if (typeof v !== 'string' && (v === null || typeof v !== 'object')) continue;
    if (typeof v === 'string' && !v.includes('{{')) continue;
    const n = substituteAt(v, values, issues, { parent: place, key: k });
    if (n !== v) (out ??= { ...obj })[k] = n;
  }
  return out ?? content;
}
