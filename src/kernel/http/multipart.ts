/**
 * The parts of a `multipart/form-data` body already read into memory (a route's body limit bounds
 * it), for routes that take one file either as the raw body or as a form's file field
 * (`curl -F file=@x.zip`). Streaming uploads of GraphQL are `graphql/upload.ts`.
 */
import { badRequest } from '../errors.js';

export interface MultipartPart {
  /** The form field's name (`Content-Disposition: form-data; name="..."`). */
  name: string;
  /** The file name, when the part is a file. */
  filename?: string;
  contentType?: string;
  data: Buffer;
}

/** Most parts read from one body. */
export const MAX_MULTIPART_PARTS = 100;

const BOUNDARY = /;\s*boundary\s*=\s*(?:"([^"]+)"|([^\s;]+))/i;

/** True for a `multipart/form-data` content type. */
export function isMultipartForm(contentType: string | undefined): boolean {
  return /^\s*multipart\/form-data\b/i.test(contentType ?? '');
}

/** Splits a buffered `multipart/form-data` body into its parts; a malformed body is a 400 saying what. */
export function parseMultipart(body: Buffer, contentType: string): MultipartPart[] {
  const m = BOUNDARY.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) {
    throw badRequest(
      'malformed multipart body: the Content-Type has no boundary (multipart/form-data; boundary=...)',
    );
  }
  const delimiter = Buffer.from(`--${boundary}`);
  const next = Buffer.from(`\r\n--${boundary}`);
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw badRequest('malformed multipart body: no part starts with the boundary');
  pos += delimiter.length;
  const parts: MultipartPart[] = [];
  for (;;) {
    if (body.subarray(pos, pos + 2).toString('latin1') === '--') return parts;
    if (parts.length >= MAX_MULTIPART_PARTS) {
      throw badRequest(`malformed multipart body: more than ${MAX_MULTIPART_PARTS} parts`);
    }
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw badRequest('malformed multipart body: a part has no end of headers');
    const headers = body.subarray(pos, headerEnd).toString('utf8');
    const end = body.indexOf(next, headerEnd + 4);
    if (end < 0) throw badRequest('malformed multipart body: a part is cut (no closing boundary)');
    parts.push({ ...partHeaders(headers), data: body.subarray(headerEnd + 4, end) });
    pos = end + next.length;
  }
}

function partHeaders(text: string): Omit<MultipartPart, 'data'> {
  let name: string | undefined;
  let filename: string | undefined;
  let contentType: string | undefined;
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'content-type') contentType = value;
    if (key !== 'content-disposition') continue;
    name = /(?:^|;)\s*name\s*=\s*(?:"([^"]*)"|([^\s;]+))/i
      .exec(value)
      ?.slice(1)
      .find((v) => v !== undefined);
    filename = /(?:^|;)\s*filename\s*=\s*(?:"([^"]*)"|([^\s;]+))/i
      .exec(value)
      ?.slice(1)
      .find((v) => v !== undefined);
  }
  if (name === undefined)
    throw badRequest('malformed multipart body: a part has no Content-Disposition name');
  return {
    name,
    ...(filename !== undefined ? { filename } : {}),
    ...(contentType !== undefined ? { contentType } : {}),
  };
}
