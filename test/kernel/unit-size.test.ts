/**
 * Unit size: no file under src/ over 600 lines and no function over 100 (issue 24, item 6).
 * A function is a declaration, a method, a constructor, an accessor, a function expression or an
 * arrow function; its length runs from its first line to its last, nested functions included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

const MAX_FILE_LINES = 600;
const MAX_FUNCTION_LINES = 100;

// Units that other work of issue 24 is changing at the same time as the split: they are left whole
// here so the merges stay easy, and split once that work has landed. A file's path allows the file
// (and its functions), `path name` one function. Empty this list after the merge; do not add to it.
const ALLOWED = new Set<string>([]);

// Files split as far as a natural seam went, still over the bound: the rest is one class over
// private state that a further split would have to open up (protected members or a host
// interface). Listed apart so that they are not forgotten; they do not belong to the list above.
const NOT_YET_SPLIT = new Set<string>([]);

const root = join(import.meta.dirname, '..', '..');

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

function functionName(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (
    parent &&
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
  ) {
    return parent.name.getText(sf);
  }
  return '(anonymous)';
}

function oversized(): { files: string[]; functions: string[] } {
  const files: string[] = [];
  const functions: string[] = [];
  for (const path of walk(join(root, 'src'))) {
    const rel = relative(root, path).split(sep).join('/');
    if (ALLOWED.has(rel) || NOT_YET_SPLIT.has(rel)) continue;
    const text = readFileSync(path, 'utf8');
    const sf = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true);
    const lines = sf.getLineStarts().length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES) files.push(`${rel}: ${lines} lines`);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
        const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
        const length = last - first + 1;
        if (length > MAX_FUNCTION_LINES && !ALLOWED.has(`${rel} ${functionName(node, sf)}`)) {
          functions.push(`${rel}:${first + 1} ${functionName(node, sf)}: ${length} lines`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return { files, functions };
}

test(`no file under src/ passes ${MAX_FILE_LINES} lines, no function ${MAX_FUNCTION_LINES}`, () => {
  const found = oversized();
  assert.deepEqual(found, { files: [], functions: [] });
});
