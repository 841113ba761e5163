/** Wire shapes of the asset hierarchy routes (`/api/v1/assets/hierarchy/{companyName}/...`). */
import { Type, type Static } from '@sinclair/typebox';

const Strict = { additionalProperties: false } as const;
const Label = Type.String({ minLength: 1, maxLength: 200 });
const Text = Type.String({ maxLength: 2000 });

export const CompanyParams = Type.Object({ companyName: Type.String({ minLength: 1, maxLength: 200 }) });
export type CompanyParams = Static<typeof CompanyParams>;
export const TemplateParams = Type.Object({
  companyName: Type.String({ minLength: 1, maxLength: 200 }),
  templateId: Type.String({ minLength: 1, maxLength: 100 }),
});
export type TemplateParams = Static<typeof TemplateParams>;
export const LevelParams = Type.Object({
  companyName: Type.String({ minLength: 1, maxLength: 200 }),
  templateId: Type.String({ minLength: 1, maxLength: 100 }),
  levelId: Type.String({ minLength: 1, maxLength: 100 }),
});
export type LevelParams = Static<typeof LevelParams>;
export const NodeParams = Type.Object({
  companyName: Type.String({ minLength: 1, maxLength: 200 }),
  id: Type.String({ minLength: 1, maxLength: 100 }),
});
export type NodeParams = Static<typeof NodeParams>;
export const OperatorParams = Type.Object({
  companyName: Type.String({ minLength: 1, maxLength: 200 }),
  id: Type.String({ minLength: 1, maxLength: 100 }),
  username: Type.String({ minLength: 1, maxLength: 100 }),
});
export type OperatorParams = Static<typeof OperatorParams>;
export const GrantParams = Type.Object({ grantId: Type.String({ minLength: 1, maxLength: 100 }) });
export type GrantParams = Static<typeof GrantParams>;

export const LevelBody = Type.Object(
  {
    name: Label,
    description: Type.Optional(Text),
    position: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  Strict,
);
export type LevelBody = Static<typeof LevelBody>;
export const UpdateLevelBody = Type.Object(
  { name: Type.Optional(Label), description: Type.Optional(Text) },
  Strict,
);
export type UpdateLevelBody = Static<typeof UpdateLevelBody>;
export const MoveLevelBody = Type.Object({ position: Type.Integer({ minimum: 0 }) }, Strict);
export type MoveLevelBody = Static<typeof MoveLevelBody>;
const LevelItem = Type.Object(
  { id: Type.Optional(Type.String({ maxLength: 100 })), name: Label, description: Type.Optional(Text) },
  Strict,
);
export const BulkLevelsBody = Type.Object({ levels: Type.Array(LevelItem, { maxItems: 64 }) }, Strict);
export type BulkLevelsBody = Static<typeof BulkLevelsBody>;

export const CreateTemplateBody = Type.Object(
  {
    name: Label,
    description: Type.Optional(Text),
    levels: Type.Optional(Type.Array(LevelItem, { maxItems: 64 })),
  },
  Strict,
);
export type CreateTemplateBody = Static<typeof CreateTemplateBody>;
export const UpdateTemplateBody = Type.Object(
  { name: Type.Optional(Label), description: Type.Optional(Text) },
  Strict,
);
export type UpdateTemplateBody = Static<typeof UpdateTemplateBody>;

const Attributes = Type.Record(Type.String({ maxLength: 200 }), Type.String({ maxLength: 2000 }));
const NodeFields = {
  name: Label,
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  level: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  description: Type.Optional(Text),
  deviceId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
  attributes: Type.Optional(Attributes),
};
export const CreateNodeBody = Type.Object(
  {
    ...NodeFields,
    parentId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()])),
  },
  Strict,
);
export type CreateNodeBody = Static<typeof CreateNodeBody>;
export const UpdateNodeBody = Type.Object({ ...NodeFields, name: Type.Optional(Label) }, Strict);
export type UpdateNodeBody = Static<typeof UpdateNodeBody>;
export const MoveNodeBody = Type.Object(
  { parentId: Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()]) },
  Strict,
);
export type MoveNodeBody = Static<typeof MoveNodeBody>;
export const NodeQuery = Type.Object({ depth: Type.Optional(Type.Integer({ minimum: 0, maximum: 64 })) });
export type NodeQuery = Static<typeof NodeQuery>;
export const DeleteNodeQuery = Type.Object({ force: Type.Optional(Type.Boolean()) });
export type DeleteNodeQuery = Static<typeof DeleteNodeQuery>;
export const ImportQuery = Type.Object({ dryRun: Type.Optional(Type.Boolean()) });
export type ImportQuery = Static<typeof ImportQuery>;

export const GrantBody = Type.Object(
  {
    username: Type.String({ minLength: 1, maxLength: 100 }),
    access: Type.Optional(Type.Union([Type.Literal('edit'), Type.Literal('read')])),
  },
  Strict,
);
export type GrantBody = Static<typeof GrantBody>;
export const BranchesQuery = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 100 })),
  companyName: Type.Optional(Type.String({ maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  offset: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type BranchesQuery = Static<typeof BranchesQuery>;
