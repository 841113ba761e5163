/** The error catalogue: one entry per code, each documented, and no code spelt outside it. */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { AppError, ERRORS, errorKindOf, notFound } from '../../src/kernel/errors.js';
import { createHttpApp } from '../../src/kernel/http/server.js';

const root = join(import.meta.dirname, '..', '..');
const kinds = Object.values(ERRORS);

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The code of a file without its comments (a `//` after a quote is kept: URLs). */
function codeLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let inBlock = false;
  text.split('\n').forEach((raw, i) => {
    let t = raw;
    if (inBlock) {
      const end = t.indexOf('*/');
      if (end < 0) return;
      t = t.slice(end + 2);
      inBlock = false;
    }
    t = t.replace(/\/\*.*?\*\//g, '');
    const open = t.indexOf('/*');
    if (open >= 0 && !/['"`]/.test(t.slice(0, open))) {
      t = t.slice(0, open);
      inBlock = true;
    }
    t = t.replace(/(^|\s)\/\/.*$/, '');
    if (t.trim() !== '') out.push({ line: i + 1, text: t });
  });
  return out;
}

test('every code is unique, and every status is an HTTP error status', () => {
  const codes = kinds.map((k) => k.code);
  assert.deepEqual(
    codes.filter((c, i) => codes.indexOf(c) !== i),
    [],
    'a code has two entries',
  );
  for (const [name, k] of Object.entries(ERRORS)) {
    assert.ok(
      Number.isInteger(k.status) && k.status >= 400 && k.status <= 599,
      `${name}: status ${k.status}`,
    );
    assert.match(k.code, /^([a-z]+(_[a-z]+)*|[A-Z]+(_[A-Z]+)*)$/, `${name}: code ${k.code}`);
    assert.ok(k.about.trim().length > 0, `${name} says what it means`);
    assert.equal(errorKindOf(k.code), k);
  }
  assert.equal(ERRORS.payloadTooLarge.code, 'payload_too_large', 'the one code of a body over a limit');
});

test('the codes and statuses the contract and the wire notes fix stay as they are', () => {
  // platform-api.md part 7, docs/api-conventions.md (GraphQL FORBIDDEN), security.md (limits).
  const fixed: [keyof typeof ERRORS, number, string][] = [
    ['sitesRemoved', 410, 'E'],
    ['confirmRequired', 409, 'confirm_required'],
    ['missingParameter', 409, 'missing_parameter'],
    ['unknownField', 400, 'unknown_field'],
    ['unauthorized', 401, 'unauthorized'],
    ['graphqlForbidden', 403, 'FORBIDDEN'],
    ['queryTooLarge', 400, 'QUERY_TOO_LARGE'],
    ['queryTooDeep', 400, 'QUERY_TOO_DEEP'],
    ['queryTooCostly', 400, 'QUERY_TOO_COSTLY'],
    ['internal', 500, 'internal'],
  ];
  for (const [name, status, code] of fixed)
    assert.deepEqual([ERRORS[name].status, ERRORS[name].code], [status, code]);
});

test('docs/api-conventions.md lists every code of the catalogue with its status, and no other', () => {
  const doc = readFileSync(join(root, 'docs', 'api-conventions.md'), 'utf8');
  const rows = new Map<string, { status: number; about: string }>();
  for (const line of doc.split('\n')) {
    const m = /^\|\s*`([A-Za-z_]+)`\s*\|\s*(\d{3})\s*\|\s*(.*?)\s*\|$/.exec(line);
    if (m) rows.set(m[1]!, { status: Number(m[2]), about: m[3]! });
  }
  const expected = kinds.map((k) => `| \`${k.code}\` | ${k.status} | ${k.about} |`).join('\n');
  const hint = `the table of docs/api-conventions.md should be (then run prettier on it):\n${expected}`;
  for (const k of kinds) {
    assert.deepEqual(rows.get(k.code), { status: k.status, about: k.about }, `${k.code}: ${hint}`);
  }
  for (const code of rows.keys()) assert.ok(errorKindOf(code), `${code} is documented but not catalogued`);
});

test('no status or code is spelt outside the catalogue in src/', () => {
  const known = new Set(kinds.map((k) => k.code).filter((c) => c.length > 1));
  const found: string[] = [];
  for (const file of sources(join(root, 'src'))) {
    if (file.endsWith(join('kernel', 'errors.ts'))) continue;
    const rel = file.slice(root.length + 1);
    for (const { line, text } of codeLines(readFileSync(file, 'utf8'))) {
      const where = `${rel}:${line}: ${text.trim()}`;
      // The constructor takes only entries (the compiler says so); a literal here is a bypass.
      if (/new AppError\(\s*[\d'"`]/.test(text) || /super\(\s*\d{3}\s*,/.test(text)) found.push(where);
      if (/code:\s*['"`][A-Za-z_]+['"`]/.test(text)) found.push(where);
      for (const m of text.matchAll(/(['"`])([A-Za-z_]+)\1/g)) if (known.has(m[2]!)) found.push(where);
    }
  }
  assert.deepEqual(found, [], 'use ERRORS.<name> (or ERRORS.<name>.code) from src/kernel/errors.ts');
});

test("an AppError takes its status and code from its entry; a relayed one keeps the peer's", () => {
  const e = notFound('no device "x"');
  assert.deepEqual([e.status, e.code, e.kind], [404, 'not_found', ERRORS.notFound]);
  assert.deepEqual(e.toReply(), { code: 'not_found', message: 'no device "x"' });
  const passed = new AppError(ERRORS.edgeError, 'the edge answered: busy', { status: 503 });
  assert.deepEqual([passed.status, passed.code], [503, 'edge_error']);
  const known = AppError.relayed(409, 'confirm_required', ERRORS.edgeError, 'm');
  assert.deepEqual([known.status, known.code, known.kind], [409, 'confirm_required', ERRORS.confirmRequired]);
  const foreign = AppError.relayed(418, 'teapot', ERRORS.edgeError, 'm');
  assert.deepEqual([foreign.status, foreign.code], [418, 'teapot']);
  const none = AppError.relayed(400, undefined, ERRORS.activationFailed, 'm');
  assert.deepEqual([none.status, none.code], [400, 'activation_failed']);
});

test("Fastify's body limit answers the catalogue's one code for a body too large", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mw-errors-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const { app } = await createHttpApp({
    logger: pino({ level: 'silent' }),
    plainHttp: true,
    dataDir: dir,
    bodyLimit: 64,
  });
  app.post('/things', async () => ({ ok: true }));
  await app.ready();
  const r = await app.inject({
    method: 'POST',
    url: '/things',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ name: 'x'.repeat(100) }),
  });
  assert.equal(r.statusCode, ERRORS.payloadTooLarge.status);
  assert.equal(r.json().code, ERRORS.payloadTooLarge.code);
  await app.close();
});
