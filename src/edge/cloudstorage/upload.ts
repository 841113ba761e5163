/**
 * One file to S3-compatible object storage. A file smaller than a part goes in one PUT; a larger
 * one in a multipart upload whose upload id and confirmed parts are kept in the module's tables
 * as they happen, so that after a crash (even `kill -9`) the upload resumes after the last part
 * the storage confirmed. Every request is retried with exponential backoff. Integrity: each part's
 * ETag must be the MD5 of what was sent, the completed object's ETag the multipart ETag of those
 * parts, and the object's size and `sha256` metadata those of the file, whose SHA-256 is read
 * again after the upload (a file that changed meanwhile is uploaded again).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import type { CloudstorageRepository, FileRow, TargetRow } from './repository.js';

export interface UploadSettings {
  partSize: number;
  retries: number;
  retryDelayMs: number;
  requestTimeoutMs: number;
  /** 0: no limit. */
  maxBytesPerSecond: number;
}

export interface TargetCredentials {
  target: TargetRow;
  secretAccessKey: string;
}

type S3Sdk = typeof import('@aws-sdk/client-s3');
let sdk: Promise<S3Sdk> | undefined;

/** The S3 SDK, loaded by its first use: it is large, and most edges never sync to a storage. */
export function s3Sdk(): Promise<S3Sdk> {
  return (sdk ??= import('@aws-sdk/client-s3'));
}

/** A client of a target's storage: our retries, not the SDK's; no checksum headers S3 clones refuse. */
export async function s3Client(c: TargetCredentials, requestTimeoutMs: number): Promise<S3Client> {
  const { S3Client } = await s3Sdk();
  return new S3Client({
    endpoint: c.target.endpoint,
    region: c.target.region || 'us-east-1',
    forcePathStyle: c.target.force_path_style === 1,
    credentials: { accessKeyId: c.target.access_key_id, secretAccessKey: c.secretAccessKey },
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      requestTimeout: requestTimeoutMs,
      connectionTimeout: Math.min(requestTimeoutMs, 10_000),
    },
  });
}

/** The message of a storage failure, with its HTTP status when there is one. */
export function storageMessage(err: unknown): string {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  return `${e.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e.message ?? String(err)}${status ? ` (HTTP ${status})` : ''}`;
}

