/** The wire shapes of `/cloudstorage`: bodies (strict) and answers. */
import { Type, type Static } from '@sinclair/typebox';

const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export type IdParamsT = Static<typeof IdParams>;

export const TargetBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    endpoint: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'https://s3.eu-central-1.amazonaws.com, http://minio:9000...',
    }),
    region: Type.Optional(Type.String({ maxLength: 64 })),
    bucket: Type.String({ minLength: 3, maxLength: 63 }),
    prefix: Type.Optional(Type.String({ maxLength: 512, description: 'key prefix of every object' })),
    accessKeyId: Type.String({ minLength: 1, maxLength: 256 }),
    secretAccessKey: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1024, description: 'stored sealed, never answered' }),
    ),
    forcePathStyle: Type.Optional(Type.Boolean({ description: 'path-style addressing (default true)' })),
  },
  { additionalProperties: false },
);
export type TargetBodyT = Static<typeof TargetBody>;

export const TargetSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  endpoint: Type.String(),
  region: Type.String(),
  bucket: Type.String(),
  prefix: Type.String(),
  accessKeyId: Type.String(),
  forcePathStyle: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const SourceBody = Type.Object(
  {
    targetId: Type.String({ minLength: 1, maxLength: 64 }),
    path: Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'a file or directory within the data directory',
    }),
  },
  { additionalProperties: false },
);
export type SourceBodyT = Static<typeof SourceBody>;

export const SourceSchema = Type.Object({
  id: Type.String(),
  targetId: Type.String(),
  path: Type.String(),
  createdAt: Type.String(),
});

export const FileSchema = Type.Object({
  id: Type.String(),
  sourceId: Type.String(),
  targetId: Type.String(),
  path: Type.String(),
  key: Type.String(),
  size: Type.Number(),
  state: Type.String(),
  bytesDone: Type.Number(),
  partsTotal: Type.Integer(),
  partsDone: Type.Integer(),
  resumedFromPart: NullableInt,
  resumes: Type.Integer(),
  attempts: Type.Integer(),
  etag: NullableString,
  sha256: NullableString,
  error: NullableString,
  updatedAt: Type.String(),
  doneAt: NullableString,
});

export const StatusSchema = Type.Object({
  state: Type.String(),
  lastSyncStartedAt: NullableString,
  lastSyncEndedAt: NullableString,
  lastError: NullableString,
  files: Type.Object({
    total: Type.Integer(),
    pending: Type.Integer(),
    uploading: Type.Integer(),
    done: Type.Integer(),
    failed: Type.Integer(),
  }),
  bytes: Type.Object({ total: Type.Number(), done: Type.Number() }),
  current: Type.Union([
    Type.Object({ id: Type.String(), path: Type.String(), bytesDone: Type.Number(), size: Type.Number() }),
    Type.Null(),
  ]),
});
