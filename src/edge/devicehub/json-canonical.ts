/**
 * Whether a stored JSON text is already what `JSON.stringify(JSON.parse(text))` writes, so that an
 * export can copy it instead of parsing and writing it again (the DeviceHub's Properties and
 * MetaData columns: two of the export's largest costs per tag). The scan is conservative: it says
 * yes only for a text that round-trips byte for byte, and no for anything it does not prove:
 * - no whitespace outside strings;
 * - strings without a backslash, a control character or a lone surrogate (`JSON.stringify` writes
 *   those as escapes, which may differ from the stored ones);
 * - numbers only as integers of at most 15 digits without a leading zero or `-0` (they print as
 *   read); no fraction, no exponent;
 * - objects without a repeated key and without a key made of digits only (`JSON.parse` lets the last
 *   of repeated keys win, and an array-index key moves to the front of the object);
 * - at most 64 levels deep, at most 32 keys an object.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_DEPTH = 64;
const MAX_KEYS = 32;

/** The scan's state: the text and the position of the next character. */
interface Scan {
  text: string;
  at: number;
}

/** Scans a string at `s.at` (its opening quote); answers its content, or undefined when refused. */
function scanString(s: Scan): string | undefined {
  const { text } = s;
  const start = s.at + 1;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      s.at = i + 1;
      return text.slice(start, i);
    }
    if (c === BACKSLASH || c < 0x20) return undefined;
    if (c >= 0xd800 && c <= 0xdfff) {
      // A high surrogate followed by a low one is a pair (written as it is); anything else is lone.
      const next = text.charCodeAt(i + 1);
      if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return undefined;
      i++;
    }
  }
  return undefined;
}

/** Scans an integer at `s.at`: true when it prints as it is written. */
function scanNumber(s: Scan): boolean {
  const { text } = s;
  let i = s.at;
  if (text.charCodeAt(i) === 0x2d) i++; // '-'
  const first = i;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) break;
    i++;
  }
  const digits = i - first;
  if (digits === 0 || digits > 15) return false;
  if (digits > 1 && text.charCodeAt(first) === 0x30) return false; // leading zero
  if (digits === 1 && first > s.at && text.charCodeAt(first) === 0x30) return false; // -0
  const next = text.charCodeAt(i);
  if (next === 0x2e || next === 0x65 || next === 0x45) return false; // fraction, exponent
  s.at = i;
  return true;
}

/** Whether `key` is made of digits only (possibly an array index, which `JSON.parse` reorders). */
function digitsOnly(key: string): boolean {
  if (key.length === 0) return false;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

function scanObject(s: Scan, depth: number): boolean {
  const { text } = s;
  s.at++; // '{'
  if (text.charCodeAt(s.at) === 0x7d) {
    s.at++;
    return true;
  }
  const keys: string[] = [];
  for (;;) {
    if (text.charCodeAt(s.at) !== QUOTE) return false;
    const key = scanString(s);
    if (key === undefined || digitsOnly(key) || keys.includes(key) || keys.length >= MAX_KEYS) return false;
    keys.push(key);
    if (text.charCodeAt(s.at) !== 0x3a) return false; // ':'
    s.at++;
    if (!scanValue(s, depth + 1)) return false;
    const c = text.charCodeAt(s.at++);
    if (c === 0x7d) return true; // '}'
    if (c !== 0x2c) return false; // ','
  }
}

function scanArray(s: Scan, depth: number): boolean {
  const { text } = s;
  s.at++; // '['
  if (text.charCodeAt(s.at) === 0x5d) {
    s.at++;
    return true;
  }
  for (;;) {
    if (!scanValue(s, depth + 1)) return false;
    const c = text.charCodeAt(s.at++);
    if (c === 0x5d) return true; // ']'
    if (c !== 0x2c) return false; // ','
  }
}

function scanWord(s: Scan, word: string): boolean {
  if (!s.text.startsWith(word, s.at)) return false;
  s.at += word.length;
  return true;
}

function scanValue(s: Scan, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  const c = s.text.charCodeAt(s.at);
  if (c === 0x7b) return scanObject(s, depth);
  if (c === 0x5b) return scanArray(s, depth);
  if (c === QUOTE) return scanString(s) !== undefined;
  if (c === 0x74) return scanWord(s, 'true');
  if (c === 0x66) return scanWord(s, 'false');
  if (c === 0x6e) return scanWord(s, 'null');
  return scanNumber(s);
}

/**
 * Whether `text` is a JSON object that `JSON.stringify(JSON.parse(text))` writes back byte for byte
 * (see the file's comment for what the scan proves; false does not mean that it would not).
 */
export function isStringifiedObject(text: string): boolean {
  if (text.charCodeAt(0) !== 0x7b) return false;
  const s: Scan = { text, at: 0 };
  return scanObject(s, 0) && s.at === text.length;
}
