/**
 * HTTP translation of the CA certificates: the admin console's `/admin/v1/ca-certificates`
 * (list, download, upload, preview, delete; a global admin, by the admin app's hook) and the
 * main API's `/api/v1/ca-certificates/instance` (any caller) and `/{projectId}/sync` (admin on
 * the project), which answers the task.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { badRequest } from '../../kernel/errors.js';
import { PEM_MAX_BYTES } from '../../kernel/pem.js';
import { principalOf } from '../auth/index.js';
import * as S from './schemas.js';
import type { CaCertificateRow } from './repository.js';
import type { CertificateService } from './service.js';

type Opts = { certificates: CertificateService };

/** A PEM body sent as JSON `{ pem, name }` or as the raw text. */
function pemOf(body: unknown): S.PemBody {
  if (typeof body === 'string') return { pem: body };
  if (body && typeof body === 'object' && typeof (body as S.PemBody).pem === 'string')
    return body as S.PemBody;
  throw badRequest('send the PEM text as the body (application/x-pem-file) or as JSON { "pem": "..." }');
}

function download(reply: FastifyReply, row: CaCertificateRow) {
  const file = `${row.name.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || row.id}.pem`;
  return reply
    .header('content-type', 'application/x-pem-file')
    .header('content-disposition', `attachment; filename="${file}"`)
    .send(row.pem);
}

export async function adminCertificateRoutes(app: FastifyInstance, options: Opts) {
  const { certificates } = options;
  const base = '/admin/v1/ca-certificates';
  for (const type of ['application/x-pem-file', 'text/plain'])
    app.addContentTypeParser(type, { parseAs: 'string', bodyLimit: PEM_MAX_BYTES }, (_r, body, done) =>
      done(null, body),
    );
  app.get(base, { schema: { response: { 200: S.CertificateList } } }, () => certificates.list());
  app.get<{ Params: S.IdParams }>(
    `${base}/:id/download`,
    { schema: { params: S.IdParams } },
    async (request, reply) => download(reply, await certificates.get(request.params.id)),
  );
  app.post(
    `${base}/upload`,
    { bodyLimit: PEM_MAX_BYTES + 4096, schema: { response: { 201: S.UploadReply } } },
    async (request, reply) => {
      const { pem, name } = pemOf(request.body);
      return reply.status(201).send(await certificates.upload(principalOf(request), pem, name));
    },
  );
  app.post(
    `${base}/preview`,
    { bodyLimit: PEM_MAX_BYTES + 4096, schema: { response: { 200: S.PreviewReply } } },
    async (request) => certificates.preview(pemOf(request.body).pem),
  );
  app.delete<{ Params: S.IdParams }>(
    `${base}/:id`,
    { schema: { params: S.IdParams } },
    async (request, reply) => {
      await certificates.remove(request.params.id);
      return reply.status(204).send();
    },
  );
}

export async function certificateRoutes(app: FastifyInstance, options: Opts) {
  const { certificates } = options;
  const base = '/api/v1/ca-certificates';
  app.get(`${base}/instance`, { schema: { response: { 200: S.CertificateList } } }, () =>
    certificates.list(),
  );
  app.get<{ Params: S.IdParams }>(
    `${base}/instance/:id/download`,
    { schema: { params: S.IdParams } },
    async (request, reply) => download(reply, await certificates.get(request.params.id)),
  );
  app.post<{ Params: S.ProjectParams; Body: S.SyncBody | undefined }>(
    `${base}/:projectId/sync`,
    { schema: { params: S.ProjectParams, body: S.SyncBody } },
    async (request, reply) =>
      reply
        .status(202)
        .send(
          await certificates.sync(
            principalOf(request),
            request.params.projectId,
            request.body?.deadlineSeconds,
          ),
        ),
  );
}
