/** Wire shapes of the marketplace routes (`/mpcs/v1/...`). */
import { Type, type Static } from '@sinclair/typebox';
import { ITEM_KINDS } from './content.js';

const Strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 100 });
const Kind = Type.Union(ITEM_KINDS.map((k) => Type.Literal(k)));
const Version = Type.String({ minLength: 1, maxLength: 20 });
const Categories = Type.Array(Type.String({ maxLength: 50 }), { maxItems: 10 });
const Params = Type.Record(
  Type.String(),
  Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
);

export const PublishBody = Type.Object(
  {
    name: Type.String({ maxLength: 200 }),
    kind: Kind,
    description: Type.Optional(Type.String({ maxLength: 4000 })),
    categories: Type.Optional(Categories),
    version: Version,
    changelog: Type.Optional(Type.String({ maxLength: 4000 })),
    content: Type.Unknown(),
  },
  Strict,
);
export type PublishBody = Static<typeof PublishBody>;

export const VersionBody = Type.Object(
  { version: Version, changelog: Type.Optional(Type.String({ maxLength: 4000 })), content: Type.Unknown() },
  Strict,
);
export type VersionBody = Static<typeof VersionBody>;

export const UpdateItemBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 4000 })),
    categories: Type.Optional(Categories),
  },
  Strict,
);
export type UpdateItemBody = Static<typeof UpdateItemBody>;

export const InstallBody = Type.Object(
  {
    version: Type.Optional(Version),
    deviceIds: Type.Optional(Type.Array(Id, { maxItems: 20_000 })),
    projectId: Type.Optional(Id),
    mode: Type.Optional(
      Type.Union([Type.Literal('legacy'), Type.Literal('use'), Type.Literal('merge-apply')]),
    ),
    parameters: Type.Optional(Params),
    failFast: Type.Optional(Type.Boolean()),
    deadlineSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
  },
  Strict,
);
export type InstallBody = Static<typeof InstallBody>;

export const TelemetryBody = Type.Object(
  {
    events: Type.Array(
      Type.Object(
        {
          eventId: Type.String({ minLength: 1, maxLength: 100 }),
          itemId: Id,
          version: Version,
          action: Type.Union([Type.Literal('IMPORT'), Type.Literal('UPDATE'), Type.Literal('DELETE')]),
        },
        Strict,
      ),
      { minItems: 1, maxItems: 500 },
    ),
  },
  Strict,
);
export type TelemetryBody = Static<typeof TelemetryBody>;

export const ItemParams = Type.Object({ itemId: Id });
export type ItemParams = Static<typeof ItemParams>;
export const VersionParams = Type.Object({ itemId: Id, version: Version });
export type VersionParams = Static<typeof VersionParams>;

/** `q`, `kind` and `category` beside the list parameters (lenient: others are ignored). */
export const SearchQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 200 })),
    kind: Type.Optional(Kind),
    category: Type.Optional(Type.String({ maxLength: 50 })),
  },
  { additionalProperties: true },
);
export type SearchQuery = Static<typeof SearchQuery>;

export const SecretParams = Type.Object({ key: Type.String({ minLength: 1, maxLength: 100 }) });
export type SecretParams = Static<typeof SecretParams>;
export const SecretBody = Type.Object({ value: Type.String({ maxLength: 65_536 }) }, Strict);
export type SecretBody = Static<typeof SecretBody>;
