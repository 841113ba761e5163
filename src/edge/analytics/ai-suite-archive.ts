/**
 * The AI suite as one archive (`ExportAISuite`, `ImportAISuite`): a POSIX tar (ustar) of
 * `<kind>/<name>` regular files. The reader is bounded (entries, one file, the whole archive)
 * and refuses, before anything is written, any entry that is not a plain `<kind>/<name>` file of
 * the suite: absolute paths, `..`, links, devices, other folders. Then the files are extracted
 * to temporary names and renamed into place.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { badRequest, notFound } from '../../kernel/errors.js';
import { FILE_KINDS, tooLarge, type AISuite, type FileKind } from './ai-suite.js';

/** Entries of one archive at most. */
export const MAX_ARCHIVE_ENTRIES = 10_000;
/** Exports kept on disk at once (older ones are removed). */
export const EXPORTS_KEPT = 2;

const BLOCK = 512;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

function header(name: string, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124);
  h.write(
    Math.floor(mtime / 1000)
      .toString(8)
      .padStart(11, '0') + '\0',
    136,
  );
  h.write('        ', 148);
  h.write('0', 156);
  h.write('ustar\0' + '00', 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return h;
}

export interface ExportInfo {
  id: string;
  size: number;
  sha256: string;
  files: number;
}

/** Writes the whole suite (every file of every kind) as one tar under `exports/<id>.tar`. */
export async function exportSuite(suite: AISuite): Promise<ExportInfo> {
  const dir = join(suite.root, 'exports');
  const old = (await readdir(dir)).filter((f) => f.endsWith('.tar'));
  const dated = await Promise.all(old.map(async (f) => ({ f, t: (await stat(join(dir, f))).mtimeMs })));
  dated.sort((a, b) => a.t - b.t);
  for (const { f } of dated.slice(0, Math.max(0, dated.length - EXPORTS_KEPT + 1)))
    await rm(join(dir, f), { force: true });
  const id = randomUUID();
  const path = join(dir, `${id}.tar`);
  const out = createWriteStream(`${path}.tmp`);
  const hash = createHash('sha256');
  let size = 0;
  const put = async (b: Buffer) => {
    hash.update(b);
    size += b.length;
    if (!out.write(b)) await new Promise<void>((r) => out.once('drain', r));
  };
  const files = await suite.files();
  for (const f of files) {
    await put(header(`${f.kind}/${f.name}`, f.size, f.updatedAt));
    let n = 0;
    const src = f.size > 0 ? createReadStream(suite.filePath(f.kind, f.name), { end: f.size - 1 }) : [];
    for await (const c of src) {
      n += (c as Buffer).length;
      await put(c as Buffer);
    }
    if (n !== f.size) throw new Error(`${f.kind}/${f.name} changed while it was exported`);
    if (f.size % BLOCK) await put(Buffer.alloc(BLOCK - (f.size % BLOCK)));
  }
  await put(Buffer.alloc(BLOCK * 2));
  await new Promise<void>((r, j) => out.end((e?: Error | null) => (e ? j(e) : r())));
  await rename(`${path}.tmp`, path);
  return { id, size, sha256: hash.digest('hex'), files: files.length };
}

/** The path of an export made earlier, or not found. */
export async function exportPath(suite: AISuite, id: string): Promise<string> {
  const path = join(suite.root, 'exports', `${id}.tar`);
  if (!/^[0-9a-f-]{36}$/.test(id) || !(await stat(path).catch(() => undefined)))
    throw notFound(`export "${id}" not found (exports are kept until ${EXPORTS_KEPT} newer ones are made)`);
  return path;
}

interface Entry {
  kind: FileKind;
  name: string;
  size: number;
  at: number;
}

const str = (b: Buffer, from: number, len: number) => {
  const s = b.subarray(from, from + len);
  const z = s.indexOf(0);
  return (z < 0 ? s : s.subarray(0, z)).toString('utf8');
};

