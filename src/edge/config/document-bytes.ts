/**
 * A stored template's secrets protected without parsing its large sections. A stored document is
 * the text `JSON.stringify` wrote (no white space); a download with secrets answered
 * `JSON.stringify(protectSecrets(JSON.parse(text)))`, a parse, a walk and a stringify of every
 * section, though the secrets are in small sections (API clients, keys) and the DeviceHub's
 * 100,000 tags hold none. Here a section whose text holds no secret is left as its bytes: only
 * the rest of the document goes through `protectSecrets`, with a marker in each such section's
 * place, and the bytes are put back where the markers are written. The answer is the same text.
 */
import { randomUUID } from 'node:crypto';
import { protectSecrets, type TemplateDocument } from './document.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** A section below this size is parsed with the rest (a marker would not save anything). */
const MIN_KEPT_BYTES = 4096;

class NotCompact extends Error {}

/** The index after the string that starts at `at` (a `"`). */
function skipString(b: Buffer, at: number): number {
  const n = b.length;
  for (let i = at + 1; i < n; i++) {
    const x = b[i];
    if (x === BACKSLASH) i++;
    else if (x === QUOTE) return i + 1;
  }
  throw new NotCompact();
}

/**
 * The index after the JSON value that starts at `at` (compact text: no white space). One loop
 * over the bytes, strings skipped in it (a call per string costs more than the loop itself).
 */
function skipValue(b: Buffer, at: number): number {
  const c = b[at];
  if (c === QUOTE) return skipString(b, at);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    const n = b.length;
    let depth = 0;
    let inString = false;
    for (let i = at; i < n; i++) {
      const x = b[i];
      if (inString) {
        if (x === BACKSLASH) i++;
        else if (x === QUOTE) inString = false;
      } else if (x === QUOTE) inString = true;
      else if (x === OPEN_OBJECT || x === OPEN_ARRAY) depth++;
      else if ((x === CLOSE_OBJECT || x === CLOSE_ARRAY) && --depth === 0) return i + 1;
    }
    throw new NotCompact();
  }
  let i = at;
  while (i < b.length && b[i] !== COMMA && b[i] !== CLOSE_OBJECT && b[i] !== CLOSE_ARRAY) i++;
  if (i === at) throw new NotCompact();
  return i;
}

/**
 * The members of the object at `at`: each key (decoded) with the byte range of its value, and the
 * index after the object. Throws `NotCompact` where the text is not compact JSON.
 */
function members(b: Buffer, at: number): { list: Array<[string, number, number]>; end: number } {
  if (b[at] !== OPEN_OBJECT) throw new NotCompact();
  const list: Array<[string, number, number]> = [];
  let i = at + 1;
  if (b[i] === CLOSE_OBJECT) return { list, end: i + 1 };
  for (;;) {
    if (b[i] !== QUOTE) throw new NotCompact();
    const keyEnd = skipString(b, i);
    const key = JSON.parse(b.toString('utf8', i, keyEnd)) as string;
    if (b[keyEnd] !== COLON) throw new NotCompact();
    const valueEnd = skipValue(b, keyEnd + 1);
    list.push([key, keyEnd + 1, valueEnd]);
    if (b[valueEnd] === CLOSE_OBJECT) return { list, end: valueEnd + 1 };
    if (b[valueEnd] !== COMMA) throw new NotCompact();
    i = valueEnd + 1;
  }
}

/**
 * The byte ranges of the values of a document's sections (`[start, end)`), in the order of the
 * text; undefined when the bytes are not a compact JSON object with a `sections` object.
 */
export function sectionRanges(bytes: Buffer): Array<[number, number]> | undefined {
  try {
    const top = members(bytes, 0);
    if (top.end !== bytes.length) return undefined;
    const sections = top.list.filter(([key]) => key === 'sections');
    if (sections.length !== 1) return undefined;
    return members(bytes, sections[0]![1]).list.map(([, start, end]) => [start, end]);
  } catch (err) {
    if (err instanceof NotCompact) return undefined;
    throw err;
  }
}

const mayHoldSecret = (b: Buffer): boolean => b.includes('"$secret"') || b.includes('"$encrypted"');

/**
 * `JSON.stringify(await protectSecrets(JSON.parse(text), encryptionKey))` of a stored document's
 * bytes, as bytes: the sections without a secret (and large enough to matter) are not parsed.
 * The answer may be written over `bytes` (the caller's buffer is not to be read afterwards).
 * `ranges` given are trusted: each `[start, end)` the whole value of one section.
 */
export async function protectSecretsBytes(
  bytes: Buffer,
  encryptionKey: string | undefined,
  /** The sections' ranges when the caller knows them (`exportBytes`): no scan of the bytes. */
  ranges?: Array<[number, number]>,
): Promise<Buffer> {
  const whole = async () =>
    Buffer.from(
      JSON.stringify(
        await protectSecrets(JSON.parse(bytes.toString('utf8')) as TemplateDocument, encryptionKey),
      ),
      'utf8',
    );
  const kept = (ranges ?? sectionRanges(bytes) ?? []).filter(
    ([start, end]) => end - start >= MIN_KEPT_BYTES && !mayHoldSecret(bytes.subarray(start, end)),
  );
  if (kept.length === 0) return whole();
  const nonce = randomUUID();
  // A section's value in the parsed part: a string no document holds (a random UUID in it),
  // written back by JSON.stringify as it is (no character of it is escaped).
  const marker = (i: number) => `"millwright-kept-section:${nonce}:${i}"`;
  const reduced: Buffer[] = [];
  let at = 0;
  kept.forEach(([start, end], i) => {
    reduced.push(bytes.subarray(at, start), Buffer.from(marker(i), 'utf8'));
    at = end;
  });
  reduced.push(bytes.subarray(at));
  const doc = JSON.parse(Buffer.concat(reduced).toString('utf8')) as TemplateDocument;
  const text = JSON.stringify(await protectSecrets(doc, encryptionKey));
  // The answer in pieces: the protected text between the markers, each kept section's bytes.
  const pieces: Array<Buffer | [number, number]> = [];
  let from = 0;
  for (const [i, range] of kept.entries()) {
    const written = marker(i);
    const k = text.indexOf(written, from);
    if (k < 0) return whole();
    pieces.push(Buffer.from(text.slice(from, k), 'utf8'), range);
    from = k + written.length;
  }
  pieces.push(Buffer.from(text.slice(from), 'utf8'));
  return (
    inPlace(bytes, pieces) ??
    Buffer.concat(pieces.map((p) => (Buffer.isBuffer(p) ? p : bytes.subarray(...p))))
  );
}

/**
 * The pieces written into `bytes` itself, from its start, when no piece lands after where its
 * kept section starts (secrets left out make the text shorter): no second buffer of the
 * document's size. Undefined (nothing written) when a piece would overwrite a section not yet
 * moved.
 */
function inPlace(bytes: Buffer, pieces: Array<Buffer | [number, number]>): Buffer | undefined {
  let at = 0;
  for (const p of pieces) {
    if (Buffer.isBuffer(p)) at += p.length;
    else if (at > p[0]) return undefined;
    else at += p[1] - p[0];
  }
  if (at > bytes.length) return undefined;
  at = 0;
  for (const p of pieces) {
    if (Buffer.isBuffer(p)) at += p.copy(bytes, at);
    else at += bytes.copy(bytes, at, p[0], p[1]);
  }
  return bytes.subarray(0, at);
}
