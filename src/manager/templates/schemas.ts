/** Wire shapes of the template routes (camelCase; contract parts 2.10 and 4.5). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 100 });
const Key = Type.String({ minLength: 1, maxLength: 1000 });
const Description = Type.String({ maxLength: 2000 });
/** Checked by the service, so that a missing one gets the contract's message. */
const FriendlyName = Type.String({ maxLength: 1000 });
const Mode = Type.Union([Type.Literal('legacy'), Type.Literal('use'), Type.Literal('merge-apply')]);
const Params = Type.Record(
  Type.String(),
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
);

export const UploadQuery = Type.Object(
  {
    friendlyName: Type.Optional(FriendlyName),
    userEncryptionKey: Type.Optional(Key),
    templateDescription: Type.Optional(Description),
    deviceId: Type.Optional(Id),
    projectId: Type.Optional(Id),
    companyName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  Strict,
);
export type UploadQuery = Static<typeof UploadQuery>;

export const CreateBody = Type.Object(
  {
    friendlyName: Type.Optional(FriendlyName),
    templateDescription: Type.Optional(Description),
    deviceId: Type.Optional(Id),
    projectId: Type.Optional(Id),
    companyId: Type.Optional(Id),
    companyName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    userEncryptionKey: Type.Optional(Key),
  },
  Strict,
);
export type CreateBody = Static<typeof CreateBody>;

export const CreateV2Body = Type.Object(
  {
    friendlyName: Type.Optional(FriendlyName),
    templateDescription: Type.Optional(Description),
    content: Type.Optional(Type.Unknown()),
    /** Instead of content: the templates this one is made of (each section from one part). */
    parts: Type.Optional(Type.Array(Id, { minItems: 2, maxItems: 20 })),
    deviceId: Type.Optional(Id),
    projectId: Type.Optional(Id),
    companyId: Type.Optional(Id),
    companyName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    userEncryptionKey: Type.Optional(Key),
  },
  Strict,
);
export type CreateV2Body = Static<typeof CreateV2Body>;

export const UpdateBody = Type.Object(
  {
    id: Type.Optional(Id),
    friendlyName: Type.Optional(FriendlyName),
    templateDescription: Type.Optional(Description),
    content: Type.Optional(Type.Unknown()),
    userEncryptionKey: Type.Optional(Key),
  },
  Strict,
);
export type UpdateBody = Static<typeof UpdateBody>;

export const IdQuery = Type.Object({ id: Id }, { additionalProperties: true });
export type IdQuery = Static<typeof IdQuery>;
export const IdParams = Type.Object({ id: Id });
export type IdParams = Static<typeof IdParams>;

const Targets = {
  templateId: Id,
  deviceIds: Type.Optional(Type.Array(Id, { maxItems: 20_000 })),
  projectId: Type.Optional(Id),
  companyId: Type.Optional(Id),
  mode: Type.Optional(Mode),
  parameters: Type.Optional(Params),
};

export const PreviewBody = Type.Object(
  {
    ...Targets,
    /** Each device's current configuration beside the template's (at most 10 devices). */
    withContent: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type PreviewBody = Static<typeof PreviewBody>;

export const ApplyTaskBody = Type.Object(
  {
    ...Targets,
    failFast: Type.Optional(Type.Boolean()),
    deadlineSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
  },
  Strict,
);
export type ApplyTaskBody = Static<typeof ApplyTaskBody>;

export const VarsQuery = Type.Object({ templateId: Id }, { additionalProperties: true });
export type VarsQuery = Static<typeof VarsQuery>;

export const VarsBody = Type.Object(
  {
    templateId: Id,
    scopes: Type.Array(
      Type.Object(
        {
          scopeType: Type.Union([
            Type.Literal('GLOBAL'),
            Type.Literal('COMPANY'),
            Type.Literal('PROJECT'),
            Type.Literal('DEVICE'),
          ]),
          scopeId: Type.Optional(Type.Union([Id, Type.Null()])),
          parameters: Params,
        },
        Strict,
      ),
      { minItems: 1, maxItems: 1000 },
    ),
  },
  Strict,
);
export type VarsBody = Static<typeof VarsBody>;