/** Reads every header of the archive and checks each entry; nothing is written. */
async function entriesOf(path: string, bounds: { fileBytes: number; totalBytes: number }): Promise<Entry[]> {
  const fh = await open(path, 'r');
  try {
    const total = (await fh.stat()).size;
    const entries: Entry[] = [];
    const seen = new Set<string>();
    const h = Buffer.alloc(BLOCK);
    let at = 0;
    let sum = 0;
    for (;;) {
      if (at + BLOCK > total) throw badRequest('archive: truncated (no end-of-archive blocks)');
      await fh.read(h, 0, BLOCK, at);
      if (h.every((b) => b === 0)) break;
      const raw = str(h, 0, 100);
      const prefix = str(h, 345, 155);
      const name = prefix ? `${prefix}/${raw}` : raw;
      const type = String.fromCharCode(h[156]!);
      const size = parseInt(str(h, 124, 12).trim() || '0', 8);
      if (!Number.isSafeInteger(size) || size < 0)
        throw badRequest(`archive: entry "${name}" has a bad size`);
      at += BLOCK;
      const parts = name.replace(/\/$/, '').split('/');
      if (type === '5' && parts.length === 1 && (FILE_KINDS as readonly string[]).includes(parts[0]!))
        continue;
      if (
        (type !== '0' && type !== '\0') ||
        parts.length !== 2 ||
        !(FILE_KINDS as readonly string[]).includes(parts[0]!) ||
        !NAME_RE.test(parts[1]!)
      )
        throw badRequest(
          `archive: entry "${name}" is not a file <kind>/<name> of the AI suite (kinds: ${FILE_KINDS.join(', ')}); nothing imported`,
        );
      if (seen.has(name)) throw badRequest(`archive: entry "${name}" appears twice; nothing imported`);
      seen.add(name);
      if (size > bounds.fileBytes)
        throw tooLarge(`archive: entry "${name}" has ${size} bytes, above the limit of one file`);
      sum += size;
      if (sum > bounds.totalBytes) throw tooLarge('archive: its files together are above the AI suite limit');
      if (at + size > total) throw badRequest(`archive: entry "${name}" is truncated`);
      entries.push({ kind: parts[0] as FileKind, name: parts[1]!, size, at });
      if (entries.length > MAX_ARCHIVE_ENTRIES)
        throw badRequest(`archive: more than ${MAX_ARCHIVE_ENTRIES} entries`);
      at += Math.ceil(size / BLOCK) * BLOCK;
    }
    return entries;
  } finally {
    await fh.close();
  }
}

/**
 * Imports the archive at `path` into the suite: every entry checked first, then the files
 * written (a file of the same kind and name is replaced). Answers the files imported.
 */
export async function importSuite(
  suite: AISuite,
  path: string,
): Promise<Array<{ kind: FileKind; name: string; size: number }>> {
  const entries = await entriesOf(path, suite.bounds);
  const existing = await suite.files();
  const replaced = new Map(existing.map((f) => [`${f.kind}/${f.name}`, f.size]));
  let after = (await suite.used()) - (await stat(path)).size;
  for (const e of entries) after += e.size - (replaced.get(`${e.kind}/${e.name}`) ?? 0);
  if (after > suite.bounds.totalBytes)
    throw tooLarge(
      `the AI suite would hold ${after} bytes after the import, above its limit of ${suite.bounds.totalBytes}`,
    );
  const temps: Array<{ tmp: string; to: string }> = [];
  try {
    for (const e of entries) {
      const to = suite.filePath(e.kind, e.name);
      const tmp = join(suite.root, 'files', e.kind, `.import-${randomUUID()}`);
      temps.push({ tmp, to });
      const out = createWriteStream(tmp);
      const src = e.size > 0 ? createReadStream(path, { start: e.at, end: e.at + e.size - 1 }) : undefined;
      if (src)
        for await (const c of src) if (!out.write(c)) await new Promise<void>((r) => out.once('drain', r));
      await new Promise<void>((r, j) => out.end((err?: Error | null) => (err ? j(err) : r())));
    }
    for (const t of temps) await rename(t.tmp, t.to);
  } finally {
    for (const t of temps) await rm(t.tmp, { force: true });
  }
  return entries.map((e) => ({ kind: e.kind, name: e.name, size: e.size }));
}
