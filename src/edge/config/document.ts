/**
 * The configuration template document (format `millwright.config-template`, version 1; see
 * docs/configuration-templates.md): its envelope, its secrets (encrypted with a key derived from a
 * user's `encryptionKey`: scrypt, then AES-256-GCM per secret) and its parameters (values
 * substituted into `{{name}}` placeholders of a section at apply).
 */
import {
  createCipheriv,
  createDecipheriv,
  randomBytes,
  scrypt as scryptCb,
  timingSafeEqual,
} from 'node:crypto';
import { promisify } from 'node:util';
import { AppError, badRequest, ERRORS } from '../../kernel/errors.js';
import type { SectionIssue } from '../../kernel/service/index.js';
import {
  checkEnvelope,
  type EncryptionHeader,
  type TemplateDocument,
} from '../../kernel/template-envelope.js';

const scrypt = promisify(scryptCb) as (
  pw: string,
  salt: Buffer,
  len: number,
  opts: object,
) => Promise<Buffer>;

export {
  checkEnvelope,
  checkParameters,
  substitute,
  TEMPLATE_FORMAT,
  TEMPLATE_VERSION,
  type EncryptionHeader,
  type TemplateDocument,
} from '../../kernel/template-envelope.js';

/** scrypt N=2^15, r=8, p=1: about 100 ms and 32 MiB per derivation. */
const KDF = { N: 32768, r: 8, p: 1 };
const CHECK_TEXT = 'millwright-config-key-check';

