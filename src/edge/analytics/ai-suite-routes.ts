/**
 * The HTTP side of the AI suite (GraphQL carries everything else): the bytes of an upload
 * session, `PUT /analytics/v3/uploads/{id}` with `Content-Range: bytes <first>-<last>/<size>`
 * and the raw bytes as the body (`application/octet-stream`), and the download of an export,
 * `GET /analytics/v3/ai-suite/exports/{id}`. The body is streamed to the partial file as it
 * arrives: a connection cut half way keeps what came, and the session's offset says where to go on.
 */
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { badRequest } from '../../kernel/errors.js';
import type { AISuite } from './ai-suite.js';
import { exportPath } from './ai-suite-archive.js';
import { sessionOut } from './ai-suite-resolvers.js';

const RANGE_RE = /^bytes (\d+)-(\d+)\/(\d+)$/;

export function parseContentRange(header: string | undefined): { start: number; end: number; total: number } {
  const m = RANGE_RE.exec((header ?? '').trim());
  if (!m) throw badRequest('send Content-Range: bytes <first>-<last>/<size> with each chunk');
  const [start, end, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (![start, end, total].every(Number.isSafeInteger)) throw badRequest('Content-Range: numbers too large');
  return { start, end, total };
}

export async function aiSuiteRoutes(app: FastifyInstance, suite: AISuite, base: string): Promise<void> {
  await app.register(async (sub) => {
    // The body is not parsed: the handler streams it to the session's partial file.
    sub.removeAllContentTypeParsers();
    sub.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    sub.put<{ Params: { id: string } }>(
      `${base}/uploads/:id`,
      {
        schema: {
          params: {
            type: 'object',
            properties: { id: { type: 'string', maxLength: 64 } },
            required: ['id'],
          },
        },
      },
      async (request) => {
        const range = parseContentRange(request.headers['content-range']);
        const body = request.body as Readable | undefined;
        if (!body || typeof (body as Readable).pipe !== 'function')
          throw badRequest('send the bytes of the chunk as the request body');
        return sessionOut(await suite.append(request.params.id, range, body), base);
      },
    );
    sub.get<{ Params: { id: string } }>(
      `${base}/ai-suite/exports/:id`,
      {
        // The archive holds the provider files (their keys): as ExportAISuite, not for a viewer.
        config: { permission: 'write' },
        schema: {
          params: {
            type: 'object',
            properties: { id: { type: 'string', maxLength: 64 } },
            required: ['id'],
          },
        },
      },
      async (request, reply) => {
        const path = await exportPath(suite, request.params.id);
        return reply
          .header('content-type', 'application/x-tar')
          .header('content-disposition', `attachment; filename="ai-suite-${request.params.id}.tar"`)
          .send(createReadStream(path));
      },
    );
  });
}
