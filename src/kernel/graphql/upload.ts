/**
 * GraphQL multipart requests (https://github.com/jaydenseric/graphql-multipart-request-spec) on
 * the routes of one Fastify scope: `operations` and `map` fields, then the files, parsed by
 * graphql-upload-minimal. It replaces mercurius-upload, which answered a multipart body without a
 * boundary with a 500 and then waited forever for the unread body, and answered a malformed body
 * with a 500.
 *
 * - A `Content-Type: multipart/form-data` without a boundary is a 400, before the body is read.
 * - A body that is not a well-formed multipart body (no parts, a cut part, misordered fields, bad
 *   JSON in `operations` or `map`) is a 400 that says what; too many files or a field over its
 *   size is a 413.
 * - A client that goes away during the body: the file streams end with an error (so a resolver
 *   reading one never takes a cut file for a whole one), logged at debug.
 * - The reply waits until the rest of the body has been read and thrown away, so that the client
 *   sees the answer rather than a reset, and the connection can carry the next request.
 *
 * A resolver that reads a file must check that it was not cut at the size limit:
 * `readUploadedFile` does.
 */
import { finished } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { processRequest } from 'graphql-upload-minimal';
import { AppError, ERRORS } from '../errors.js';

export interface GraphqlUploadOptions {
  /** Largest file, bytes. */
  maxFileSize: number;
  /** Most files in one request. */
  maxFiles: number;
  /** Largest `operations` or `map` field, bytes (default 1 MiB). */
  maxFieldSize?: number;
}

const kMultipart = Symbol('millwright.multipart');
const BOUNDARY = /;\s*boundary\s*=\s*(?:"[^"]+"|[^\s;]+)/i;

type MultipartRequest = FastifyRequest & { [kMultipart]?: boolean };

/** Accepts GraphQL multipart requests on the routes of `scope` (register it before mounting). */
export function acceptGraphqlUploads(scope: FastifyInstance, options: GraphqlUploadOptions): void {
  scope.addContentTypeParser('multipart/form-data', (request, _payload, done) => {
    const type = request.headers['content-type'] ?? '';
    if (!BOUNDARY.test(type)) {
      done(
        new AppError(
          ERRORS.badRequest,
          'malformed multipart request: the Content-Type has no boundary (multipart/form-data; boundary=...)',
        ),
        undefined,
      );
      return;
    }
    (request as MultipartRequest)[kMultipart] = true;
    done(null, undefined);
  });

  scope.addHook('preValidation', async (request, reply) => {
    if (!(request as MultipartRequest)[kMultipart]) return;
    try {
      request.body = await processRequest(request.raw, reply.raw, {
        maxFileSize: options.maxFileSize,
        maxFiles: options.maxFiles,
        maxFieldSize: options.maxFieldSize ?? 1024 * 1024,
      });
    } catch (err) {
      throw multipartError(request, err);
    }
  });

  scope.addHook('onSend', async (request) => {
    if (!(request as MultipartRequest)[kMultipart]) return;
    const raw = request.raw;
    if (raw.readableEnded || raw.destroyed) return;
    // The parser may still be attached (a file nobody read): read the rest and throw it away.
    raw.unpipe();
    raw.resume();
    await finished(raw).catch(() => undefined);
  });
}

/** The error of graphql-upload-minimal or busboy as what the client did wrong. */
function multipartError(request: FastifyRequest, err: unknown): AppError {
  const status = (err as { status?: unknown }).status;
  const message = err instanceof Error ? err.message : String(err);
  if (status === 499) {
    request.log.debug({ err }, 'multipart request aborted by the client');
    return new AppError(ERRORS.requestAborted, 'the request was cut off before its multipart body ended');
  }
  if (status === 413) return new AppError(ERRORS.payloadTooLarge, message);
  if (status === 500) {
    // graphql-upload-minimal's "couldn't find any files or JSON": a body without any part.
    return new AppError(
      ERRORS.badRequest,
      "malformed multipart request: the body has no parts; expected the fields 'operations' and 'map', then the files",
    );
  }
  return new AppError(ERRORS.badRequest, `malformed multipart request: ${message}`);
}

/**
 * The whole content of an uploaded file (the value of an `Upload` variable), refused whole when it
 * is larger than `maxBytes` or when the upload was cut off: a cut stream never becomes data.
 */
export async function readUploadedFile(file: unknown, maxBytes: number, what = 'the file'): Promise<Buffer> {
  const upload = (await file) as { createReadStream: () => NodeJS.ReadableStream };
  let stream: NodeJS.ReadableStream & { truncated?: boolean };
  try {
    stream = upload.createReadStream();
  } catch (err) {
    throw uploadStreamError(err, maxBytes, what);
  }
  // busboy stops a file at the size limit with `limit` and then ends it, as if it were whole.
  let limited = false;
  stream.once('limit', () => (limited = true));
  const chunks: Buffer[] = [];
  let size = 0;
  const tooLarge = () =>
    new AppError(
      ERRORS.payloadTooLarge,
      `${what} is larger than the limit of ${maxBytes} bytes; nothing was stored`,
    );
  try {
    for await (const chunk of stream) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
      size += b.length;
      if (size > maxBytes || limited || stream.truncated) throw tooLarge();
      chunks.push(b);
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw uploadStreamError(err, maxBytes, what);
  }
  if (limited || stream.truncated) throw tooLarge();
  return Buffer.concat(chunks, size);
}

function uploadStreamError(err: unknown, maxBytes: number, what: string): AppError {
  const status = (err as { status?: unknown }).status;
  if (status === 413) {
    return new AppError(
      ERRORS.payloadTooLarge,
      `${what} is larger than the limit of ${maxBytes} bytes; nothing was stored`,
    );
  }
  return new AppError(
    ERRORS.uploadIncomplete,
    `${what} did not arrive whole (${err instanceof Error ? err.message : String(err)}); nothing was stored`,
  );
}
