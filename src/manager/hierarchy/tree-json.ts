/**
 * Subtrees of the hierarchy written as JSON (UTF-8 bytes, sent as they are), straight from their
 * rows: a whole site is 11,111 nodes and about 3.3 MB of JSON, and building a `NodeView` object per node (its attributes
 * parsed, two dates formatted) to hand it to `JSON.stringify` cost as much as the query. The text
 * is exactly `JSON.stringify` of the nested `NodeView`s (same fields, same order, same escapes):
 * test/manager/hierarchy-tree-json.test.ts holds the two side by side.
 *
 * `attributes` is spliced in as stored: every writer of the column stores
 * `JSON.stringify(validateAttributes(...))` of a parsed object, which parses and stringifies back
 * to itself.
 */
import type { ViewRow } from './repository.js';

/** Places in a `ViewRow`. */
const ID = 0;
const KEY = 1;
const NAME = 2;
const PARENT = 5;

/** A node of a subtree being written: its row and its children (none: written without them). */
interface Twig {
  row: ViewRow;
  children: Twig[] | undefined;
}

/** Siblings by name, then key (plain code-unit order: Intl collation costs more than the read). */
const byNameKey = (x: Twig, y: Twig) => {
  const a = x.row[NAME];
  const b = y.row[NAME];
  if (a !== b) return a < b ? -1 : 1;
  const k = x.row[KEY];
  const l = y.row[KEY];
  return k < l ? -1 : k > l ? 1 : 0;
};

/**
 * Nests rows (in any order) into trees: a row whose parent is not among them is a top. With
 * `withChildren` false, the nodes are written without a `children` field (a read of depth 0).
 * Siblings and tops are sorted by name, then key.
 */
export function nestRows(rows: ViewRow[], withChildren = true): Twig[] {
  const byId = new Map<string, Twig>();
  for (const row of rows) byId.set(row[ID], { row, children: withChildren ? [] : undefined });
  const tops: Twig[] = [];
  for (const t of byId.values()) {
    const parentId = t.row[PARENT];
    const parent = parentId === null ? undefined : byId.get(parentId);
    if (parent) parent.children!.push(t);
    else tops.push(t);
  }
  if (withChildren) for (const t of byId.values()) if (t.children!.length > 1) t.children!.sort(byNameKey);
  return tops.sort(byNameKey);
}

/** The JSON of one tree (a `NodeView` with its `children`), as UTF-8 bytes. */
export function treeJson(top: Twig): Buffer {
  const w = new JsonBytes(sizeOf(top));
  writeTwig(top, w, isoDates());
  return w.bytes();
}

/**
 * The JSON of a list of trees (`[NodeView, ...]`), as UTF-8 bytes, between `before` and `after`
 * (ASCII: the route's envelope, `{"items":` and `}`).
 */
export function treesJson(tops: Twig[], before = '', after = ''): Buffer {
  let size = before.length + after.length + 2;
  for (const t of tops) size += sizeOf(t);
  const w = new JsonBytes(size);
  w.raw(`${before}[`);
  const iso = isoDates();
  for (let i = 0; i < tops.length; i++) {
    if (i > 0) w.raw(',');
    writeTwig(tops[i]!, w, iso);
  }
  w.raw(`]${after}`);
  return w.bytes();
}

/**
 * The answer's bytes, written in place: each field is copied character by character into one
 * buffer, so a read makes no string of its own (a site's 11,111 nodes used to be 22,000 strings
 * joined into one 3.3 MB string, then encoded again by the socket; while they lived, the young
 * generation's scavenges copied them with the rows, and that was most of the writing's CPU time).
 * A field with a character to escape or beyond ASCII is written as `JSON.stringify` writes it.
 */
class JsonBytes {
  #buf: Buffer;
  #at = 0;

  constructor(size: number) {
    this.#buf = Buffer.allocUnsafe(Math.max(size, 64));
  }

  /** `text` as it is (JSON already: punctuation, a stored attributes object, a date). */
  raw(text: string): void {
    const n = text.length;
    if (this.#buf.length - this.#at < n) this.#grow(n);
    const buf = this.#buf;
    let at = this.#at;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) {
        this.#at = at;
        this.#utf8(i === 0 ? text : text.slice(i));
        return;
      }
      buf[at++] = c;
    }
    this.#at = at;
  }

  /** `text` as a JSON string, quoted (`JSON.stringify(text)`). */
  string(text: string): void {
    const n = text.length;
    if (this.#buf.length - this.#at < n + 2) this.#grow(n + 2);
    const buf = this.#buf;
    const start = this.#at;
    let at = start;
    buf[at++] = 0x22;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      // Control characters, `"` and `\` are escaped; beyond ASCII, lone surrogates are.
      if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x80) {
        this.#at = start;
        this.#utf8(JSON.stringify(text));
        return;
      }
      buf[at++] = c;
    }
    buf[at++] = 0x22;
    this.#at = at;
  }

  /** `text` encoded as UTF-8 (it holds no lone surrogate: each is escaped by then). */
  #utf8(text: string): void {
    if (this.#buf.length - this.#at < text.length * 3) this.#grow(text.length * 3);
    this.#at += this.#buf.write(text, this.#at);
  }

  #grow(need: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + need));
    this.#buf.copy(next, 0, 0, this.#at);
    this.#buf = next;
  }

  bytes(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

/** The field names, punctuation, two dates and a depth of a node's text, and some room. */
const NODE_TEXT = 256;

/**
 * About the size of a tree's text: its fields' lengths and `NODE_TEXT` per node (exact for ASCII
 * text without escapes; more grows the buffer, rarely).
 */
function sizeOf(t: Twig): number {
  const r = t.row;
  let size = NODE_TEXT + r[ID].length + r[KEY].length + r[NAME].length + (r[3]?.length ?? 0) + r[4].length;
  size += (r[PARENT]?.length ?? 0) + (r[7]?.length ?? 0) + r[8].length;
  if (t.children !== undefined) for (const c of t.children) size += sizeOf(c);
  return size;
}

function writeTwig(t: Twig, w: JsonBytes, iso: (ms: number) => string): void {
  const [id, key, name, level, description, parentId, depth, deviceId, attributes, createdAt, updatedAt] =
    t.row;
  w.raw('{"id":');
  w.string(id);
  w.raw(',"key":');
  w.string(key);
  w.raw(',"name":');
  w.string(name);
  w.raw(',"level":');
  if (level === null) w.raw('null');
  else w.string(level);
  w.raw(',"description":');
  w.string(description);
  w.raw(',"parentId":');
  if (parentId === null) w.raw('null');
  else w.string(parentId);
  w.raw(',"depth":');
  w.raw(String(depth));
  w.raw(',"deviceId":');
  if (deviceId === null) w.raw('null');
  else w.string(deviceId);
  w.raw(',"attributes":');
  w.raw(attributes);
  w.raw(',"createdAt":"');
  w.raw(iso(createdAt));
  w.raw('","updatedAt":"');
  w.raw(iso(updatedAt));
  const children = t.children;
  if (children === undefined) {
    w.raw('"}');
    return;
  }
  w.raw('","children":[');
  for (let i = 0; i < children.length; i++) {
    if (i > 0) w.raw(',');
    writeTwig(children[i]!, w, iso);
  }
  w.raw(']}');
}

/** `new Date(ms).toISOString()`, remembering the last time: an imported tree shares one. */
function isoDates(): (ms: number) => string {
  let lastMs = Number.NaN;
  let last = '';
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms;
      last = new Date(ms).toISOString();
    }
    return last;
  };
}
