/** Wire shapes of the configuration routes (TypeBox). Bodies are strict: unknown fields are a 400. */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;

export const ModeSchema = Type.Union(
  [Type.Literal('legacy'), Type.Literal('use'), Type.Literal('merge-apply')],
  {
    description:
      'legacy (default): add and update; use: each section becomes exactly the template; merge-apply: merge and restart',
  },
);

const Parameters = Type.Record(
  Type.String(),
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  {
    description: 'values of the template parameters, keyed by section',
  },
);
const EncryptionKey = Type.String({ minLength: 1, maxLength: 1024 });
const Marketplace = Type.Boolean({
  description:
    'whether marketplace applications in the template are applied (this edge has no marketplace section yet)',
});

export const ApplyBody = Type.Object(
  {
    mode: Type.Optional(ModeSchema),
    failFast: Type.Optional(Type.Boolean()),
    encryptionKey: Type.Optional(EncryptionKey),
    parameters: Type.Optional(Parameters),
    marketplace: Type.Optional(Marketplace),
  },
  Strict,
);
export type ApplyBody = Static<typeof ApplyBody>;

export const PreviewBody = Type.Object(
  {
    mode: Type.Optional(ModeSchema),
    encryptionKey: Type.Optional(EncryptionKey),
    parameters: Type.Optional(Parameters),
    marketplace: Type.Optional(Marketplace),
  },
  Strict,
);
export type PreviewBody = Static<typeof PreviewBody>;

export const SessionApplyBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    encryptionKey: Type.Optional(EncryptionKey),
    failFast: Type.Optional(Type.Boolean()),
    saveOnly: Type.Optional(Type.Boolean()),
    mode: Type.Optional(ModeSchema),
    parameters: Type.Optional(Parameters),
    marketplace: Type.Optional(Marketplace),
  },
  Strict,
);
export type SessionApplyBody = Static<typeof SessionApplyBody>;

export const OpenSessionBody = Type.Object({}, Strict);

export const CreateTemplateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  Strict,
);
export type CreateTemplateBody = Static<typeof CreateTemplateBody>;

export const UpdateTemplateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  Strict,
);
export type UpdateTemplateBody = Static<typeof UpdateTemplateBody>;

export const BulkDeleteBody = Type.Object(
  { ids: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 200 }) },
  Strict,
);
export type BulkDeleteBody = Static<typeof BulkDeleteBody>;

export const DownloadBody = Type.Object(
  { encryptionKey: Type.Optional(EncryptionKey), marketplace: Type.Optional(Marketplace) },
  Strict,
);
export type DownloadBody = Static<typeof DownloadBody>;

export const MergeBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    confirm_overwrite: Type.Optional(Type.Boolean()),
    encryptionKey: Type.Optional(EncryptionKey),
    marketplace: Type.Optional(Marketplace),
  },
  Strict,
);
export type MergeBody = Static<typeof MergeBody>;

export const CaptureSnapshotBody = Type.Object(
  { reason: Type.Optional(Type.String({ maxLength: 200 })) },
  Strict,
);
export type CaptureSnapshotBody = Static<typeof CaptureSnapshotBody>;

export const PruneSnapshotsBody = Type.Object(
  { ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 200 })) },
  Strict,
);
export type PruneSnapshotsBody = Static<typeof PruneSnapshotsBody>;

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
export type IdParams = Static<typeof IdParams>;

export const SessionChunkQuery = Type.Object({ offset: Type.Optional(Type.String()) });

export const TemplateSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  sections: Type.Array(Type.String()),
  encrypted: Type.Boolean(),
  size: Type.Integer(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const SnapshotSchema = Type.Object({
  id: Type.String(),
  reason: Type.String(),
  sections: Type.Array(Type.String()),
  size: Type.Integer(),
  createdAt: Type.String(),
});
