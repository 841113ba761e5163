/**
 * Subtrees of the hierarchy written as JSON (UTF-8 bytes, sent as they are), straight from their
 * rows: a whole site is 11,111 nodes and about 3.3 MB of JSON, and building a `NodeView` object per node (its attributes
 * parsed, two dates formatted) to hand it to `JSON.stringify` cost as much as the query. The text
 * is exactly `JSON.stringify` of the nested `NodeView`s (same fields, same order, same escapes):
 * test/manager/hierarchy-tree-json.test.ts holds the two side by side.
 *
 * Each node's row stores the JSON text of its fields that do not depend on its place
 * (`nodeJson`: `json_head` from `id` to `description`, `json_tail` from `deviceId` to
 * `createdAt`), written by the repository whenever the row is written; a read splices them with
 * the three fields a move rewrites (`parentId`, `depth`, `updatedAt`) instead of escaping every
 * field of every node again. `attributes` is stored as `JSON.stringify(validateAttributes(...))`
 * of a parsed object, which parses and stringifies back to itself.
 */
import type { ViewRow } from './repository.js';

/** Places in a `ViewRow`. */
const ID = 0;
const KEY = 1;
const NAME = 2;
const PARENT = 3;

/** What `nodeJson` needs of a node: the fields that do not change when it moves. */
export interface NodeJsonFields {
  id: string;
  key: string;
  name: string;
  level: string | null;
  description: string;
  device_id: string | null;
  attributes: string;
  created_at: number;
}

/**
 * The stored JSON text of a node (`json_head`, `json_tail`): its `NodeView`'s fields before
 * `parentId` (from `{`), and those between `depth` and `updatedAt` (from the comma before
 * `deviceId` to the closing quote of `createdAt`), exactly as `JSON.stringify` writes them.
 */
export function nodeJson(r: NodeJsonFields): [head: string, tail: string] {
  const head =
    `{"id":${JSON.stringify(r.id)},"key":${JSON.stringify(r.key)},"name":${JSON.stringify(r.name)}` +
    `,"level":${JSON.stringify(r.level)},"description":${JSON.stringify(r.description)}`;
  const tail =
    `,"deviceId":${JSON.stringify(r.device_id)},"attributes":${r.attributes}` +
    `,"createdAt":"${new Date(Number(r.created_at)).toISOString()}"`;
  return [head, tail];
}

/** `,"children":[` and `]}`, or `}`: what a node's text has after its fields. */
const CHILDREN_OPEN = ',"children":[';

/**
 * The nodes of subtrees, each written as it is added: its row is not kept. A node's fields are
 * written at once into one buffer (its text up to `updatedAt`, "its head"); what is kept of it
 * is where its head is, its parent, and its name and key (siblings are sorted by them). A site's
 * 11,111 rows from the database (some 5 MB of arrays and strings) used to stay alive while the
 * whole answer was written, and the young generation's scavenges copied them again and again;
 * rows handed over one at a time die young. Rows come in any order: a row whose parent is not
 * among them is a top. With `withChildren` false, nodes are written without a `children` field
 * (a read of depth 0).
 */
export class SubtreeRows {
  readonly #withChildren: boolean;
  readonly #heads = new JsonBytes(1 << 14);
  readonly #iso = isoDates();
  /** Per node, by the order added: its head's end in `#heads` (it starts where the last ends). */
  readonly #ends: number[] = [];
  readonly #names: string[] = [];
  readonly #keys: string[] = [];
  /** Per node, its parent's number, -1 for none among the rows, -2 while not yet added. */
  readonly #parents: number[] = [];
  readonly #byId = new Map<string, number>();
  /** Nodes added before their parent: [node, parent id]. */
  #waiting: [number, string][] = [];
  /** The children of each node, sorted (nodes of `#kids` from `#kidsAt[i]` to `#kidsAt[i + 1]`). */
  #kids: Int32Array | undefined;
  #kidsAt: Int32Array | undefined;

  constructor(withChildren = true) {
    this.#withChildren = withChildren;
  }

  get size(): number {
    return this.#ends.length;
  }

