/**
 * The AI suite on disk: its files (models, prompts, tool and provider configurations) under
 * `<dataDir>/ai-suite/files/<kind>/<name>`, and the upload sessions that bring them in
 * (`uploads/<id>.json` describes a session, `uploads/<id>.part` holds the bytes received so far).
 *
 * A session's offset is the size of its partial file, so it survives a broken connection and a
 * restart of the edge (even a kill -9: the bytes written are in the file). Closing verifies the
 * size and the SHA-256 declared at creation; a mismatch removes the partial file. Bounded: one
 * file, the whole suite (files plus the declared sizes of open sessions), open sessions, one
 * chunk; a session idle for too long expires and its partial file is removed (docs/security.md).
 * No GraphQL and no HTTP here.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { AppError, ERRORS, badRequest, conflict, notFound } from '../../kernel/errors.js';

export const FILE_KINDS = ['model', 'prompt', 'tool', 'provider'] as const;
export type FileKind = (typeof FILE_KINDS)[number];
/** What a session uploads: a file of the suite, or an archive for `ImportAISuite`. */
export type UploadKind = FileKind | 'archive';

export interface AISuiteBounds {
  fileBytes: number;
  totalBytes: number;
  sessions: number;
  idleMs: number;
  chunkBytes: number;
}

export interface UploadSession {
  id: string;
  kind: UploadKind;
  name: string;
  size: number;
  sha256: string;
  createdAt: number;
  updatedAt: number;
}

export type SessionState = 'Open' | 'Complete' | 'Closed';

export interface SessionView extends UploadSession {
  offset: number;
  state: SessionState;
  expiresAt: number;
}