/** A 400 for a template that cannot be applied; `details` lists `{ section, path, message }`. */
export function malformed(issues: Array<SectionIssue & { section: string }>): AppError {
  const first = issues[0]!;
  const where = first.path ? `${first.section}: ${first.path}` : first.section;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more problems)` : '';
  return new AppError(ERRORS.invalidTemplate, `invalid template: section ${where}: ${first.message}${more}`, {
    details: issues.slice(0, 100),
  });
}

/** Parses and checks the envelope of a template text (not the sections' content). */
export function parseDocument(text: string): TemplateDocument {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new AppError(ERRORS.invalidTemplate, `invalid template: not JSON: ${(err as Error).message}`);
  }
  return checkEnvelope(doc);
}

/**
 * `content` with every `{{` in its strings escaped as `\{{`: what the edge exports into a
 * document (a twin's topic `devicehub.raw.{{Device}}.pressure` is the module's own placeholder,
 * not a template parameter), so that `substitute` gives the exported text back.
 */
export function escapePlaceholders<T>(content: T): T {
  return copyOnWrite(content, (text) => (text.includes('{{') ? text.replace(/\{\{/g, '\\{{') : text)) as T;
}

/**
 * `content` with `map` applied to every string; unchanged arrays and objects are shared, not
 * copied (an export of 100,000 tags has a few strings to change, if any).
 */
function copyOnWrite(content: unknown, map: (text: string) => string): unknown {
  if (typeof content === 'string') return map(content);
  if (Array.isArray(content)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < content.length; i++) {
      const v = copyOnWrite(content[i], map);
      if (v !== content[i]) (out ??= [...content])[i] = v;
    }
    return out ?? content;
  }
  if (content && typeof content === 'object') {
    const obj = content as Record<string, unknown>;
    let out: Record<string, unknown> | undefined;
    for (const k in obj) {
      if (!Object.hasOwn(obj, k)) continue;
      const v = copyOnWrite(obj[k], map);
      if (v !== obj[k]) (out ??= { ...obj })[k] = v;
    }
    return out ?? content;
  }
  return content;
}

// --- secrets

/** A key derived from a user's encryption key. */
export interface DerivedKey {
  header: EncryptionHeader;
  key: Buffer;
}

export async function deriveKey(encryptionKey: string, header?: EncryptionHeader): Promise<DerivedKey> {
  if (encryptionKey.length < 8) throw badRequest('encryptionKey must have at least 8 characters');
  const params = header ?? {
    kdf: 'scrypt',
    ...KDF,
    salt: randomBytes(16).toString('base64url'),
    cipher: 'aes-256-gcm',
    check: '',
  };
  const key = await scrypt(encryptionKey, Buffer.from(params.salt, 'base64url'), 32, {
    N: params.N,
    r: params.r,
    p: params.p,
    maxmem: 256 * params.N * params.r + 1024 * 1024,
  });
  if (header) {
    let ok = false;
    try {
      ok = timingSafeEqual(Buffer.from(open(key, header.check, 'check')), Buffer.from(CHECK_TEXT));
    } catch {
      ok = false;
    }
    if (!ok)
      throw new AppError(
        ERRORS.wrongEncryptionKey,
        'encryptionKey does not decrypt the secrets of this template',
      );
    return { header, key };
  }
  const full: EncryptionHeader = { ...(params as EncryptionHeader), check: seal(key, CHECK_TEXT, 'check') };
  return { header: full, key };
}

/** AES-256-GCM of `text`, bound to `aad` (the section): `<iv>.<ciphertext>.<tag>`, base64url. */
export function seal(key: Buffer, text: string, aad: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([c.update(text, 'utf8'), c.final()]);
  return `${iv.toString('base64url')}.${ct.toString('base64url')}.${c.getAuthTag().toString('base64url')}`;
}

export function open(key: Buffer, sealed: string, aad: string): string {
  const [iv, ct, tag] = sealed.split('.');
  if (!iv || ct === undefined || !tag) throw new Error('damaged secret');
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
}

/** How `walkSecrets` treats each secret it meets. */
type SecretAction = (secret: Record<string, string>, path: string) => Record<string, string> | undefined;

/**
 * A copy of `content` where every secret (`{ "$secret" }` or `{ "$encrypted" }`) is replaced by
 * what `action` answers (removed when it answers undefined). Unchanged parts are shared.
 */
export function walkSecrets(content: unknown, action: SecretAction): unknown {
  return walk(content, action, undefined);
}

/** A path built only when a secret is met (most of a document has none). */
interface PathLink {
  parent: PathLink | undefined;
  key: string | number;
}

function pathText(link: PathLink | undefined): string {
  const keys: Array<string | number> = [];
  for (let l = link; l; l = l.parent) keys.push(l.key);
  let out = '';
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i]!;
    out = typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${key}` : key;
  }
  return out;
}

function walk(content: unknown, action: SecretAction, path: PathLink | undefined): unknown {
  if (Array.isArray(content)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < content.length; i++) {
      const item = content[i];
      if (item === null || typeof item !== 'object') continue;
      const v = walk(item, action, { parent: path, key: i });
      if (v !== item) (out ??= [...content])[i] = v;
    }
    return out ?? content;
  }
  if (content && typeof content === 'object') {
    const obj = content as Record<string, unknown>;
    let out: Record<string, unknown> | undefined;
    for (const k in obj) {
      if (!Object.hasOwn(obj, k)) continue;
      const v = obj[k];
      if (v === null || typeof v !== 'object') continue;
      if (isSecretLike(v)) {
        const n = action(v as Record<string, string>, pathText({ parent: path, key: k }));
        out ??= { ...obj };
        if (n === undefined) delete out[k];
        else out[k] = n;
        continue;
      }
      const n = walk(v, action, { parent: path, key: k });
      if (n !== v) (out ??= { ...obj })[k] = n;
    }
    return out ?? content;
  }
  return content;
}

export function isSecretLike(v: unknown): boolean {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && (keys[0] === '$secret' || keys[0] === '$encrypted');
}

/** Whether any section of `doc` holds an encrypted secret. */
export function hasEncrypted(doc: TemplateDocument): boolean {
  let found = false;
  for (const content of Object.values(doc.sections)) {
    walkSecrets(content, (s) => {
      if (typeof s.$encrypted === 'string') found = true;
      return s;
    });
    if (found) return true;
  }
  return false;
}

/** `doc` with every plain secret encrypted under `encryptionKey` (or removed, without a key). */
export async function protectSecrets(
  doc: TemplateDocument,
  encryptionKey: string | undefined,
): Promise<TemplateDocument> {
  const derived = encryptionKey ? await deriveKey(encryptionKey, doc.encryption) : undefined;
  const sections: Record<string, unknown> = {};
  let sealed = false;
  for (const [name, content] of Object.entries(doc.sections)) {
    sections[name] = walkSecrets(content, (s) => {
      if (typeof s.$encrypted === 'string') return doc.encryption ? s : undefined;
      if (!derived) return undefined;
      sealed = true;
      return { $encrypted: seal(derived.key, s.$secret!, `millwright-config:${name}`) };
    });
  }
  const out: TemplateDocument = { ...doc, sections };
  if (derived && (sealed || doc.encryption)) out.encryption = derived.header;
  else if (!hasEncrypted(out)) delete out.encryption;
  return out;
}

/**
 * `doc` with every encrypted secret decrypted (as `{ "$secret" }`). A document with encrypted
 * secrets needs the key: without it the answer is a 400 that says so.
 */
export async function revealSecrets(
  doc: TemplateDocument,
  encryptionKey: string | undefined,
): Promise<TemplateDocument> {
  if (!hasEncrypted(doc)) return doc;
  if (!doc.encryption)
    throw new AppError(
      ERRORS.invalidTemplate,
      'invalid template: it has encrypted secrets but no encryption header',
    );
  if (!encryptionKey)
    throw new AppError(
      ERRORS.encryptionKeyRequired,
      'this template has encrypted secrets: encryptionKey is required to apply it',
    );
  const { key } = await deriveKey(encryptionKey, doc.encryption);
  const sections: Record<string, unknown> = {};
  for (const [name, content] of Object.entries(doc.sections)) {
    sections[name] = walkSecrets(content, (s, path) => {
      if (typeof s.$secret === 'string') return s;
      try {
        return { $secret: open(key, s.$encrypted!, `millwright-config:${name}`) };
      } catch {
        throw new AppError(
          ERRORS.invalidTemplate,
          `invalid template: section ${name}: ${path}: the secret cannot be decrypted`,
        );
      }
    });
  }
  const out: TemplateDocument = { ...doc, sections };
  delete out.encryption;
  return out;
}
