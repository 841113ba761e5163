/**
 * A stored template's secrets protected without parsing its large sections. A stored document is
 * the text `JSON.stringify` wrote (no white space); a download with secrets answered
 * `JSON.stringify(protectSecrets(JSON.parse(text)))`, a parse, a walk and a stringify of every
 * section, though the secrets are in small sections (API clients, keys) and the DeviceHub's
 * 100,000 tags hold none. Here a section whose text holds no secret is left as its bytes: only
 * the rest of the document goes through `protectSecrets`, with a marker in each such section's
 * place, and the bytes are put back where the markers are written. The answer is the same text, in
 * pieces: the kept sections are views of the bytes given (a download copies nothing of them).
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

/** The bytes of `pieces` in `[start, end)` (offsets into their concatenation), as views of them. */
export function slicePieces(pieces: readonly Buffer[], start: number, end: number): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  for (const p of pieces) {
    const next = at + p.length;
    if (next > start && at < end) out.push(p.subarray(Math.max(0, start - at), Math.min(p.length, end - at)));
    if (next >= end) break;
    at = next;
  }
  return out;
}

/** `pieces` as one buffer (the piece itself when there is one: no copy). */
export const joinPieces = (pieces: readonly Buffer[]): Buffer =>
  pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces);

/** Whether the concatenation of `pieces` holds `pattern`, also across the pieces' boundaries. */
export function piecesInclude(pieces: readonly Buffer[], pattern: string): boolean {
  const p = Buffer.from(pattern, 'utf8');
  const edge = p.length - 1;
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i]!;
    if (piece.includes(p)) return true;
    if (i + 1 === pieces.length) break;
    // A match that starts in this piece's last `edge` bytes and ends in the next pieces.
    const around = [piece.subarray(Math.max(0, piece.length - edge))];
    let more = edge;
    for (let j = i + 1; j < pieces.length && more > 0; j++) {
      around.push(pieces[j]!.subarray(0, more));
      more -= around[around.length - 1]!.length;
    }
    if (Buffer.concat(around).includes(p)) return true;
  }
  return false;
}

const DOLLAR = 0x24;
const SECRET_MARKERS = ['"$secret"', '"$encrypted"'].map((m) => Buffer.from(m, 'utf8'));

/**
 * Whether the concatenation of `pieces` holds `"$secret"` or `"$encrypted"`: one pass for the byte
 * `$` (a `memchr`: over 22 MB about 0.5 ms here, against 14 ms for a search of each pattern),
 * each `$` found checked for the two markers around it, also across the pieces' boundaries.
 */
export function mayHoldSecret(pieces: readonly Buffer[]): boolean {
  let base = 0;
  for (const piece of pieces) {
    for (let k = piece.indexOf(DOLLAR); k >= 0; k = piece.indexOf(DOLLAR, k + 1)) {
      for (const m of SECRET_MARKERS) {
        const near =
          k >= 1 && k - 1 + m.length <= piece.length
            ? piece.subarray(k - 1, k - 1 + m.length)
            : Buffer.concat(slicePieces(pieces, base + k - 1, base + k - 1 + m.length));
        if (near.equals(m)) return true;
      }
    }
    base += piece.length;
  }
  return false;
}

/**
 * `JSON.stringify(await protectSecrets(JSON.parse(text), encryptionKey))` of a stored document's
 * bytes (one buffer, or pieces in order), as pieces: the sections without a secret (and large enough
 * to matter) are not parsed, and are answered as views of the given bytes (no copy).
 * `ranges` given are trusted: each `[start, end)` the whole value of one section.
 */
export async function protectSecretsBytes(
  bytes: Buffer | readonly Buffer[],
  encryptionKey: string | undefined,
  /** The sections' ranges when the caller knows them (`exportBytes`): no scan of the bytes. */
  ranges?: Array<[number, number]>,
): Promise<Buffer[]> {
  const pieces = Buffer.isBuffer(bytes) ? [bytes] : bytes;
  const whole = async () => [
    Buffer.from(
      JSON.stringify(
        await protectSecrets(
          JSON.parse(joinPieces(pieces).toString('utf8')) as TemplateDocument,
          encryptionKey,
        ),
      ),
      'utf8',
    ),
  ];
  const kept = (ranges ?? sectionRanges(joinPieces(pieces)) ?? []).filter(
    ([start, end]) => end - start >= MIN_KEPT_BYTES && !mayHoldSecret(slicePieces(pieces, start, end)),
  );
  if (kept.length === 0) return whole();
  const nonce = randomUUID();
  // A section's value in the parsed part: a string no document holds (a random UUID in it),
  // written back by JSON.stringify as it is (no character of it is escaped).
  const marker = (i: number) => `"millwright-kept-section:${nonce}:${i}"`;
  const size = pieces.reduce((n, p) => n + p.length, 0);
  const reduced: Buffer[] = [];
  let at = 0;
  kept.forEach(([start, end], i) => {
    reduced.push(...slicePieces(pieces, at, start), Buffer.from(marker(i), 'utf8'));
    at = end;
  });
  reduced.push(...slicePieces(pieces, at, size));
  const doc = JSON.parse(Buffer.concat(reduced).toString('utf8')) as TemplateDocument;
  const text = JSON.stringify(await protectSecrets(doc, encryptionKey));
  // The answer: the protected text between the markers, each kept section's bytes as they are.
  const out: Buffer[] = [];
  let from = 0;
  for (const [i, [start, end]] of kept.entries()) {
    const written = marker(i);
    const k = text.indexOf(written, from);
    if (k < 0) return whole();
    out.push(Buffer.from(text.slice(from, k), 'utf8'), ...slicePieces(pieces, start, end));
    from = k + written.length;
  }
  out.push(Buffer.from(text.slice(from), 'utf8'));
  return out;
}