function retriable(err: unknown): boolean {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  if (status === undefined) return true; // the network, a timeout
  return status >= 500 || status === 408 || status === 429;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
const md5Hex = (b: Buffer) => createHash('md5').update(b).digest('hex');
const unquote = (etag: string | undefined) => (etag ?? '').replace(/"/g, '');

/** The SHA-256 and MD5 of a file, streamed in one pass. */
export async function hashFile(path: string): Promise<{ sha256: string; md5: string }> {
  const sha = createHash('sha256');
  const md5 = createHash('md5');
  for await (const chunk of createReadStream(path)) {
    sha.update(chunk as Buffer);
    md5.update(chunk as Buffer);
  }
  return { sha256: sha.digest('hex'), md5: md5.digest('hex') };
}

export class Uploader {
  #sentAt = 0;

  constructor(
    private readonly repo: CloudstorageRepository,
    private readonly settings: UploadSettings,
    private readonly logger: Logger,
    /** Whether to stop (the module closes): checked between parts. */
    private readonly stopping: () => boolean,
  ) {}

  /** `fn` with retries and exponential backoff (at most 30 s between two tries). */
  async retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= this.settings.retries || !retriable(err) || this.stopping()) throw err;
        const delay = Math.min(30_000, this.settings.retryDelayMs * 2 ** attempt);
        this.logger.warn(
          { what, attempt: attempt + 1, delay, err: storageMessage(err) },
          'retrying a storage request',
        );
        await sleep(delay);
      }
    }
  }

  /** Waits as long as the bandwidth limit asks after `bytes` were sent. */
  private async throttle(bytes: number): Promise<void> {
    const rate = this.settings.maxBytesPerSecond;
    if (rate <= 0) return;
    const now = Date.now();
    this.#sentAt = Math.max(this.#sentAt, now) + (bytes / rate) * 1000;
    if (this.#sentAt > now) await sleep(this.#sentAt - now);
  }

  /** Uploads `file` from `absPath`; answers when it is done (state `done`), or throws. */
  async upload(file: FileRow, absPath: string, client: S3Client, target: TargetRow): Promise<void> {
    const S3 = await s3Sdk(); // loaded already: the client was made with it
    const info = await stat(absPath);
    if (info.size !== file.size || Math.trunc(info.mtimeMs) !== file.mtime_ms) {
      // Changed since it was found: start over with what it is now.
      await this.abort(file, client, target);
      await this.repo.resetFile(file.id, {
        size: info.size,
        mtime_ms: Math.trunc(info.mtimeMs),
        sha256: null,
      });
      file = {
        ...file,
        size: info.size,
        mtime_ms: Math.trunc(info.mtimeMs),
        sha256: null,
        upload_id: null,
        parts_done: 0,
        bytes_done: 0,
      };
    }
    const sha256 = file.sha256 ?? (await hashFile(absPath)).sha256;
    if (!file.sha256) await this.repo.updateFile(file.id, { sha256 });
    const ps = this.settings.partSize;
    const { etag, multipartEtag } =
      file.size < ps
        ? { etag: await this.single(file, absPath, client, target, sha256), multipartEtag: null }
        : await this.multipart({ ...file, sha256 }, absPath, client, target, sha256);
    // The object as the storage has it: the file's size and SHA-256.
    const head = await this.retry('HeadObject', () =>
      client.send(new S3.HeadObjectCommand({ Bucket: target.bucket, Key: file.object_key })),
    );
    if (Number(head.ContentLength) !== file.size || head.Metadata?.sha256 !== sha256) {
      throw new Error(
        `the stored object differs from the file: ${head.ContentLength} bytes, sha256 ${head.Metadata?.sha256} for ${file.size} bytes, sha256 ${sha256}`,
      );
    }
    const now = await hashFile(absPath);
    if (now.sha256 !== sha256) {
      await this.repo.resetFile(file.id, { sha256: null, error: 'the file changed during its upload' });
      return;
    }
    // S3 answers the multipart ETag (MD5 of the parts' MD5s, "-" and their count); some clones
    // the MD5 of the whole object. Either is checked.
    if (multipartEtag && etag !== multipartEtag && etag !== now.md5) {
      throw new Error(
        `the completed object's ETag ${etag} is neither ${multipartEtag} nor the file's MD5 ${now.md5}`,
      );
    }
    await this.repo.finishFile(file.id, {
      state: 'done',
      etag,
      error: null,
      upload_id: null,
      bytes_done: file.size,
      done_at: Date.now(),
    });
  }

  private async single(file: FileRow, absPath: string, client: S3Client, target: TargetRow, sha256: string) {
    const S3 = await s3Sdk(); // loaded already: the client was made with it
    const body = await readRange(absPath, 0, file.size);
    await this.repo.updateFile(file.id, { state: 'uploading', parts_total: 1, error: null });
    await this.throttle(body.length);
    const out = await this.retry('PutObject', () =>
      client.send(
        new S3.PutObjectCommand({
          Bucket: target.bucket,
          Key: file.object_key,
          Body: body,
          Metadata: { sha256 },
        }),
      ),
    );
    const etag = unquote(out.ETag);
    if (etag !== md5Hex(body)) throw new Error(`the storage's ETag ${etag} is not the MD5 of the file`);
    await this.repo.updateFile(file.id, { parts_done: 1, bytes_done: file.size });
    return etag;
  }

  private async multipart(
    file: FileRow,
    absPath: string,
    client: S3Client,
    target: TargetRow,
    sha256: string,
  ) {
    const S3 = await s3Sdk(); // loaded already: the client was made with it
    const ps = this.settings.partSize;
    const total = Math.ceil(file.size / ps);
    let uploadId = file.upload_id;
    const parts = uploadId ? await this.repo.parts(file.id) : [];
    if (!uploadId) {
      const created = await this.retry('CreateMultipartUpload', () =>
        client.send(
          new S3.CreateMultipartUploadCommand({
            Bucket: target.bucket,
            Key: file.object_key,
            Metadata: { sha256 },
          }),
        ),
      );
      uploadId = created.UploadId ?? '';
      await this.repo.updateFile(file.id, {
        state: 'uploading',
        upload_id: uploadId,
        parts_total: total,
        parts_done: 0,
        bytes_done: 0,
        error: null,
      });
    } else {
      const next = parts.length + 1;
      this.logger.info({ path: file.path, part: next, total }, 'resuming a multipart upload');
      await this.repo.updateFile(file.id, {
        state: 'uploading',
        resumed_from_part: next,
        resumes: file.resumes + 1,
        error: null,
      });
    }
    const done = new Set(parts.map((p) => p.part_number));
    let bytes = parts.reduce((s, p) => s + p.size, 0);
    for (let n = 1; n <= total; n++) {
      if (done.has(n)) continue;
      if (this.stopping()) throw new Error('the edge is stopping');
      const body = await readRange(absPath, (n - 1) * ps, Math.min(ps, file.size - (n - 1) * ps));
      await this.throttle(body.length);
      const out = await this.retry(`UploadPart ${n}`, () =>
        client.send(
          new S3.UploadPartCommand({
            Bucket: target.bucket,
            Key: file.object_key,
            UploadId: uploadId,
            PartNumber: n,
            Body: body,
          }),
        ),
      );
      const etag = unquote(out.ETag);
      if (etag !== md5Hex(body))
        throw new Error(`part ${n}: the storage's ETag ${etag} is not the MD5 of the part`);
      bytes += body.length;
      parts.push({ file_id: file.id, part_number: n, etag, size: body.length });
      await this.repo.addPart(parts.at(-1)!, { bytes_done: bytes, parts_done: parts.length });
    }
    parts.sort((a, b) => a.part_number - b.part_number);
    const out = await this.retry('CompleteMultipartUpload', () =>
      client.send(
        new S3.CompleteMultipartUploadCommand({
          Bucket: target.bucket,
          Key: file.object_key,
          UploadId: uploadId,
          MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.part_number, ETag: `"${p.etag}"` })) },
        }),
      ),
    );
    const expected = `${createHash('md5')
      .update(Buffer.concat(parts.map((p) => Buffer.from(p.etag, 'hex'))))
      .digest('hex')}-${parts.length}`;
    return { etag: unquote(out.ETag), multipartEtag: expected };
  }

  /** Gives up a file's multipart upload on the storage (best effort). */
  async abort(file: FileRow, client: S3Client, target: TargetRow): Promise<void> {
    if (!file.upload_id) return;
    const S3 = await s3Sdk(); // loaded already: the client was made with it
    try {
      await client.send(
        new S3.AbortMultipartUploadCommand({
          Bucket: target.bucket,
          Key: file.object_key,
          UploadId: file.upload_id,
        }),
      );
    } catch (err) {
      this.logger.debug({ err: storageMessage(err) }, 'aborting a multipart upload failed');
    }
  }
}

async function readRange(path: string, offset: number, length: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    let read = 0;
    while (read < length) {
      const { bytesRead } = await fh.read(buf, read, length - read, offset + read);
      if (bytesRead === 0) throw new Error(`${path} is shorter than expected`);
      read += bytesRead;
    }
    return buf;
  } finally {
    await fh.close();
  }
}
