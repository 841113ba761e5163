/** Wire shapes of the CA certificates (`/admin/v1/ca-certificates`, `/api/v1/ca-certificates`). */
import { Type, type Static } from '@sinclair/typebox';
import { PEM_MAX_BYTES } from '../../kernel/pem.js';

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export type IdParams = Static<typeof IdParams>;
export const ProjectParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 100 }) });
export type ProjectParams = Static<typeof ProjectParams>;

/** JSON body of upload and preview; a raw PEM body (`application/x-pem-file`, `text/plain`) also works. */
export const PemBody = Type.Object(
  {
    pem: Type.String({
      minLength: 1,
      maxLength: PEM_MAX_BYTES,
      description: 'one PEM certificate or a chain',
    }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type PemBody = Static<typeof PemBody>;

export const SyncBody = Type.Object(
  { deadlineSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })) },
  { additionalProperties: false },
);
export type SyncBody = Static<typeof SyncBody>;

const Info = {
  subject: Type.String(),
  issuer: Type.String(),
  validFrom: Type.String(),
  validTo: Type.String(),
  fingerprint: Type.String({ description: 'SHA-256, hex pairs separated by colons' }),
  serialNumber: Type.String(),
  ca: Type.Boolean(),
  expired: Type.Boolean(),
};

export const CertificateSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  ...Info,
  createdAt: Type.String(),
  createdBy: Type.String(),
});

export const CertificateList = Type.Object({ items: Type.Array(CertificateSchema), total: Type.Integer() });
export const UploadReply = Type.Object({
  items: Type.Array(CertificateSchema),
  total: Type.Integer(),
  alreadyStored: Type.Array(Type.String(), { description: 'fingerprints of certificates stored before' }),
});
export const PreviewReply = Type.Object({
  items: Type.Array(Type.Object({ ...Info, selfSigned: Type.Boolean() })),
  total: Type.Integer(),
});
