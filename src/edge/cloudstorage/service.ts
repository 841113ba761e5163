/**
 * Cloud storage: the edge's files (exports, snapshots, forwarded logs, any file or directory of
 * the data directory but its keys) synced to S3-compatible object storage. A target is where
 * (endpoint, region, bucket, prefix, keys: the secret sealed); a source is what (a path within
 * the data directory) to which target; each file found has a sync state (pending, uploading with
 * the bytes done, done with its ETag and SHA-256, failed with the error). A sync finds what is new
 * or changed and uploads it, one file at a time; an upload cut by a crash resumes at the next
 * start after its last confirmed part.
 */
import { lstat, readdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import type { Logger } from 'pino';
import { AppError, ERRORS, badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { SecretBox } from '../../kernel/secret-box.js';
import type { CloudstorageRepository, FileRow, SourceRow, TargetRow } from './repository.js';
import { s3Client, s3Sdk, storageMessage, Uploader, type UploadSettings } from './upload.js';

/** Top-level folders of the data directory never synced: the keys. */
export const PRIVATE_FOLDERS = ['secrets', 'tls'];
/** Targets and sources kept at most. */
export const MAX_TARGETS = 100;
export const MAX_SOURCES = 1000;

export interface TargetInput {
  name: string;
  endpoint: string;
  region?: string;
  bucket: string;
  prefix?: string;
  accessKeyId: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
}

export interface Target {
  id: string;
  name: string;
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  accessKeyId: string;
  forcePathStyle: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Source {
  id: string;
  targetId: string;
  path: string;
  createdAt: string;
}

export interface SyncFile {
  id: string;
  sourceId: string;
  targetId: string;
  path: string;
  key: string;
  size: number;
  state: string;
  bytesDone: number;
  partsTotal: number;
  partsDone: number;
  resumedFromPart: number | null;
  resumes: number;
  attempts: number;
  etag: string | null;
  sha256: string | null;
  error: string | null;
  updatedAt: string;
  doneAt: string | null;
}

export interface SyncStatus {
  state: 'idle' | 'syncing';
  lastSyncStartedAt: string | null;
  lastSyncEndedAt: string | null;
  lastError: string | null;
  files: { total: number; pending: number; uploading: number; done: number; failed: number };
  bytes: { total: number; done: number };
  current: { id: string; path: string; bytesDone: number; size: number } | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const toTarget = (r: TargetRow): Target => ({
  id: r.id,
  name: r.name,
  endpoint: r.endpoint,
  region: r.region,
  bucket: r.bucket,
  prefix: r.prefix,
  accessKeyId: r.access_key_id,
  forcePathStyle: r.force_path_style === 1,
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!,
});

export const toSyncFile = (f: FileRow): SyncFile => ({
  id: f.id,
  sourceId: f.source_id,
  targetId: f.target_id,
  path: f.path,
  key: f.object_key,
  size: f.size,
  state: f.state,
  bytesDone: f.bytes_done,
  partsTotal: f.parts_total,
  partsDone: f.parts_done,
  resumedFromPart: f.resumed_from_part,
  resumes: f.resumes,
  attempts: f.attempts,
  etag: f.etag,
  sha256: f.sha256,
  error: f.error,
  updatedAt: iso(f.updated_at)!,
  doneAt: iso(f.done_at),
});

export class CloudstorageService {
  #running: Promise<void> | null = null;
  #again = false;
  #closed = false;
  #timer: NodeJS.Timeout | null = null;
  #current: string | null = null;
  #started: number | null = null;
  #ended: number | null = null;
  #lastError: string | null = null;
  readonly #uploader: Uploader;

  constructor(
    readonly repo: CloudstorageRepository,
    private readonly box: SecretBox,
    private readonly dataDir: string,
    private readonly settings: UploadSettings & { maxFiles: number; syncIntervalSeconds: number },
    private readonly logger: Logger,
  ) {
    this.#uploader = new Uploader(repo, settings, logger, () => this.#closed);
  }

  // Targets.

  async targets(): Promise<Target[]> {
    return (await this.repo.targets()).map(toTarget);
  }

  async target(id: string): Promise<Target> {
    return toTarget(await this.targetRow(id));
  }

  async createTarget(input: TargetInput): Promise<Target> {
    checkTarget(input);
    if (!input.secretAccessKey) throw badRequest('secretAccessKey is required');
    if ((await this.repo.targets()).length >= MAX_TARGETS) throw conflict(`at most ${MAX_TARGETS} targets`);
    if (await this.repo.targetByName(input.name)) throw conflict(`a target named "${input.name}" exists`);
    const now = Date.now();
    const row: TargetRow = {
      id: uuidv7(now),
      ...targetColumns(input),
      secret_sealed: this.box.seal(input.secretAccessKey),
      created_at: now,
      updated_at: now,
    };
    await this.repo.insertTarget(row);
    return toTarget(row);
  }

  /** Replaces a target's settings; a secret key left out keeps the stored one. */
  async updateTarget(id: string, input: TargetInput): Promise<Target> {
    checkTarget(input);
    const current = await this.targetRow(id);
    const other = await this.repo.targetByName(input.name);
    if (other && other.id !== id) throw conflict(`a target named "${input.name}" exists`);
    const row: TargetRow = {
      ...current,
      ...targetColumns(input),
      secret_sealed: input.secretAccessKey ? this.box.seal(input.secretAccessKey) : current.secret_sealed,
      updated_at: Date.now(),
    };
    await this.repo.updateTarget(row);
    return toTarget(row);
  }

  async removeTarget(id: string): Promise<void> {
    if (this.#running) throw conflict('a sync is running: remove the target once it ended');
    const target = await this.targetRow(id);
    const client = await s3Client(this.credentials(target), this.settings.requestTimeoutMs);
    for (const f of (await this.repo.files()).filter((x) => x.target_id === id)) {
      await this.#uploader.abort(f, client, target);
    }
    client.destroy();
    await this.repo.removeTarget(id);
  }

  /** Whether the target's bucket answers with its credentials (HeadBucket). */
  async checkTarget(id: string): Promise<{ ok: true }> {
    const target = await this.targetRow(id);
    const client = await s3Client(this.credentials(target), this.settings.requestTimeoutMs);
    try {
      await client.send(new (await s3Sdk()).HeadBucketCommand({ Bucket: target.bucket }));
      return { ok: true };
    } catch (err) {
      throw new AppError(ERRORS.storageError, `target "${target.name}": ${storageMessage(err)}`);
    } finally {
      client.destroy();
    }
  }

  // Sources.

  async sources(): Promise<Source[]> {
    return (await this.repo.sources()).map((s) => ({
      id: s.id,
      targetId: s.target_id,
      path: s.path,
      createdAt: iso(s.created_at)!,
    }));
  }

  async createSource(input: { targetId: string; path: string }): Promise<Source> {
    await this.targetRow(input.targetId);
    const path = await this.checkPath(input.path);
    if ((await this.repo.sourceCount()) >= MAX_SOURCES) throw conflict(`at most ${MAX_SOURCES} sources`);
    if ((await this.repo.sources()).some((s) => s.target_id === input.targetId && s.path === path)) {
      throw conflict(`"${path}" is already synced to this target`);
    }
    const row: SourceRow = { id: uuidv7(), target_id: input.targetId, path, created_at: Date.now() };
    await this.repo.insertSource(row);
    return { id: row.id, targetId: row.target_id, path, createdAt: iso(row.created_at)! };
  }

  async removeSource(id: string): Promise<void> {
    if (this.#running) throw conflict('a sync is running: remove the source once it ended');
    if (!(await this.repo.removeSource(id))) throw notFound(`source "${id}" not found`);
  }

  // Files and status.

  async files(): Promise<SyncFile[]> {
    return (await this.repo.files()).map(toSyncFile);
  }

  async file(id: string): Promise<SyncFile> {
    const f = await this.repo.file(id);
    if (!f) throw notFound(`file "${id}" not found`);
    return toSyncFile(f);
  }

  async status(): Promise<SyncStatus> {
    const files = await this.repo.files();
    const count = (s: string) => files.filter((f) => f.state === s).length;
    const current = this.#current ? files.find((f) => f.id === this.#current) : undefined;
    return {
      state: this.#running ? 'syncing' : 'idle',
      lastSyncStartedAt: iso(this.#started),
      lastSyncEndedAt: iso(this.#ended),
      lastError: this.#lastError,
      files: {
        total: files.length,
        pending: count('pending'),
        uploading: count('uploading'),
        done: count('done'),
        failed: count('failed'),
      },
      bytes: {
        total: files.reduce((s, f) => s + f.size, 0),
        done: files.reduce((s, f) => s + f.bytes_done, 0),
      },
      current: current
        ? { id: current.id, path: current.path, bytesDone: current.bytes_done, size: current.size }
        : null,
    };
  }

  // Syncing.

  /** Starts a sync (or asks the running one to go again at its end); answers at once. */
  syncNow(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.run().finally(() => {
      this.#running = null;
      if (this.#again && !this.#closed) {
        this.#again = false;
        this.syncNow();
      }
    });
  }

  /** At start: resume what a stop or a crash left unfinished, and sync on the interval. */
  async start(): Promise<void> {
    if ((await this.repo.unfinished()).length > 0) this.syncNow();
    if (this.settings.syncIntervalSeconds > 0) {
      this.#timer = setInterval(() => this.syncNow(), this.settings.syncIntervalSeconds * 1000);
      this.#timer.unref();
    }
  }

  /** Resolves when no sync runs (tests, close). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.idle();
  }

  private async run(): Promise<void> {
    this.#started = Date.now();
    this.#lastError = null;
    try {
      await this.scan();
      for (const file of await this.repo.unfinished()) {
        if (this.#closed) break;
        await this.uploadOne(file);
      }
    } catch (err) {
      this.#lastError = (err as Error).message;
      this.logger.warn({ err }, 'cloud storage sync failed');
    } finally {
      this.#current = null;
      this.#ended = Date.now();
    }
  }

  private async uploadOne(file: FileRow): Promise<void> {
    const target = await this.repo.target(file.target_id);
    if (!target) return;
    this.#current = file.id;
    const client = await s3Client(this.credentials(target), this.settings.requestTimeoutMs);
    try {
      await this.#uploader.upload(file, join(this.dataDir, file.path), client, target);
    } catch (err) {
      const message = storageMessage(err);
      this.#lastError = `${file.path}: ${message}`;
      this.logger.warn({ path: file.path, err: message }, 'a cloud storage upload failed');
      if (/NoSuchUpload/.test(message)) {
        // The storage forgot the upload (expired, aborted): the next sync starts it over.
        await this.repo.resetFile(file.id, { error: message, attempts: file.attempts + 1 });
      } else if (!this.#closed) {
        await this.repo.updateFile(file.id, { state: 'failed', error: message, attempts: file.attempts + 1 });
      }
    } finally {
      client.destroy();
    }
  }

  /** Finds the sources' files: new ones pending, changed ones pending again. */
  private async scan(): Promise<void> {
    const targets = new Map((await this.repo.targets()).map((t) => [t.id, t]));
    let tracked = await this.repo.fileCount();
    for (const source of await this.repo.sources()) {
      const target = targets.get(source.target_id);
      if (!target) continue;
      for (const found of await this.walk(source.path)) {
        const existing = await this.repo.fileByPath(target.id, found.path);
        if (!existing) {
          if (tracked >= this.settings.maxFiles) {
            this.#lastError = `more than ${this.settings.maxFiles} files (--cloudstorage-max-files): the rest are not synced`;
            return;
          }
          tracked++;
          await this.repo.insertFile(newFile(source, target, found));
        } else if (existing.size !== found.size || existing.mtime_ms !== found.mtimeMs) {
          if (existing.state === 'uploading') continue; // the upload itself notices and starts over
          await this.repo.resetFile(existing.id, {
            size: found.size,
            mtime_ms: found.mtimeMs,
            sha256: null,
            attempts: 0,
          });
        }
      }
    }
  }

  /** The regular files at `path` (a file, or a directory walked without following links). */
  private async walk(path: string): Promise<{ path: string; size: number; mtimeMs: number }[]> {
    const out: { path: string; size: number; mtimeMs: number }[] = [];
    const stack = [path];
    while (stack.length > 0 && out.length <= this.settings.maxFiles) {
      const rel = stack.pop()!;
      const abs = join(this.dataDir, rel);
      let info;
      try {
        info = await lstat(abs);
      } catch {
        continue; // gone since it was chosen: nothing to sync now
      }
      if (info.isFile()) out.push({ path: rel, size: info.size, mtimeMs: Math.trunc(info.mtimeMs) });
      else if (info.isDirectory()) {
        for (const name of (await readdir(abs)).sort().reverse()) {
          const child = posix.join(rel, name);
          if (!isPrivate(child)) stack.push(child);
        }
      }
    }
    return out;
  }

  /** A source's path, made relative to the data directory and checked to stay within it. */
  private async checkPath(given: string): Promise<string> {
    if (given.includes('\0')) throw badRequest('path must not contain NUL');
    const root = await realpath(this.dataDir);
    const abs = isAbsolute(given) ? given : resolve(root, given);
    let real: string;
    try {
      real = await realpath(abs);
    } catch {
      throw badRequest(`path "${given}" does not exist in the data directory`);
    }
    const rel = relative(root, real);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw badRequest(
        `path "${given}" is not within the data directory (${root}): only the edge's own files are synced`,
      );
    }
    const posixRel = rel.split(sep).join('/');
    if (isPrivate(posixRel)) {
      throw badRequest(
        `path "${given}" holds the edge's keys (${PRIVATE_FOLDERS.join(', ')}/): never synced`,
      );
    }
    return posixRel;
  }

  private async targetRow(id: string): Promise<TargetRow> {
    const t = await this.repo.target(id);
    if (!t) throw notFound(`target "${id}" not found`);
    return t;
  }

  private credentials(target: TargetRow) {
    return { target, secretAccessKey: this.box.open(target.secret_sealed) };
  }
}

const isPrivate = (rel: string) => PRIVATE_FOLDERS.includes(rel.split('/')[0] ?? '');

function checkTarget(input: TargetInput): void {
  if (!URL.canParse(input.endpoint) || !/^https?:$/.test(new URL(input.endpoint).protocol)) {
    throw badRequest(`endpoint must be an http:// or https:// URL, got "${input.endpoint}"`);
  }
}

function targetColumns(input: TargetInput) {
  const prefix = (input.prefix ?? '').replace(/^\/+/, '');
  return {
    name: input.name,
    endpoint: input.endpoint,
    region: input.region ?? '',
    bucket: input.bucket,
    prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
    access_key_id: input.accessKeyId,
    force_path_style: input.forcePathStyle === false ? 0 : 1,
  };
}

function newFile(
  source: SourceRow,
  target: TargetRow,
  found: { path: string; size: number; mtimeMs: number },
): FileRow {
  return {
    id: uuidv7(),
    source_id: source.id,
    target_id: target.id,
    path: found.path,
    object_key: `${target.prefix}${found.path}`,
    size: found.size,
    mtime_ms: found.mtimeMs,
    sha256: null,
    state: 'pending',
    bytes_done: 0,
    parts_total: 0,
    parts_done: 0,
    upload_id: null,
    resumed_from_part: null,
    resumes: 0,
    attempts: 0,
    etag: null,
    error: null,
    updated_at: Date.now(),
    done_at: null,
  };
}
