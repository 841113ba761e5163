/**
 * Subtrees of the hierarchy written as JSON text, straight from their rows: a whole site is
 * 11,111 nodes and about 2 MB of JSON, and building a `NodeView` object per node (its attributes
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

/** The JSON of one tree (a `NodeView` with its `children`). */
export function treeJson(top: Twig): string {
  const out: string[] = [];
  writeTwig(top, out, isoDates());
  return out.join('');
}

/** The JSON of a list of trees (`[NodeView, ...]`). */
export function treesJson(tops: Twig[]): string {
  const out: string[] = ['['];
  const iso = isoDates();
  for (let i = 0; i < tops.length; i++) {
    if (i > 0) out.push(',');
    writeTwig(tops[i]!, out, iso);
  }
  out.push(']');
  return out.join('');
}

const str = JSON.stringify;

function writeTwig(t: Twig, out: string[], iso: (ms: number) => string): void {
  const [id, key, name, level, description, parentId, depth, deviceId, attributes, createdAt, updatedAt] =
    t.row;
  out.push(
    `{"id":${str(id)},"key":${str(key)},"name":${str(name)},"level":${level === null ? 'null' : str(level)},"description":${str(description)},"parentId":${parentId === null ? 'null' : str(parentId)},"depth":${depth},"deviceId":${deviceId === null ? 'null' : str(deviceId)},"attributes":${attributes},"createdAt":"${iso(createdAt)}","updatedAt":"${iso(updatedAt)}"`,
  );
  const children = t.children;
  if (children === undefined) {
    out.push('}');
    return;
  }
  out.push(',"children":[');
  for (let i = 0; i < children.length; i++) {
    if (i > 0) out.push(',');
    writeTwig(children[i]!, out, iso);
  }
  out.push(']}');
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