  /** Writes `row`'s fields (not kept: the caller may drop or reuse it). */
  add(row: ViewRow): void {
    const i = this.#ends.length;
    const id = row[ID];
    const parentId = row[PARENT];
    this.#byId.set(id, i);
    this.#names.push(row[NAME]);
    this.#keys.push(row[KEY]);
    let parent = -1;
    if (parentId !== null) {
      const p = this.#byId.get(parentId);
      if (p !== undefined) parent = p;
      else {
        parent = -2;
        this.#waiting.push([i, parentId]);
      }
    }
    this.#parents.push(parent);
    writeHead(row, this.#heads, this.#iso);
    this.#ends.push(this.#heads.length);
    this.#kids = undefined;
  }

  /** The node numbered by its id, if added. */
  indexOf(id: string): number | undefined {
    return this.#byId.get(id);
  }

  /** The tops (nodes whose parent is not among the rows), sorted by name, then key. */
  tops(): number[] {
    this.#nest();
    const tops: number[] = [];
    for (let i = 0; i < this.#parents.length; i++) if (this.#parents[i] === -1) tops.push(i);
    return tops.sort(this.#byNameKey);
  }

  /** The bytes `node`'s tree takes at most (its text and those of all the nodes). */
  get maxBytes(): number {
    return this.#heads.length + this.#ends.length * (CHILDREN_OPEN.length + 3);
  }

  /** Writes node `i`'s tree into `out` at `at`; answers where it ends. */
  write(i: number, out: Buffer, at: number): number {
    this.#nest();
    const start = i === 0 ? 0 : this.#ends[i - 1]!;
    at += this.#heads.copyOut(out, at, start, this.#ends[i]!);
    if (!this.#withChildren) {
      out[at++] = 0x7d;
      return at;
    }
    for (let c = 0; c < CHILDREN_OPEN.length; c++) out[at++] = CHILDREN_OPEN.charCodeAt(c);
    const kids = this.#kids!;
    const end = this.#kidsAt![i + 1]!;
    for (let k = this.#kidsAt![i]!; k < end; k++) {
      if (k > this.#kidsAt![i]!) out[at++] = 0x2c;
      at = this.write(kids[k]!, out, at);
    }
    out[at++] = 0x5d;
    out[at++] = 0x7d;
    return at;
  }

  #byNameKey = (x: number, y: number): number => {
    const a = this.#names[x]!;
    const b = this.#names[y]!;
    if (a !== b) return a < b ? -1 : 1;
    const k = this.#keys[x]!;
    const l = this.#keys[y]!;
    return k < l ? -1 : k > l ? 1 : 0;
  };

  /** Links each node to its children (by the order added, then sorted by name, then key). */
  #nest(): void {
    if (this.#kids !== undefined) return;
    const parents = this.#parents;
    for (const [i, parentId] of this.#waiting) parents[i] = this.#byId.get(parentId) ?? -1;
    this.#waiting = [];
    const n = parents.length;
    const at = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) if (parents[i]! >= 0) at[parents[i]! + 1]!++;
    for (let i = 0; i < n; i++) at[i + 1]! += at[i]!;
    const kids = new Int32Array(at[n]!);
    const next = at.slice(0, n);
    for (let i = 0; i < n; i++) if (parents[i]! >= 0) kids[next[parents[i]!]!++] = i;
    for (let i = 0; i < n; i++)
      if (at[i + 1]! - at[i]! > 1) kids.subarray(at[i]!, at[i + 1]!).sort(this.#byNameKey);
    this.#kids = kids;
    this.#kidsAt = at;
  }
}

/** `rows` (in any order) as subtrees (see `SubtreeRows`). */
export function nestRows(rows: Iterable<ViewRow>, withChildren = true): SubtreeRows {
  const s = new SubtreeRows(withChildren);
  for (const row of rows) s.add(row);
  return s;
}

/** The JSON of the tree under node `id` (a `NodeView` with its `children`), as UTF-8 bytes. */
export function treeJson(s: SubtreeRows, id: string): Buffer {
  const i = s.indexOf(id);
  if (i === undefined) throw new Error(`node ${id} is not among the rows`);
  const out = Buffer.allocUnsafe(s.maxBytes);
  return out.subarray(0, s.write(i, out, 0));
}

/**
 * The JSON of the trees of `parts` (each part's tops, sorted; the parts in their order) as a list
 * (`[NodeView, ...]`), as UTF-8 bytes, between `before` and `after` (ASCII: the route's envelope,
 * `{"items":` and `}`).
 */
export function treesJson(parts: SubtreeRows[], before = '', after = ''): Buffer {
  let size = before.length + after.length + 2;
  for (const s of parts) size += s.maxBytes;
  const out = Buffer.allocUnsafe(size);
  let at = out.write(`${before}[`, 0, 'latin1');
  let first = true;
  for (const s of parts)
    for (const i of s.tops()) {
      if (!first) out[at++] = 0x2c;
      first = false;
      at = s.write(i, out, at);
    }
  at += out.write(`]${after}`, at, 'latin1');
  return out.subarray(0, at);
}

/**
 * The answer's bytes, written in place: each field is copied character by character into one
 * buffer, so a read makes no string of its own (a site's 11,111 nodes used to be 22,000 strings
 * joined into one 3.3 MB string, then encoded again by the socket; while they lived, the young
 * generation's scavenges copied them with the rows, and that was most of the writing's CPU time).
 * A field with a character to escape or beyond ASCII is written as `JSON.stringify` writes it.
 */
/**
 * Texts longer than this (a node's stored JSON text) are copied by the native encoder: one call
 * costs more than a short text's loop, less than a long one's.
 */
const LONG = 32;

class JsonBytes {
  #buf: Buffer;
  #at = 0;

  constructor(size: number) {
    this.#buf = Buffer.allocUnsafe(Math.max(size, 64));
  }

  /** `text` as it is (JSON already: punctuation, a stored attributes object, a date). */
  raw(text: string): void {
    const n = text.length;
    if (n > LONG) {
      this.#utf8(text);
      return;
    }
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

  /** The bytes written so far. */
  get length(): number {
    return this.#at;
  }

  /** Copies the bytes from `start` to `end` into `out` at `at`; answers how many. */
  copyOut(out: Buffer, at: number, start: number, end: number): number {
    return this.#buf.copy(out, at, start, end);
  }
}

/** A node's text up to its last field, `updatedAt` (closing quote included): its stored text with its place. */
function writeHead(row: ViewRow, w: JsonBytes, iso: (ms: number) => string): void {
  const [, , , parentId, depth, updatedAt, head, tail] = row;
  w.raw(head);
  w.raw(',"parentId":');
  if (parentId === null) w.raw('null');
  else w.string(parentId);
  w.raw(',"depth":');
  w.raw(String(depth));
  w.raw(tail);
  w.raw(',"updatedAt":"');
  w.raw(iso(updatedAt));
  w.raw('"');
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
