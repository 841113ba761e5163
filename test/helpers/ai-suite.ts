/** Test support for the AI suite's upload sessions: chunks by HTTP PUT with Content-Range. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { request } from 'undici';
import { graphql, insecureAgent } from './edge.js';

export const SESSION_FIELDS = 'ID Kind Name Size SHA256 Offset State UploadPath ExpiresAt';

/** Sends bytes `start..end` (inclusive) of `file` as one chunk; answers the status and the body. */
export async function putChunk(
  url: string,
  auth: string,
  uploadPath: string,
  range: { start: number; end: number; total: number },
  body: Buffer | { file: string },
): Promise<{ status: number; body: any }> {
  const res = await request(`${url}${uploadPath}`, {
    method: 'PUT',
    headers: {
      authorization: auth,
      'content-type': 'application/octet-stream',
      'content-range': `bytes ${range.start}-${range.end}/${range.total}`,
      'content-length': String(range.end - range.start + 1),
    },
    body: Buffer.isBuffer(body) ? body : createReadStream(body.file, { start: range.start, end: range.end }),
    dispatcher: insecureAgent,
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/**
 * Starts a chunk `start..end` of `file` and sends only its first `sendBytes` bytes: answers when
 * they are written; `cut()` then destroys the connection (the client went away mid-chunk).
 */
export async function startChunk(
  url: string,
  auth: string,
  uploadPath: string,
  range: { start: number; end: number; total: number },
  file: string,
  sendBytes: number,
): Promise<{ cut(): void }> {
  const u = new URL(`${url}${uploadPath}`);
  const req = httpsRequest({
    host: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'PUT',
    rejectUnauthorized: false,
    headers: {
      authorization: auth,
      'content-type': 'application/octet-stream',
      'content-range': `bytes ${range.start}-${range.end}/${range.total}`,
      'content-length': String(range.end - range.start + 1),
    },
  });
  req.on('error', () => undefined);
  const src = createReadStream(file, { start: range.start, end: range.start + sendBytes - 1 });
  for await (const c of src) {
    if (!req.write(c)) await new Promise((r) => req.once('drain', r));
  }
  return { cut: () => req.destroy() };
}

/** Uploads `bytes` as the AI-suite file `kind`/`name` in one session (create, one chunk, close). */
export async function uploadFile(
  t: { url: string },
  auth: string,
  kind: string,
  name: string,
  bytes: Buffer,
): Promise<any> {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const created = await graphql(
    t,
    '/analytics/v3',
    auth,
    `
      mutation ($in: CreateAISuiteUploadSessionRequest!) {
        CreateAISuiteUploadSession(input: $in) {
          ID
          UploadPath
        }
      }
    `,
    { in: { Kind: kind, Name: name, Size: bytes.length, SHA256: sha256 } },
  );
  const s = created.body?.data?.CreateAISuiteUploadSession;
  if (!s) throw new Error(`create: ${created.text}`);
  if (bytes.length > 0) {
    const r = await putChunk(
      t.url,
      auth,
      s.UploadPath,
      { start: 0, end: bytes.length - 1, total: bytes.length },
      bytes,
    );
    if (r.status !== 200) throw new Error(`chunk: ${r.status} ${JSON.stringify(r.body)}`);
  }
  if (kind === 'archive') return s;
  const closed = await graphql(
    t,
    '/analytics/v3',
    auth,
    `
      mutation ($id: ID!) {
        CloseAISuiteUploadSession(input: { ID: $id }) {
          File {
            Kind
            Name
            Size
          }
        }
      }
    `,
    { id: s.ID },
  );
  if (!closed.body?.data) throw new Error(`close: ${closed.text}`);
  return closed.body.data.CloseAISuiteUploadSession.File;
}