export interface SuiteFile {
  kind: FileKind;
  name: string;
  size: number;
  updatedAt: number;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const SHA_RE = /^[0-9a-f]{64}$/;
const ID_RE = /^[0-9a-f-]{36}$/;
/** Closed sessions remembered for `Get...UploadSession`. */
const CLOSED_KEPT = 64;

export const tooLarge = (message: string) => new AppError(ERRORS.payloadTooLarge, message);

export function checkKind(kind: unknown, allowArchive = false): UploadKind {
  if (
    typeof kind === 'string' &&
    ((FILE_KINDS as readonly string[]).includes(kind) || (allowArchive && kind === 'archive'))
  )
    return kind as UploadKind;
  throw badRequest(`Kind must be one of ${FILE_KINDS.join(', ')}${allowArchive ? ', archive' : ''}`);
}

export function checkFileName(name: unknown): string {
  if (typeof name !== 'string' || !NAME_RE.test(name))
    throw badRequest(
      `Name "${String(name)}" must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  return name;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const sizeOf = async (path: string): Promise<number> => (await stat(path).catch(() => undefined))?.size ?? 0;

export class AISuite {
  readonly root: string;
  readonly bounds: AISuiteBounds;
  readonly #sessions = new Map<string, UploadSession>();
  readonly #offsets = new Map<string, number>();
  readonly #busy = new Set<string>();
  readonly #closed = new Map<string, SessionView>();
  readonly #sweep: NodeJS.Timeout;

  private constructor(root: string, bounds: AISuiteBounds) {
    this.root = root;
    this.bounds = bounds;
    this.#sweep = setInterval(() => void this.expire(), Math.min(60_000, Math.max(250, bounds.idleMs / 4)));
    this.#sweep.unref();
  }

  /** Opens the suite under `root`, taking back the sessions a previous run left open. */
  static async open(root: string, bounds: AISuiteBounds): Promise<AISuite> {
    const s = new AISuite(root, bounds);
    for (const k of FILE_KINDS) await mkdir(join(root, 'files', k), { recursive: true });
    await mkdir(s.#uploads, { recursive: true });
    await mkdir(join(root, 'exports'), { recursive: true });
    await s.#recover();
    return s;
  }

  get #uploads(): string {
    return join(this.root, 'uploads');
  }
  #meta = (id: string) => join(this.#uploads, `${id}.json`);
  partPath = (id: string) => join(this.#uploads, `${id}.part`);
  filePath = (kind: FileKind, name: string) => join(this.root, 'files', kind, name);

  async #recover(): Promise<void> {
    const now = Date.now();
    const names = await readdir(this.#uploads);
    for (const f of names) {
      const id = f.replace(/\.(json|part|tmp)$/, '');
      if (f.endsWith('.tmp') || !ID_RE.test(id)) {
        await rm(join(this.#uploads, f), { force: true });
        continue;
      }
      if (!f.endsWith('.json')) {
        if (!names.includes(`${id}.json`)) await rm(join(this.#uploads, f), { force: true });
        continue;
      }
      let s: UploadSession | undefined;
      try {
        s = JSON.parse(await readFile(join(this.#uploads, f), 'utf8')) as UploadSession;
      } catch {
        s = undefined;
      }
      if (!s || s.id !== id || s.updatedAt + this.bounds.idleMs < now) {
        await this.#discard(id);
        continue;
      }
      this.#sessions.set(id, s);
      this.#offsets.set(id, Math.min(await sizeOf(this.partPath(id)), s.size));
    }
    for (const k of FILE_KINDS)
      for (const f of await readdir(join(this.root, 'files', k)))
        if (f.startsWith('.')) await rm(join(this.root, 'files', k, f), { force: true });
  }

  async #saveMeta(s: UploadSession): Promise<void> {
    const tmp = `${this.#meta(s.id)}.tmp`;
    await writeFile(tmp, JSON.stringify(s));
    await rename(tmp, this.#meta(s.id));
  }

  async #discard(id: string): Promise<void> {
    this.#sessions.delete(id);
    this.#offsets.delete(id);
    await rm(this.partPath(id), { force: true });
    await rm(this.#meta(id), { force: true });
  }

  /** Bytes the suite holds or has promised: stored files plus the sizes of open sessions. */
  async used(): Promise<number> {
    let total = 0;
    for (const f of await this.files()) total += f.size;
    for (const s of this.#sessions.values()) total += s.size;
    return total;
  }

  async createSession(input: { kind: unknown; name: unknown; size: unknown; sha256: unknown }) {
    const kind = checkKind(input.kind, true);
    const name = checkFileName(input.name);
    const size = input.size;
    if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
      throw badRequest('Size must be a whole number of bytes');
    const sha256 = typeof input.sha256 === 'string' ? input.sha256.toLowerCase() : '';
    if (!SHA_RE.test(sha256)) throw badRequest('SHA256 must be 64 hexadecimal digits');
    if (size > this.bounds.fileBytes)
      throw tooLarge(`Size ${size} is above the limit of one file (${this.bounds.fileBytes} bytes)`);
    if (this.#sessions.size >= this.bounds.sessions)
      throw conflict(
        `${this.bounds.sessions} upload sessions are open already (the limit): close or let one expire`,
      );
    const used = await this.used();
    if (used + size > this.bounds.totalBytes)
      throw tooLarge(
        `the AI suite would hold ${used + size} bytes, above its limit of ${this.bounds.totalBytes}`,
      );
    const now = Date.now();
    const s: UploadSession = { id: randomUUID(), kind, name, size, sha256, createdAt: now, updatedAt: now };
    await writeFile(this.partPath(s.id), '');
    await this.#saveMeta(s);
    this.#sessions.set(s.id, s);
    this.#offsets.set(s.id, 0);
    return this.view(s.id);
  }

  #session(id: string, kinds?: readonly UploadKind[]): UploadSession {
    const s = typeof id === 'string' ? this.#sessions.get(id) : undefined;
    if (!s || (kinds && !kinds.includes(s.kind))) throw notFound(`upload session "${id}" not found`);
    return s;
  }

  /** A session's state: open (with its offset), complete (every byte received) or closed. */
  view(id: string, kinds?: readonly UploadKind[]): SessionView {
    const closed = this.#closed.get(id);
    if (closed && (!kinds || kinds.includes(closed.kind))) return closed;
    const s = this.#session(id, kinds);
    const offset = this.#offsets.get(id) ?? 0;
    return {
      ...s,
      offset,
      state: offset === s.size ? 'Complete' : 'Open',
      expiresAt: s.updatedAt + this.bounds.idleMs,
    };
  }

  /** Resuming: the offset to send from (read from the partial file), and the idle clock restarted. */
  async resume(id: string, kinds?: readonly UploadKind[]): Promise<SessionView> {
    const s = this.#session(id, kinds);
    if (!this.#busy.has(id)) this.#offsets.set(id, Math.min(await sizeOf(this.partPath(id)), s.size));
    s.updatedAt = Date.now();
    await this.#saveMeta(s);
    return this.view(id);
  }

  /**
   * Appends the bytes `start..end` (inclusive) of a session's file, read from `body`. `start`
   * must be the session's offset. A body cut short keeps what arrived (the next chunk resumes
   * there); a body longer than the range is refused and cut back.
   */
  async append(id: string, range: { start: number; end: number; total: number }, body: Readable) {
    const s = this.#session(id);
    const offset = this.#offsets.get(id) ?? 0;
    if (range.total !== s.size)
      throw badRequest(`Content-Range total ${range.total} is not the session's size ${s.size}`);
    if (range.start !== offset)
      throw conflict(`Content-Range starts at ${range.start}, the session's offset is ${offset}`);
    if (range.end < range.start || range.end >= s.size)
      throw badRequest(
        `Content-Range bytes ${range.start}-${range.end} are outside the file (size ${s.size})`,
      );
    const length = range.end - range.start + 1;
    if (length > this.bounds.chunkBytes)
      throw tooLarge(`a chunk of ${length} bytes is above the limit (${this.bounds.chunkBytes})`);
    if (this.#busy.has(id)) throw conflict(`upload session "${id}" is receiving another chunk`);
    this.#busy.add(id);
    let written = 0;
    try {
      written = await this.#write(id, body, length);
    } finally {
      this.#offsets.set(id, offset + written);
      this.#busy.delete(id);
      s.updatedAt = Date.now();
      await this.#saveMeta(s).catch(() => undefined);
    }
    return this.view(id);
  }

  /** Writes at most `length` bytes of `body`; a longer body keeps nothing of this chunk. */
  async #write(id: string, body: Readable, length: number): Promise<number> {
    const start = this.#offsets.get(id) ?? 0;
    const out = createWriteStream(this.partPath(id), { flags: 'a' });
    let received = 0;
    let over = false;
    try {
      for await (const chunk of body) {
        const b = chunk as Buffer;
        received += b.length;
        if (received > length) {
          over = true;
          break;
        }
        if (!out.write(b)) await new Promise<void>((r) => out.once('drain', r));
      }
    } catch {
      // The connection broke: what arrived is kept.
    } finally {
      await new Promise<void>((r) => out.end(r));
    }
    if (over) {
      await truncate(this.partPath(id), start);
      throw badRequest(`the body is longer than its Content-Range (${length} bytes): nothing of it is kept`);
    }
    return Math.min((await sizeOf(this.partPath(id))) - start, length);
  }

  /**
   * Checks a complete session against its declared size and SHA-256; a mismatch removes it
   * (nothing is kept). Answers the verified partial file's path (still the session's).
   */
  async #verify(s: UploadSession): Promise<string> {
    const path = this.partPath(s.id);
    const size = await sizeOf(path);
    if (size !== s.size)
      throw badRequest(
        `upload session "${s.id}" has ${size} of ${s.size} bytes: send the rest (from offset ${size}) before closing`,
      );
    const sum = await sha256Of(path);
    if (sum !== s.sha256) {
      await this.#discard(s.id);
      throw badRequest(
        `checksum mismatch: the bytes received have SHA-256 ${sum}, the session declared ${s.sha256}; the upload is removed`,
      );
    }
    return path;
  }

  #remember(s: UploadSession, state: SessionState): SessionView {
    const v: SessionView = { ...s, offset: s.size, state, expiresAt: Date.now() };
    this.#closed.set(s.id, v);
    if (this.#closed.size > CLOSED_KEPT) this.#closed.delete(this.#closed.keys().next().value!);
    return v;
  }

  /** Closes a session of a suite file: verified, then stored as `<kind>/<name>` (replacing one). */
  async close(id: string, kinds: readonly FileKind[]): Promise<{ session: SessionView; file: SuiteFile }> {
    const s = this.#session(id, kinds);
    return this.#holding(s, async () => {
      const path = await this.#verify(s);
      const kind = s.kind as FileKind;
      await rename(path, this.filePath(kind, s.name));
      await this.#discard(s.id);
      const file = await this.file(kind, s.name);
      return { session: this.#remember(s, 'Closed'), file };
    });
  }

  /** Runs `fn` with the session held: no chunk, close or import of it meanwhile. */
  async #holding<T>(s: UploadSession, fn: () => Promise<T>): Promise<T> {
    if (this.#busy.has(s.id))
      throw conflict(`upload session "${s.id}" is busy (a chunk, a close or an import)`);
    this.#busy.add(s.id);
    try {
      return await fn();
    } finally {
      this.#busy.delete(s.id);
    }
  }

  /**
   * Takes a complete `archive` session (verified as `close` does) for `ImportAISuite`: `use`
   * reads its file, then the session is gone whatever `use` answered.
   */
  async takeArchive<T>(id: string, use: (path: string) => Promise<T>): Promise<T> {
    const s = this.#session(id, ['archive']);
    return this.#holding(s, async () => {
      const path = await this.#verify(s);
      try {
        return await use(path);
      } finally {
        this.#remember(s, 'Closed');
        await this.#discard(id);
      }
    });
  }

  /** Removes the sessions idle for longer than the bound, with their partial files. */
  async expire(now = Date.now()): Promise<number> {
    let n = 0;
    for (const s of [...this.#sessions.values()])
      if (!this.#busy.has(s.id) && s.updatedAt + this.bounds.idleMs < now) {
        await this.#discard(s.id);
        n++;
      }
    return n;
  }

  async files(kind?: FileKind): Promise<SuiteFile[]> {
    const out: SuiteFile[] = [];
    for (const k of kind ? [kind] : FILE_KINDS) {
      const dir = join(this.root, 'files', k);
      for (const name of (await readdir(dir).catch(() => [] as string[])).sort()) {
        if (!NAME_RE.test(name)) continue;
        const st = await stat(join(dir, name)).catch(() => undefined);
        if (st?.isFile()) out.push({ kind: k, name, size: st.size, updatedAt: st.mtimeMs });
      }
    }
    return out;
  }

  async file(kind: FileKind, name: string): Promise<SuiteFile> {
    const st = await stat(this.filePath(kind, checkFileName(name))).catch(() => undefined);
    if (!st?.isFile()) throw notFound(`AI suite file ${kind}/${name} not found`);
    return { kind, name, size: st.size, updatedAt: st.mtimeMs };
  }

  /** Where a stored model is, or undefined (for the ONNX processor). */
  modelPath(name: string): string | undefined {
    if (!NAME_RE.test(name)) return undefined;
    const p = this.filePath('model', name);
    return existsSync(p) ? p : undefined;
  }

  async deleteFile(kind: FileKind, name: string): Promise<boolean> {
    await this.file(kind, name);
    await rm(this.filePath(kind, name), { force: true });
    return true;
  }

  dispose(): void {
    clearInterval(this.#sweep);
  }
}
